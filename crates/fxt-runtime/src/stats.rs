//! [`Stats`]: what a finished session wrote.

/// What a finished session wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Every record in the file (metadata, strings, threads, events...).
    pub records_written: u64,
    /// Records the program emitted (events, logs, blobs) that are in the file.
    pub emitted_records_written: u64,
    /// Records the program emitted that are not in the file, whatever the
    /// reason (buffer full, overwritten in circular mode, streaming writer
    /// behind, too large). `emitted_records_written + records_dropped` is
    /// the number of records emitted.
    pub records_dropped: u64,
    /// The session reached its limit and dropped what came after (counted
    /// in `records_dropped`): a oneshot session its buffer, or drained (the
    /// default) its file limit (`Config::file_limit`).
    pub limit_reached: bool,
    /// Bytes of the file.
    pub bytes_written: u64,
    /// Records of the durable region (strings, threads, names).
    pub durable_records: u64,
    /// Fillers in the file: string records for index 0, which readers
    /// ignore, padding a file written while the session ran to whole 4 KiB
    /// blocks (it is written from the buffer with `O_DIRECT`). Counted in
    /// `records_written` and `bytes_written`; 0 for a file written at the
    /// end.
    pub filler_records: u64,
    /// Bytes of the buffer's chunks that were written at least once: the
    /// memory the trace took. Drained, the chunks written out are reused,
    /// so this stays a few chunks per thread when the file keeps up.
    pub buffer_bytes_touched: u64,
    /// CPU samples taken ([`crate::Config::sample_hz`]): each is in the
    /// file as an `fxt.sample` record or counted in `records_dropped`.
    pub samples: u64,
    /// Sampled allocations and frees of sampled blocks
    /// ([`crate::Config::alloc_sample_bytes`]): each is in the file as an
    /// `fxt.alloc` record or counted in `records_dropped`.
    pub alloc_samples: u64,
    /// Of the sampled allocations, those whose free is not tracked (the
    /// table of live sampled blocks had no room): their records say so,
    /// and a reader cannot tell whether they are still live.
    pub alloc_untracked: u64,
    /// Threads that recorded.
    pub threads: u64,
    /// Ticks per second written in the initialization record.
    pub ticks_per_second: u64,
    /// Records emitted, since the previous finish in this process, for a
    /// session that had already ended (threads still running after
    /// `finish`, thread-local destructors): in no file, counted here by the
    /// next finish or snapshot. (A writer preempted for longer than
    /// `FINISH_GRACE` between its call-site check and its publication can
    /// still publish into a chunk already collected: such a record is
    /// neither in the file nor counted.)
    pub late_records_dropped: u64,
    /// fxt's own threads (since the previous finish in this process)
    /// whose scheduling could not be set as
    /// [`crate::Config::helper_scheduling`] asks (the prefaulter:
    /// `SCHED_IDLE`); each ran with what it inherited. The first is also
    /// reported on stderr.
    pub helper_sched_failures: u64,
    /// The file written: the configured output, or another path when a
    /// live process had claimed that one (see [`crate::Config::output`]);
    /// `None` for a trace written to a writer or to memory.
    pub output: Option<std::path::PathBuf>,
}
