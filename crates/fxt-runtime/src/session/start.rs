//! [`start`]: a session is planned (sizes, output), its buffers are made
//! (in memory, or a crash-safe mapping of the output file), its helper
//! threads are spawned, and it is published to the call sites.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{register_atfork, Session, StartError};
use crate::callsite::{self, STALE};
use crate::clock::{self, Clock};
use crate::collect::direct::DirectFile;
use crate::collect::{self, stream};
use crate::config::{
    ClockSource, Config, Mode, Prefault, DEFAULT_CHUNK_SIZE, DEFAULT_FILE_LIMIT, MIN_BUFFER_SIZE,
    MIN_CHUNK_SIZE,
};
use crate::durable::Durable;
use crate::helpers::{self, Sched};
use crate::large::LargeRecords;
use crate::memory::file_map::FileMap;
use crate::memory::prefault;
use crate::memory::words::Words;
use crate::output::{self, Claim};
use crate::ring::Ring;
use crate::sample;
use crate::state::control::{Control, Filter, ACTIVE, UNFINISHED};
use crate::state::shared::{lock, Buffers, Drained, Helpers, Settings};
use crate::state::{control, forked, Shared};
use crate::thread;

/// The name of this process: `/proc/self/comm`, else the executable's file
/// name, else `"process"`.
fn process_name() -> String {
    if let Ok(s) = std::fs::read_to_string("/proc/self/comm") {
        let s = s.trim();
        if !s.is_empty() {
            return s.to_string();
        }
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "process".to_string())
}

/// The largest large region of a crash-safe file, in bytes: `start` writes
/// its stride fillers (one `pwrite` per 32 KiB), so its size bounds how
/// long a crash-safe `start` takes (`bench-table --sections lifecycle`
/// shows that time). Blobs that do not fit in it still reach the file when
/// the session finishes.
const MAX_CRASH_SAFE_LARGE: usize = 2 << 20;

/// The largest durable region of a crash-safe file, in bytes: it is
/// written before `start` returns (strings past it are written inline).
const MAX_CRASH_SAFE_DURABLE: usize = 512 << 10;

/// The largest durable region in memory, in bytes.
const MAX_DURABLE: usize = 16 << 20;

/// Starts a tracing session. Only one session can be live at a time.
pub fn start(config: Config) -> Result<Session, StartError> {
    start_recording(config, output::recording())
}

/// [`start`], recorded into a spool when `recording` is given (by `fxt
/// record`'s environment or a trace manager; see `output`).
pub(crate) fn start_recording(
    mut config: Config,
    recording: Option<output::Recording>,
) -> Result<Session, StartError> {
    if forked() {
        return Err(StartError::Unsupported(
            "this process was forked while its parent was tracing",
        ));
    }
    register_atfork();
    // Earlier sessions whose last references hooks gave up are freed.
    crate::state::retired::release_abandoned();
    let mut ctl = control();
    if ctl.current.is_some() {
        return Err(StartError::AlreadyRunning);
    }
    if let Some(r) = &recording {
        config = output::for_recording(config, r);
    }
    let spool = recording.map(|r| r.spool);
    if config.crash_safe && config.mode == Mode::Streaming {
        return Err(StartError::Unsupported(
            "crash-safe mode needs the oneshot or circular mode (streaming writes its file as it goes)",
        ));
    }
    let plan = Plan::new(&config);
    let pname = process_name();
    let claim = claim_output(&mut config, spool.as_deref(), &pname);
    let (file, drained) = open_output(&plan, &config)?;
    // A file written as the session runs (drained, crash-safe) starts with
    // an estimate of the clock's rate, corrected when it finishes.
    let clock = Clock::start(config.clock == ClockSource::Auto, false);
    let settings = Settings {
        output: config.output.clone(),
        mode: config.mode,
        crash_safe: config.crash_safe,
        large_records: config.large_records,
        recorded: spool.is_some(),
        pid: std::process::id() as u64,
        start_pid: std::process::id(),
        provider_name: config
            .provider_name
            .clone()
            .unwrap_or_else(|| pname.clone()),
        sample_hz: config.sample_hz,
        alloc_sample_bytes: config.alloc_sample_bytes,
    };
    let buffers = make_buffers(&plan, &config, &settings, &clock, drained)?;
    let shared = Arc::new(Shared {
        generation: ctl.next_generation(callsite::GEN_MASK as u32),
        clock,
        buffers,
        helpers: Helpers::new(),
        settings,
        threads: Mutex::new(Vec::new()),
        orphan_dropped: AtomicU64::new(0),
        snapshots: AtomicU64::new(0),
        finish_state: Mutex::new(None),
        claim: Mutex::new(claim),
        sampled_threads: [AtomicU64::new(0), AtomicU64::new(0)],
        abandoned: AtomicUsize::new(0),
    });
    shared
        .buffers
        .durable
        .name_process(shared.settings.pid, &pname);
    let stacks = shared.settings.records_stacks();
    if stacks && shared.settings.crash_safe {
        durable_modules(&shared);
    }
    spawn_helpers(&shared, &config, file)?;
    let shared = publish(ctl, shared, &config);
    crate::state::changed();
    if stacks {
        thread::join_current(shared.generation);
    }
    if let Some(sig) = config.snapshot_signal {
        let sched = Sched::Helper(config.helper_scheduling);
        if let Err(e) = crate::snapshot::install_trigger(sig, sched) {
            eprintln!("fxt: cannot install the snapshot signal {sig}: {e}");
        }
    }
    Ok(Session {
        shared: Some(shared),
        output: config.output,
        mode: config.mode,
    })
}

