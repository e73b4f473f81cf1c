//! Fuzz the control channel's decoders (`fxt-control`): any bytes as a
//! request, a response, a frame read whole, and a frame read in pieces.
//!
//! Promises checked: no panic, termination, bounded allocation (libFuzzer's
//! `-rss_limit_mb` and `-malloc_limit_mb` catch an allocation the input
//! does not justify), what decodes re-encodes to the same bytes, and the
//! two frame readers agree. Run with
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run control_decode` from the repository
//! root.
#![no_main]

use std::io::Read;

use fxt_control::{
    decode_request, decode_response, encode_request, encode_response, read_frame, FrameError,
    PartialFrame,
};
use libfuzzer_sys::fuzz_target;

/// A reader that hands out at most `step` bytes per read, then reports
/// `WouldBlock` once between pieces, as a non-blocking socket does.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
    blocked: bool,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.blocked && !self.data.is_empty() {
            self.blocked = false;
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        self.blocked = true;
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = decode_request(data) {
        assert_eq!(encode_request(&r), data);
    }
    if let Ok(r) = decode_response(data) {
        assert_eq!(encode_response(&r), data);
    }

    let whole = read_frame(&mut &data[..]);
    let step = 1 + data.first().map_or(0, |b| *b as usize % 7);
    let mut trickle = Trickle {
        data,
        step,
        blocked: false,
    };
    let mut partial = PartialFrame::new();
    let pieces = loop {
        match partial.read_from(&mut trickle) {
            Ok(None) => continue,
            other => break other,
        }
    };
    match (&whole, &pieces) {
        (Ok(a), Ok(Some(b))) => assert_eq!(a, b),
        (Err(FrameError::Closed), Err(FrameError::Closed)) => {}
        (Err(FrameError::TooLarge(a)), Err(FrameError::TooLarge(b))) => assert_eq!(a, b),
        (
            Err(FrameError::Truncated { expected: a, got: x }),
            Err(FrameError::Truncated { expected: b, got: y }),
        ) => assert_eq!((a, x), (b, y)),
        (a, b) => panic!("whole {a:?}, in pieces {b:?}"),
    }
    if let Ok(payload) = whole {
        let _ = decode_request(&payload);
        let _ = decode_response(&payload);
    }
});
