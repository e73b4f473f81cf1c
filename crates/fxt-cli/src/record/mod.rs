//! `fxt record [OPTIONS] -- CMD [ARGS...]`: runs a command with tracing set
//! up for it and every descendant that links fxt, and merges their traces
//! into one archive on one time base.
//!
//! The recorder creates a private spool folder ([`spool`]) and runs the
//! command with `FXT_RECORD` naming it: every session any process of the
//! tree starts (with `fxt::start`, whatever its `Config`) writes its own
//! crash-safe trace there, named by its pid, with the recorder's buffer,
//! mode and categories (`FXT_BUFFER`, `FXT_MODE`, `FXT_CATEGORIES`).
//! SIGINT and SIGTERM sent to the recorder are forwarded to the command.
//! When the command exits, the recorder waits a little for descendants
//! still writing, then appends every trace to the archive with one
//! provider per process (named after the process, real pids and tids),
//! every timestamp mapped to `CLOCK_MONOTONIC_RAW` nanoseconds
//! ([`timebase`]), prints one summary line, removes the spool and exits
//! with the command's status. With `--sched` (Linux) it also captures the
//! kernel's scheduling of the tree from before the command starts
//! ([`sched`]) and adds it as one more provider.

#[cfg(target_os = "linux")]
mod sched;
mod spool;
mod timebase;

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::input::Input;
use crate::merge::{Archive, Retime};
use crate::Error;
use spool::Spool;
use timebase::{TimeBase, NS};

/// Arguments of `fxt record`.
#[derive(clap::Args)]
#[command(trailing_var_arg = true)]
pub struct Args {
    /// The archive to write.
    #[arg(short, long, default_value = "trace.fxt")]
    output: PathBuf,
    /// Buffer size of every traced process (bytes; suffixes K, M, G).
    #[arg(long)]
    buffer: Option<String>,
    /// Buffering mode of every traced process: oneshot, circular or
    /// streaming (crash-safe unless streaming).
    #[arg(long)]
    mode: Option<String>,
    /// Categories every traced process records (comma-separated; `*` = all).
    #[arg(long)]
    categories: Option<String>,
    /// Seconds to wait, after the command exits, for descendants still
    /// writing their traces.
    #[arg(long, default_value_t = 2.0)]
    linger: f64,
    /// Keep the spool folder (the processes' own traces) after merging.
    #[arg(long)]
    keep_spool: bool,
    /// Merge a spool folder left by an `fxt record` that did not finish,
    /// instead of running a command.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    from_spool: Option<PathBuf>,
    /// Also record the kernel's scheduling of the traced processes
    /// (context switches and wakeups, Linux; needs root, CAP_PERFMON or
    /// kernel.perf_event_paranoid <= -1).
    #[arg(long)]
    sched: bool,
    /// With --sched: keep the scheduling of every process of the system,
    /// not only the traced tree's.
    #[arg(long, requires = "sched")]
    sched_system: bool,
    /// The command and its arguments (after `--`).
    #[arg(value_name = "CMD", required_unless_present = "from_spool")]
    command: Vec<OsString>,
}

/// The signal to forward, set by the handler (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let code = unsafe { (*info).si_code };
    // A terminal's Ctrl-C (si_code > 0: sent by the kernel) already
    // reaches the whole foreground process group, the command included;
    // forward only what a process sent to the recorder alone (`kill`).
    if code <= 0 {
        PENDING.store(sig, Ordering::Relaxed);
    }
}

/// Installs the forwarding handler for SIGINT and SIGTERM (no SA_RESTART,
/// so `waitpid` returns EINTR and the loop forwards at once).
fn install_forwarding() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask"
        // value; the handler is an `extern "C"` function with the
        // SA_SIGINFO signature that only stores to an atomic
        // (async-signal-safe). The command's exec resets it to the default.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// How the command ended.
enum Ended {
    Exited(i32),
    Signaled(i32),
}

/// Waits for `pid`, forwarding signals to it.
fn wait_forwarding(pid: libc::pid_t) -> Result<Ended, Error> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            if libc::WIFEXITED(status) {
                return Ok(Ended::Exited(libc::WEXITSTATUS(status)));
            }
            if libc::WIFSIGNALED(status) {
                return Ok(Ended::Signaled(libc::WTERMSIG(status)));
            }
            continue;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(Error::msg(format!("waiting for the command: {e}")));
        }
        let sig = PENDING.swap(0, Ordering::Relaxed);
        if sig != 0 {
            // SAFETY: plain kill(2) of our own child.
            unsafe { libc::kill(pid, sig) };
        }
    }
}