/// The sizes of a session's buffers, decided from its [`Config`] before
/// anything is created.
struct Plan {
    /// The durable region, in bytes: about 1/16 of the buffer.
    durable_bytes: usize,
    /// Chunks of the ring (the rest of the buffer), and words per chunk.
    chunks: usize,
    chunk_words: usize,
    /// Words the large records may take (a quarter of the buffer, at
    /// least [`MIN_BUFFER_SIZE`]).
    large_budget: usize,
    /// A oneshot session drained to its file as it runs.
    drain_oneshot: bool,
}

impl Plan {
    fn new(config: &Config) -> Plan {
        let buffer = config.buffer_size.max(MIN_BUFFER_SIZE);
        let durable_max = if config.crash_safe {
            MAX_CRASH_SAFE_DURABLE
        } else {
            MAX_DURABLE
        };
        let durable_bytes = (buffer / 16).clamp(64 << 10, durable_max);
        let ring_bytes = buffer - durable_bytes;
        let mut chunk = config
            .chunk_size
            .unwrap_or(DEFAULT_CHUNK_SIZE)
            .max(MIN_CHUNK_SIZE)
            / 8
            * 8;
        if config.chunk_size.is_none() && ring_bytes / chunk < 8 {
            chunk = MIN_CHUNK_SIZE;
        }
        // A oneshot session drains to its file unless told not to (or the
        // buffer is the file); streaming always does.
        let drain_oneshot = config.mode == Mode::Oneshot && config.drain && !config.crash_safe;
        if config.mode == Mode::Streaming || drain_oneshot {
            // Drained chunks are written out in whole blocks (`collect::direct`).
            chunk = chunk.next_multiple_of(collect::direct::BLOCK);
        }
        Plan {
            durable_bytes,
            chunks: (ring_bytes / chunk).max(1),
            chunk_words: chunk / 8,
            large_budget: buffer / 4 / 8,
            drain_oneshot,
        }
    }
}

/// Claims the output before anything is created there (see `output`):
/// sets `config.output` to the path claimed, `{pid}` and `{name}`
/// expanded, and says so when another process holds the one wanted.
fn claim_output(config: &mut Config, spool: Option<&Path>, pname: &str) -> Option<Claim> {
    let wanted = output::expand(&config.output, std::process::id(), pname);
    let (path, claim) = output::claim(&wanted, spool);
    if spool.is_none() && path != wanted {
        eprintln!(
            "fxt: {} is being written by another process; this one writes {}",
            wanted.display(),
            path.display()
        );
    }
    config.output = path;
    claim
}

