//! Decoding the arguments that follow event, object, scheduling and large
//! blob records.
//!
//! Every argument starts with a header word holding its type (bits 0..=3),
//! its size in words (bits 4..=15) and its name (string ref, bits 16..=31),
//! so arguments of unknown types are skipped by their size, and words an
//! argument carries beyond what its type needs are ignored (the format may
//! grow).

use super::cursor::{Cursor, Region};
use super::error::DecodeError;
use super::record::{Arg, ArgValue, SkippedArg};
use super::resolve::{string_ref, Resolver};
use super::values::{ArgValueView, ArgView};
use crate::encode::header::arg_type;

/// Decodes `count` arguments (0..=15) starting at the cursor.
#[inline(always)]
pub(crate) fn decode_args(
    count: u64,
    cursor: &mut Cursor<'_>,
    resolver: &Resolver<'_>,
) -> Result<Vec<Arg>, DecodeError> {
    if count == 0 {
        // An empty Vec does not allocate: argument-less records stay cheap.
        Ok(Vec::new())
    } else {
        decode_some_args(count, cursor, resolver)
    }
}

/// [`decode_args`] for a non-zero count.
fn decode_some_args(
    count: u64,
    cursor: &mut Cursor<'_>,
    resolver: &Resolver<'_>,
) -> Result<Vec<Arg>, DecodeError> {
    // `count` comes from a 4-bit field, so this reserves at most 15 slots.
    let mut args = Vec::with_capacity(count as usize);
    for _ in 0..count {
        args.push(decode_arg(cursor, resolver)?);
    }
    Ok(args)
}

/// Frames one argument and moves the cursor past its whole size: its
/// header word and a cursor over its words after the header.
#[inline]
pub(crate) fn frame_arg<'a>(
    cursor: &mut Cursor<'a>,
) -> Result<(u64, u16, Cursor<'a>), DecodeError> {
    let offset = cursor.offset();
    let header = cursor.peek_word()?;
    let size_words = ((header >> 4) & 0xfff) as u16;
    if size_words == 0 {
        return Err(DecodeError::ZeroSizeArgument { offset });
    }
    let size_bytes = usize::from(size_words) * 8;
    let available_bytes = cursor.remaining() as u64;
    let (bytes, base) = cursor
        .take(size_bytes)
        .ok_or(DecodeError::ArgumentOverrunsRecord {
            offset,
            size_bytes: size_bytes as u64,
            available_bytes,
        })?;
    let mut arg = Cursor::new(bytes, base, Region::Argument);
    arg.word()?; // the header, peeked above
    Ok((header, size_words, arg))
}

/// Decodes one argument and moves the cursor past its whole size.
fn decode_arg(cursor: &mut Cursor<'_>, resolver: &Resolver<'_>) -> Result<Arg, DecodeError> {
    let (header, size_words, mut arg) = frame_arg(cursor)?;
    let name = resolver.text((header >> 16) as u16, &mut arg)?;
    let high = (header >> 32) as u32;
    let value = match header & 0xf {
        arg_type::NULL => ArgValue::Null,
        arg_type::I32 => ArgValue::I32(high as i32),
        arg_type::U32 => ArgValue::U32(high),
        arg_type::I64 => ArgValue::I64(arg.word()? as i64),
        arg_type::U64 => ArgValue::U64(arg.word()?),
        arg_type::F64 => ArgValue::F64(f64::from_bits(arg.word()?)),
        arg_type::STRING => ArgValue::Str(resolver.text(high as u16, &mut arg)?),
        arg_type::POINTER => ArgValue::Pointer(arg.word()?),
        arg_type::KOID => ArgValue::Koid(arg.word()?),
        arg_type::BOOL => ArgValue::Bool(high & 1 == 1),
        arg_type::BLOB => ArgValue::Blob(arg.stream(u64::from(high))?.to_vec()),
        other => ArgValue::Unknown {
            arg_type: other as u8,
            skipped: SkippedArg { header, size_words },
        },
    };
    Ok(Arg { name, value })
}

/// Reads one argument as a view ([`ArgView`]) and moves the cursor past
/// its whole size: the reads [`decode_arg`] makes, strings unresolved.
#[inline]
pub(crate) fn arg_view<'a>(cursor: &mut Cursor<'a>) -> Result<ArgView<'a>, DecodeError> {
    let (header, _, mut arg) = frame_arg(cursor)?;
    let name = string_ref((header >> 16) as u16, &mut arg)?;
    let high = (header >> 32) as u32;
    let value = match header & 0xf {
        arg_type::NULL => ArgValueView::Null,
        arg_type::I32 => ArgValueView::I32(high as i32),
        arg_type::U32 => ArgValueView::U32(high),
        arg_type::I64 => ArgValueView::I64(arg.word()? as i64),
        arg_type::U64 => ArgValueView::U64(arg.word()?),
        arg_type::F64 => ArgValueView::F64(f64::from_bits(arg.word()?)),
        arg_type::STRING => ArgValueView::Str(string_ref(high as u16, &mut arg)?),
        arg_type::POINTER => ArgValueView::Pointer(arg.word()?),
        arg_type::KOID => ArgValueView::Koid(arg.word()?),
        arg_type::BOOL => ArgValueView::Bool(high & 1 == 1),
        arg_type::BLOB => ArgValueView::Blob(arg.stream(u64::from(high))?),
        other => ArgValueView::Unknown {
            arg_type: other as u8,
            skipped: (),
        },
    };
    Ok(ArgView { name, value })
}

/// Moves the cursor past `count` arguments, checking each as
/// [`decode_args`] would (the same reads, so the same errors) without
/// building them.
#[inline]
pub(crate) fn skip_args(count: u64, cursor: &mut Cursor<'_>) -> Result<(), DecodeError> {
    for _ in 0..count {
        let (header, _, mut arg) = frame_arg(cursor)?;
        let high = (header >> 32) as u32;
        string_ref((header >> 16) as u16, &mut arg)?;
        match header & 0xf {
            t if arg_type::has_value_word(t) => {
                arg.word()?;
            }
            arg_type::STRING => {
                string_ref(high as u16, &mut arg)?;
            }
            arg_type::BLOB => {
                arg.stream(u64::from(high))?;
            }
            _ => {}
        }
    }
    Ok(())
}
