//! Resolving string refs and thread refs: indexed refs against the current
//! provider's tables, inline refs by reading their stream or koid words.

use super::cursor::Cursor;
use super::error::DecodeError;
use super::record::{Process, Text, Thread};
use super::tables::ProviderTables;
use super::values::StrRef;

/// Bit 15 of a string ref: set for inline strings, whose low 15 bits are
/// the length.
pub(super) const INLINE_STRING: u16 = 0x8000;

/// Resolves refs of one record against the tables in force for it.
pub(crate) struct Resolver<'t> {
    pub(crate) tables: &'t ProviderTables,
}

impl Resolver<'_> {
    /// Resolves a string ref, reading its stream from `cursor` if inline.
    #[inline(always)]
    pub(crate) fn text(
        &self,
        string_ref: u16,
        cursor: &mut Cursor<'_>,
    ) -> Result<Text, DecodeError> {
        if string_ref & INLINE_STRING == 0 {
            if string_ref == 0 {
                Ok(Text::default())
            } else {
                Ok(self.tables.string(string_ref))
            }
        } else {
            inline_text(string_ref & !INLINE_STRING, cursor)
        }
    }

    /// Resolves a thread ref, reading the process and thread koid words
    /// from `cursor` if inline (ref 0).
    #[inline(always)]
    pub(crate) fn thread(
        &self,
        thread_ref: u8,
        cursor: &mut Cursor<'_>,
    ) -> Result<Thread, DecodeError> {
        if thread_ref == 0 {
            let process = cursor.word()?;
            let thread = cursor.word()?;
            Ok(Thread::Known { process, thread })
        } else {
            Ok(self.tables.thread(thread_ref))
        }
    }

    /// Resolves the process thread ref of a userspace object record, whose
    /// inline form is a single process koid word.
    pub(crate) fn process(
        &self,
        thread_ref: u8,
        cursor: &mut Cursor<'_>,
    ) -> Result<Process, DecodeError> {
        if thread_ref == 0 {
            Ok(Process::Known(cursor.word()?))
        } else {
            Ok(self.tables.process(thread_ref))
        }
    }
}

/// Reads an inline string of `len` bytes (kept out of line: the hot path
/// is indexed refs).
fn inline_text(len: u16, cursor: &mut Cursor<'_>) -> Result<Text, DecodeError> {
    Ok(Text::new(cursor.utf8(u64::from(len))?))
}

/// A string ref as the record holds it, reading its stream from `cursor`
/// if inline (the reads [`Resolver::text`] makes, without resolving).
#[inline(always)]
pub(crate) fn string_ref<'a>(
    string_ref: u16,
    cursor: &mut Cursor<'a>,
) -> Result<StrRef<'a>, DecodeError> {
    Ok(if string_ref & INLINE_STRING == 0 {
        if string_ref == 0 {
            StrRef::Empty
        } else {
            StrRef::Indexed(string_ref)
        }
    } else {
        StrRef::Inline(cursor.utf8(u64::from(string_ref & !INLINE_STRING))?)
    })
}