/// The file a drained session's streamer writes, and for a drained
/// oneshot session, what it has written so far. A streaming session
/// fails without its file; a oneshot session whose file cannot be created
/// now keeps its buffer in memory instead, and writing the trace at the end
/// says why.
fn open_output(
    plan: &Plan,
    config: &Config,
) -> Result<(Option<DirectFile>, Option<Mutex<Drained>>), StartError> {
    let io_error = |e| StartError::Io(config.output.clone(), e);
    if config.mode == Mode::Streaming {
        return Ok((
            Some(DirectFile::create(&config.output).map_err(io_error)?),
            None,
        ));
    }
    if !plan.drain_oneshot {
        return Ok((None, None));
    }
    let opened =
        DirectFile::create(&config.output).and_then(|f| Ok((f, File::open(&config.output)?)));
    let Ok((file, reader)) = opened else {
        return Ok((None, None));
    };
    let drained = Drained {
        file: reader,
        bytes: 0,
        records: 0,
        emitted: 0,
        fillers: 0,
        durable_pos: 0,
        durable_records: 0,
        tps_offset: 0,
    };
    Ok((Some(file), Some(Mutex::new(drained))))
}

/// The session's buffers (crash-safe: in its output file), populated at
/// once when the config asks for it.
fn make_buffers(
    plan: &Plan,
    config: &Config,
    settings: &Settings,
    clock: &Clock,
    drained: Option<Mutex<Drained>>,
) -> Result<Buffers, StartError> {
    let buffers = if config.crash_safe {
        crash_safe_buffers(plan, settings, clock)?
    } else {
        heap_buffers(plan, config, drained)
    };
    if config.prefault == Prefault::AtStart {
        let ring = &buffers.ring;
        prefault::prepare_all(ring.words())
            .map_err(|e| StartError::Io(config.output.clone(), e))?;
        ring.populated()
            .store(ring.words().len() as u64, Ordering::Relaxed);
    }
    Ok(buffers)
}

/// Buffers in memory; the ring is drained when `drained` is given (a
/// streaming ring always is), a drained oneshot ring up to the file limit.
fn heap_buffers(plan: &Plan, config: &Config, drained: Option<Mutex<Drained>>) -> Buffers {
    let mode = config.mode;
    let ring = if drained.is_some() {
        let ring = Ring::drained(mode, plan.chunks, plan.chunk_words);
        let chunk_bytes = plan.chunk_words as u64 * 8;
        ring.with_lease_cap(file_limit(config) / chunk_bytes)
    } else {
        Ring::new(mode, plan.chunks, plan.chunk_words)
    };
    Buffers {
        ring,
        durable: Durable::new(plan.durable_bytes / 8),
        large: LargeRecords::new(plan.large_budget),
        init_tps: None,
        drained,
        passes: Mutex::new(()),
    }
}

/// A drained oneshot session's file limit: the configured one, else
/// [`DEFAULT_FILE_LIMIT`] or half the space free on the output's file
/// system now (its file exists: it was just created), whichever is smaller.
fn file_limit(config: &Config) -> u64 {
    config.file_limit.unwrap_or_else(|| {
        let free = output::free_space(&config.output).map_or(u64::MAX, |b| b / 2);
        DEFAULT_FILE_LIMIT.min(free)
    })
}

/// Buffers that are the output file: [preamble][durable region][large
/// region][chunks], the ring on a 4 KiB boundary. Only the preamble, the
/// durable region and the large region's stride fillers (one word per 32
/// KiB, over a hole) are written now; the file grows over the chunks ahead
/// of the writers (the prefaulter) or as they reach them (see
/// `memory::file_map`).
fn crash_safe_buffers(
    plan: &Plan,
    settings: &Settings,
    clock: &Clock,
) -> Result<Buffers, StartError> {
    let pre = collect::preamble(
        &settings.provider_name,
        clock.provisional_ticks_per_second(),
    );
    let large_start = pre.len() + plan.durable_bytes / 8;
    let large_words = plan.large_budget.min(MAX_CRASH_SAFE_LARGE / 8);
    let ring_start = (large_start + large_words).next_multiple_of(4096 / 8);
    let ring_words = plan.chunks * plan.chunk_words;
    let map = FileMap::create(
        &settings.output,
        &pre,
        large_start,
        ring_start,
        ring_start + ring_words,
    )
    .map_err(|e| StartError::Io(settings.output.clone(), e))?;
    let window = |start: usize, len: usize| Words::mapped(map.clone(), start, len);
    Ok(Buffers {
        ring: Ring::with_words(
            settings.mode,
            plan.chunks,
            plan.chunk_words,
            window(ring_start, ring_words),
            true,
        ),
        durable: Durable::mirrored(window(pre.len(), large_start - pre.len())),
        large: LargeRecords::mirrored(
            plan.large_budget,
            window(large_start, ring_start - large_start),
        ),
        // The initialization record's last word: its ticks per second.
        init_tps: Some(window(pre.len() - 1, 1)),
        drained: None,
        passes: Mutex::new(()),
    })
}