/// Runs `fxt record`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let parent = match args.output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Some(dir) = &args.from_spool {
        let info =
            spool::read_info(dir).map_err(|e| Error::msg(format!("{}: {e}", dir.display())))?;
        let end = (info.boot_id == spool::boot_id())
            .then(timebase::anchor)
            .flatten();
        if !info.boot_id.is_empty() && info.boot_id != spool::boot_id() {
            eprintln!(
                "fxt record: {} was recorded before a reboot; TSC timestamps are scaled by each process's own rate, not put on one time base",
                dir.display()
            );
        }
        let base = TimeBase::new(info.start, end);
        let summary = merge(dir, &args.output, &parent, base, None)?;
        summary.print(&args.output);
        return Ok(ExitCode::SUCCESS);
    }

    let spool = Spool::create(&parent).map_err(|e| {
        Error::msg(format!(
            "cannot create a spool folder in {}: {e}",
            parent.display()
        ))
    })?;
    let start = timebase::anchor();
    let started = Instant::now();
    spool
        .write_info(start)
        .map_err(|e| Error::io(&spool.dir.display().to_string(), e))?;

    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]).env("FXT_RECORD", &spool.dir);
    for (var, value) in [
        ("FXT_BUFFER", &args.buffer),
        ("FXT_MODE", &args.mode),
        ("FXT_CATEGORIES", &args.categories),
    ] {
        if let Some(v) = value {
            cmd.env(var, v);
        }
    }
    // Scheduling is captured from before the command starts, so its first
    // forks are seen.
    let capture = if args.sched { start_sched() } else { None };
    install_forwarding();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&spool.dir);
            return Err(Error::msg(format!(
                "cannot run {}: {e}",
                args.command[0].to_string_lossy()
            )));
        }
    };
    let ended = wait_forwarding(child.id() as libc::pid_t)?;

    // Descendants may still be writing (a daemon, a child the command did
    // not wait for): give them `linger` seconds.
    let deadline = Instant::now() + Duration::from_secs_f64(args.linger.clamp(0.0, 3600.0));
    let still_writing = loop {
        let writing: Vec<u32> = spool::entries(&spool.dir)
            .unwrap_or_default()
            .iter()
            .filter(|e| spool::being_written(&e.path))
            .map(|e| e.pid)
            .collect();
        if writing.is_empty() || Instant::now() >= deadline {
            break writing;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Anchors at least 20 ms apart: the TSC rate between them is then
    // known to about 10^-5 or better.
    if let Some(rest) = Duration::from_millis(20).checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
    let base = TimeBase::new(start, timebase::anchor());
    let sched = capture.map(|c| c.finish(args.sched_system, child.id()));

    match merge(&spool.dir, &args.output, &parent, base, sched) {
        Ok(mut summary) => {
            summary.still_writing = still_writing;
            summary.print(&args.output);
            if args.keep_spool {
                eprintln!("fxt record: the spool is kept in {}", spool.dir.display());
            } else if let Err(e) = std::fs::remove_dir_all(&spool.dir) {
                eprintln!(
                    "fxt record: cannot remove the spool {}: {e}",
                    spool.dir.display()
                );
            }
        }
        Err(e) => {
            eprintln!(
                "fxt record: {e}; the processes' traces are kept in {} (merge them with `fxt record --from-spool {} -o FILE`)",
                spool.dir.display(),
                spool.dir.display()
            );
            return Ok(ExitCode::from(2));
        }
    }

    Ok(match ended {
        Ended::Exited(code) => ExitCode::from(code as u8),
        Ended::Signaled(sig) => {
            // End the way the command ended, so a caller (a shell, a test
            // harness) sees the same signal.
            // SAFETY: resetting a signal to its default and raising it on
            // ourselves; nothing is borrowed.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
            ExitCode::from(128u8.wrapping_add(sig as u8))
        }
    })
}

/// A scheduling capture while the command runs (Linux).
#[cfg(target_os = "linux")]
struct SchedCapture(sched::Capture);

#[cfg(target_os = "linux")]
impl SchedCapture {
    fn finish(self, system: bool, root: u32) -> Sched {
        let keep = if system {
            sched::Keep::System
        } else {
            sched::Keep::Tree(root)
        };
        Sched(self.0.finish(keep))
    }
}

/// The scheduling records to add to the archive.
#[cfg(target_os = "linux")]
struct Sched(sched::SchedTrace);

#[cfg(not(target_os = "linux"))]
struct SchedCapture;

#[cfg(not(target_os = "linux"))]
impl SchedCapture {
    fn finish(self, _: bool, _: u32) -> Sched {
        Sched
    }
}

#[cfg(not(target_os = "linux"))]
struct Sched;

/// Starts capturing scheduling, or says in one line why it cannot (the
/// recording goes on without it).
fn start_sched() -> Option<SchedCapture> {
    #[cfg(target_os = "linux")]
    match sched::Capture::start() {
        Ok(c) => Some(SchedCapture(c)),
        Err(sched::Unavailable(why)) => {
            eprintln!("fxt record: --sched: {why}; recording without scheduling");
            None
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!("fxt record: --sched needs Linux; recording without scheduling");
        None
    }
}

/// What a merge wrote.
struct Summary {
    processes: usize,
    records: u64,
    dropped: u64,
    /// Processes whose session did not finish (killed, or still running).
    unfinished: Vec<u32>,
    /// Processes still writing when the archive was written.
    still_writing: Vec<u32>,
    anchored: bool,
    /// Context switches, wakeups and lost samples, with --sched.
    sched: Option<(u64, u64, u64)>,
}

impl Summary {
    fn print(&self, output: &Path) {
        let lost = match self.sched {
            Some((_, _, lost)) => format!(", {lost} scheduling samples lost"),
            None => String::new(),
        };
        eprintln!(
            "fxt record: {} processes, {} records, {} dropped{lost} -> {}",
            self.processes,
            self.records,
            self.dropped,
            output.display()
        );
        if let Some((switches, wakeups, _)) = self.sched {
            eprintln!("fxt record: scheduling: {switches} context switches, {wakeups} wakeups");
        }
        let list = |pids: &[u32]| {
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.unfinished.is_empty() {
            eprintln!(
                "fxt record: did not finish (killed or still running): pid {}; the archive holds what they published",
                list(&self.unfinished)
            );
        }
        if !self.still_writing.is_empty() {
            eprintln!(
                "fxt record: still writing when the archive was written: pid {}",
                list(&self.still_writing)
            );
        }
        if !self.anchored && self.processes > 0 {
            eprintln!(
                "fxt record: no TSC anchors; TSC timestamps are scaled by each process's own rate"
            );
        }
    }
}

/// Merges the traces of `dir` into `output`: written to a new file in
/// `parent` (created exclusively, never through a symlink), then renamed
/// over `output`.
fn merge(
    dir: &Path,
    output: &Path,
    parent: &Path,
    base: TimeBase,
    sched: Option<Sched>,
) -> Result<Summary, Error> {
    let entries = spool::entries(dir).map_err(|e| Error::msg(format!("{}: {e}", dir.display())))?;
    let tmp = parent.join(format!(".fxt-record-{}.tmp", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(|e| Error::msg(format!("cannot create {}: {e}", tmp.display())))?;
    let result = write_archive(&entries, file, &tmp, base, sched);
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, output).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::msg(format!("cannot write {}: {e}", output.display()))
    })?;
    Ok(Summary {
        anchored: base.anchored(),
        ..summary
    })
}

fn write_archive(
    entries: &[spool::Entry],
    file: File,
    tmp: &Path,
    base: TimeBase,
    sched: Option<Sched>,
) -> Result<Summary, Error> {
    let map = |tps: u64, ticks: u64| base.map(tps, ticks);
    let retime = Retime {
        map: &map,
        ticks_per_second: NS,
    };
    let mut archive = Archive::new(
        BufWriter::with_capacity(1 << 16, file),
        &tmp.display().to_string(),
    )?;
    let mut pids = Vec::new();
    let mut dropped = 0;
    let mut unfinished = Vec::new();
    for e in entries {
        let mut input = Input::open_bytes(&e.path.to_string_lossy())?;
        archive.append(&mut input, &format!("pid {}", e.pid), Some(&retime))?;
        if !pids.contains(&e.pid) {
            pids.push(e.pid);
        }
        match e.counts {
            Some(c) => dropped += c.records_dropped + c.late_records_dropped,
            None => {
                if !unfinished.contains(&e.pid) {
                    unfinished.push(e.pid);
                }
            }
        }
    }
    #[cfg(target_os = "linux")]
    let sched = match sched {
        Some(Sched(trace)) => {
            // Already on the archive's clock (CLOCK_MONOTONIC_RAW ns).
            let mut bytes = Vec::new();
            trace
                .write_fxt(&mut bytes, 0)
                .map_err(|e| Error::io("scheduling records", e))?;
            let mut input = Input::from_bytes("scheduling records", bytes);
            archive.append(&mut input, "kernel scheduler", Some(&retime))?;
            Some((trace.switches(), trace.wakeups(), trace.lost()))
        }
        None => None,
    };
    #[cfg(not(target_os = "linux"))]
    let sched = sched.map(|Sched| (0, 0, 0));
    let records = archive.records();
    let mut out = archive.finish()?;
    out.flush()
        .map_err(|e| Error::io(&tmp.display().to_string(), e))?;
    out.get_ref()
        .sync_all()
        .map_err(|e| Error::io(&tmp.display().to_string(), e))?;
    Ok(Summary {
        processes: pids.len(),
        records,
        dropped,
        unfinished,
        still_writing: Vec::new(),
        anchored: false,
        sched,
    })
}
