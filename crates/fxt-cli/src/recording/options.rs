//! The options of a recording, as `fxt record` and `fxt trace start` both
//! take them: one struct, each value parsed and checked by the recording
//! contract's own parser ([`fxt_control::recording`], which the runtime's
//! `Config::from_env` and a provider's start use too). A value out of
//! range is refused by clap, with the contract's words and exit status 2,
//! before anything runs.

use fxt_control::{Mode, RecordingOptions};

/// What every session of a recording is given.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RecordingArgs {
    /// Categories every session records (comma-separated; default: all).
    #[arg(long, value_parser = fxt_control::parse_categories)]
    pub categories: Option<String>,
    /// Buffering mode of every session: oneshot, circular or streaming
    /// (crash-safe unless streaming).
    #[arg(long, value_parser = fxt_control::parse_mode)]
    pub mode: Option<Mode>,
    /// Buffer size of every session (bytes; suffixes K, M, G; 256K to
    /// 16G).
    #[arg(long, value_parser = fxt_control::parse_buffer)]
    pub buffer: Option<u64>,
    /// CPU samples: every recording thread's stack, this many times per
    /// second of its CPU time (`FXT_SAMPLE_HZ`; up to 10000).
    #[arg(long, value_name = "HZ", value_parser = fxt_control::parse_sample_hz)]
    pub sample: Option<u32>,
    /// Sampled allocations (a program whose global allocator is
    /// `fxt::alloc::Sampled`): one per this many bytes allocated, on
    /// average (`FXT_ALLOC_SAMPLE`; suffixes K, M, G; 0 is off, at most
    /// 1G; 512K is a good start).
    #[arg(long, value_name = "BYTES", value_parser = fxt_control::parse_alloc_sample)]
    pub alloc_sample: Option<u64>,
}

impl RecordingArgs {
    /// The settings, as the contract holds them.
    pub fn options(&self) -> RecordingOptions {
        RecordingOptions {
            buffer: self.buffer,
            mode: self.mode,
            categories: self.categories.clone(),
            sample_hz: self.sample,
            alloc_sample: self.alloc_sample,
        }
    }
}