/// Spawns the session's helper threads: the background prefaulter (when
/// configured; without it the writers fault pages themselves) and the
/// streamer (when the ring is drained to `file`), each scheduled as
/// `config` says (the prefaulter: idle).
fn spawn_helpers(
    shared: &Arc<Shared>,
    config: &Config,
    file: Option<DirectFile>,
) -> Result<(), StartError> {
    if config.prefault == Prefault::Background {
        let s = shared.clone();
        let spawned = helpers::spawn("fxt-prefault", Sched::Idle, move || run_prefaulter(&s));
        *lock(&shared.helpers.prefaulter) = spawned.ok();
    }
    if let Some(f) = file {
        let s = shared.clone();
        let sched = Sched::Helper(config.helper_scheduling);
        let handle = helpers::spawn("fxt-stream", sched, move || stream::run(s, f))
            .map_err(|e| StartError::Io(shared.settings.output.clone(), e))?;
        *lock(&shared.helpers.streamer) = Some(handle);
    }
    Ok(())
}

/// The prefaulter's body: populates the ring ahead of the writers, then
/// corrects a crash-safe file's clock rate.
fn run_prefaulter(s: &Shared) {
    let ring = &s.buffers.ring;
    let lead = if ring.is_drained() {
        prefault::DRAINED_LEAD_WORDS
    } else {
        usize::MAX
    };
    prefault::run(
        ring.words(),
        || ring.leased_frontier(),
        lead,
        &s.helpers.prefault_stop,
        ring.populated(),
    );
    correct_init_record(s);
}

/// Makes `shared` the live session: sets the clock and the category
/// filter, and turns the call sites on. The control lock, held since
/// `start` checked that no session is live, is released at the end.
/// A sampling crash-safe session's file names the process's modules from
/// the start (see [`crate::collect::samples::modules_now`]).
fn durable_modules(shared: &Shared) {
    use fxt_format::encode::ThreadRef;
    let thread = ThreadRef::Inline {
        process: shared.settings.pid,
        thread: crate::thread::os_tid(),
    };
    let now = crate::clock::read(shared.clock.use_tsc);
    let words = crate::collect::samples::modules_now(shared.settings.pid, now, thread);
    let records = crate::collect::samples::records(&words);
    if !records.is_empty() && !shared.buffers.durable.append_records(&records) {
        eprintln!("fxt: the modules do not fit in the durable region; they are written at finish");
    }
}

fn publish(mut ctl: MutexGuard<'_, Control>, shared: Arc<Shared>, config: &Config) -> Arc<Shared> {
    clock::set_use_tsc(shared.clock.use_tsc);
    ctl.filter = match &config.categories {
        Some(list) => Filter::only(list.clone()),
        None => Filter::all(),
    };
    UNFINISHED.fetch_add(1, Ordering::Relaxed);
    if shared.settings.sample_hz > 0 {
        // Before the call sites are enabled: threads arm as they register.
        sample::start(
            shared.generation,
            shared.clock.use_tsc,
            shared.settings.crash_safe,
            shared.settings.pid,
        );
    }
    if shared.settings.alloc_sample_bytes > 0 {
        // Before the call sites are enabled, as for CPU samples.
        crate::alloc::start(
            shared.generation,
            shared.settings.alloc_sample_bytes,
            shared.settings.pid,
            shared.clock.use_tsc,
            shared.settings.crash_safe,
        );
    }
    ctl.current = Some(shared.clone());
    ACTIVE.store(true, Ordering::Relaxed);
    callsite::reset_all(&ctl, STALE);
    shared
}

/// Writes the calibrated ticks per second into a crash-safe file's
/// initialization record (one aligned 8-byte store: a reader of the file
/// sees the estimate or the calibrated value, both whole). Waits for the
/// calibration's minimum time if needed.
fn correct_init_record(shared: &Shared) {
    if let Some(w) = &shared.buffers.init_tps {
        w.slice(0..1)[0].store(shared.clock.ticks_per_second(), Ordering::Relaxed);
    }
}
