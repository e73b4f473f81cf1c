//! The scan's walk: every record of an input in file order on this
//! thread, an event of the usual shape as its head ([`Head::Event`]: no
//! view made, no thread looked up) and every other record as its view, so
//! that the scan reads of most events only the few words it needs. The
//! records, errors, warnings, progress bar and pages let go of are those
//! of [`Input::walk_views_in_order`], which a stream is walked with.

use fxt_format::decode::{Context, DecodeError, Head, SliceReader};

use crate::error::Error;
use crate::input::{Input, Reader};
use crate::progress::Progress;
use crate::walk::{damaged, Walk};

/// Bytes walked between updates of the progress bar (a multiple of every
/// page size: the pages behind are let go of a stretch at a time).
const STRETCH: u64 = 1 << 20;

/// Walks `input` in file order, handing `f` each record (see the module)
/// with the reader's tables at it, until `f`'s first error.
#[inline(always)]
pub fn walk_heads_in_order<F>(input: &mut Input, what: &str, mut f: F) -> Result<Walk, Error>
where
    F: FnMut(&Context<'_>, Head<'_, '_>) -> Result<(), Error>,
{
    if input.bytes().is_none() {
        return input.walk_views_in_order(what, |ctx, view| f(ctx, Head::Other(view)));
    }
    let (name, quiet, bounded) = (input.name.clone(), input.quiet, input.bounded());
    let (reader, total) = input.reader();
    let Reader::Slice(mut reader, bytes) = reader else {
        return Err(Error::msg("an input in memory not read from memory"));
    };
    let mut progress = Progress::new(what, total);
    let (mut records, mut errors) = (0u64, Vec::<DecodeError>::new());
    let mut kept_from = 0;
    loop {
        let from = reader.position();
        reader.heads_until(
            from.saturating_add(STRETCH),
            #[inline(always)]
            |item, ctx| match item {
                Ok(head) => {
                    records += 1;
                    f(ctx, head)
                }
                Err(error) => {
                    errors.push(error);
                    Ok(())
                }
            },
        )?;
        let to = reader.position();
        progress.update(to);
        if bounded {
            kept_from = let_go(bytes, kept_from, to);
        }
        // A stretch that read nothing: the input is through.
        if to == from || to >= bytes.len() as u64 {
            break;
        }
    }
    let mut walk = Walk {
        records,
        bytes: SliceReader::position(&reader),
        ..Walk::default()
    };
    for error in errors {
        damaged(&name, quiet, &mut walk, error, |m| progress.warn(m));
    }
    progress.finish();
    Ok(walk)
}

/// Lets go of the pages of the mapped file `bytes` from `from` up to the
/// last whole [`STRETCH`] before `to`; returns where the kept pages now
/// begin.
fn let_go(bytes: &[u8], from: usize, to: u64) -> usize {
    let upto = (to as usize).min(bytes.len()) & !(STRETCH as usize - 1);
    if upto <= from {
        return from;
    }
    #[cfg(unix)]
    {
        // SAFETY: `from..upto` lies within `bytes`, the whole of a
        // read-only shared map of a file (`Input::open_trace_bounded`),
        // whose start is page-aligned, as `from` and `upto` are multiples
        // of a megabyte. MADV_DONTNEED on a shared file mapping only drops
        // this process's page table entries: a later access (a string the
        // reader's tables still borrow from there) reads the same bytes
        // back from the file's page cache, so nothing borrowed changes. It
        // fails harmlessly (pages kept) rather than ever changing the
        // bytes.
        unsafe {
            libc::madvise(
                bytes.as_ptr().add(from) as *mut libc::c_void,
                upto - from,
                libc::MADV_DONTNEED,
            );
        }
    }
    upto
}
