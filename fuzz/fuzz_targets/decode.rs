//! Fuzz the decoder: any bytes, through both readers.
//!
//! Promises checked: no panic, termination, and agreement between the slice
//! reader and the streaming reader on what they decode. Run with
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run decode` from the repository root.
#![no_main]

use fxt_format::decode::{decode_all_lossy, read_all_lossy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (from_slice, slice_err) = decode_all_lossy(data);
    let (from_stream, stream_err) = read_all_lossy(data);
    // Compare by Debug text: a NaN argument is not equal to itself.
    assert_eq!(format!("{from_slice:?}"), format!("{from_stream:?}"));
    assert_eq!(slice_err.map(|e| e.offset()), stream_err.map(|e| e.offset()));
});
