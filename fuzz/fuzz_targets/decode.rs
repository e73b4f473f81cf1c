//! Fuzz the decoder: any bytes, through both readers, as records and as
//! views.
//!
//! Promises checked: no panic, termination, and agreement between the slice
//! reader and the streaming reader on what they decode, between iterating
//! and walking views (`next_view`, each event view decoded whole by its
//! context), and with the head walk every reading command takes
//! (`heads_until`: an event of the usual shape as its head, made whole
//! through its view; its head read again where the walk says it was). Run
//! with `RUSTC_BOOTSTRAP=1 cargo fuzz run decode` from the repository
//! root.
#![no_main]

use fxt_format::decode::{
    decode_all_lossy, read_all_lossy, DecodeError, Head, Record, SliceReader, View,
};
use libfuzzer_sys::fuzz_target;

/// The records and first error a view walk meets, events made whole.
fn views(data: &[u8]) -> (Vec<Record>, Option<DecodeError>) {
    let mut reader = SliceReader::new(data);
    let mut out = Vec::new();
    while let Some((item, ctx)) = reader.next_view() {
        match item {
            Ok(View::Event(e)) => {
                out.push(Record::Event(ctx.event(&e).expect("a view decodes whole")))
            }
            Ok(View::Record(r)) => out.push(r),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// [`views`] by the head walk: an event of the usual shape comes as its
/// head, made whole through its view (and read again from where the walk
/// says it was, to the same bytes); any other record as its view.
fn heads(data: &[u8]) -> (Vec<Record>, Option<DecodeError>) {
    let mut reader = SliceReader::new(data);
    let mut out = Vec::new();
    let walked = reader.heads_until(u64::MAX, |item, ctx| {
        match item {
            Ok(Head::Event(head, at)) => {
                let (again, _) = at.read().expect("a head reads again");
                assert_eq!(again.bytes(), head.bytes());
                let view = head.view(ctx);
                out.push(Record::Event(ctx.event(&view).expect("a head decodes whole")));
            }
            Ok(Head::Other(View::Event(e))) => {
                out.push(Record::Event(ctx.event(e).expect("a view decodes whole")))
            }
            Ok(Head::Other(View::Record(r))) => out.push(r.clone()),
            Err(e) => return Err(e),
        }
        Ok(())
    });
    (out, walked.err())
}

fuzz_target!(|data: &[u8]| {
    let (from_slice, slice_err) = decode_all_lossy(data);
    let (from_stream, stream_err) = read_all_lossy(data);
    // Compare by Debug text: a NaN argument is not equal to itself.
    assert_eq!(format!("{from_slice:?}"), format!("{from_stream:?}"));
    assert_eq!(
        slice_err.as_ref().map(|e| e.offset()),
        stream_err.map(|e| e.offset())
    );
    let (from_views, views_err) = views(data);
    assert_eq!(format!("{from_slice:?}"), format!("{from_views:?}"));
    assert_eq!(
        slice_err.as_ref().map(|e| e.offset()),
        views_err.map(|e| e.offset())
    );
    let (from_heads, heads_err) = heads(data);
    assert_eq!(format!("{from_slice:?}"), format!("{from_heads:?}"));
    assert_eq!(slice_err.map(|e| e.offset()), heads_err.map(|e| e.offset()));
});
