//! `fxt record [OPTIONS] -- CMD [ARGS...]`: runs a command with tracing set
//! up for it and every descendant that links fxt, and merges their traces
//! into one archive on one time base.
//!
//! The recorder creates a private spool folder
//! ([`crate::recording::spool`]) and runs the command with `FXT_RECORD`
//! naming it: every session any process of the tree starts (with
//! `fxt::start`, whatever its `Config`) writes its own crash-safe trace
//! there, named by its pid, with the recorder's buffer, mode and categories
//! (`FXT_BUFFER`, `FXT_MODE`, `FXT_CATEGORIES`). SIGINT and SIGTERM sent to
//! the recorder are forwarded to the command. When the command exits, the
//! recorder waits a little for descendants still writing, then appends
//! every trace to the archive with one provider per process (named after
//! the process, real pids and tids), every timestamp mapped to
//! `CLOCK_MONOTONIC_RAW` nanoseconds ([`crate::recording::timebase`]),
//! prints one summary line, removes the spool and exits with the command's
//! status. With `--sched` (Linux) it also captures the kernel's scheduling
//! of the tree from before the command starts ([`crate::recording::sched`])
//! and adds it as one more provider.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use fxt_control::recording::env;

use crate::error::Error;
use crate::recording::capture::start_sched;
use crate::recording::collect::{collect, collect_left};
use crate::recording::options::RecordingArgs;
use crate::recording::spool::{self, Spool};
use crate::recording::timebase::{self, TimeBase};

/// Arguments of `fxt record`.
#[derive(clap::Args)]
#[command(trailing_var_arg = true)]
pub struct Args {
    /// The archive to write.
    #[arg(short, long, default_value = "trace.fxt")]
    output: PathBuf,
    /// The sessions of every traced process: what `fxt trace start`
    /// gives providers.
    #[command(flatten)]
    recording: RecordingArgs,
    /// Seconds to wait, after the command exits, for descendants still
    /// writing their traces or alive without one yet.
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

/// Installs the forwarding handler for SIGINT and SIGTERM: it notes the
/// signal, and [`wait_forwarding`]'s loop forwards it.
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

/// Waits for `pid`, forwarding signals to it. The wait polls (a signal
/// that lands just before a blocking `waitpid` would not interrupt it, and
/// the command would get it only once it ended by itself): a signal is
/// forwarded within one pause.
fn wait_forwarding(pid: libc::pid_t) -> Result<Ended, Error> {
    const PAUSE: Duration = Duration::from_millis(10);
    loop {
        let sig = PENDING.swap(0, Ordering::Relaxed);
        if sig != 0 {
            // SAFETY: plain kill(2) of our own child.
            unsafe { libc::kill(pid, sig) };
        }
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            if libc::WIFEXITED(status) {
                return Ok(Ended::Exited(libc::WEXITSTATUS(status)));
            }
            if libc::WIFSIGNALED(status) {
                return Ok(Ended::Signaled(libc::WTERMSIG(status)));
            }
            continue;
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(Error::msg(format!("waiting for the command: {e}")));
            }
            continue;
        }
        std::thread::sleep(PAUSE);
    }
}

/// Runs `fxt record`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let parent = match args.output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Some(dir) = &args.from_spool {
        let summary = collect_left(dir, &args.output, &parent)?;
        summary.print(&args.output);
        return Ok(ExitCode::SUCCESS);
    }
    record(&args, &parent)
}

/// Runs the command with a fresh spool, waits for it and its writers,
/// writes the archive and ends as the command ended.
fn record(args: &Args, parent: &Path) -> Result<ExitCode, Error> {
    let spool = Spool::create(parent).map_err(|e| {
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
    // Scheduling is captured from before the command starts, so its first
    // forks are seen.
    let capture = if args.sched { start_sched() } else { None };
    install_forwarding();
    let pid = spawn(args, &spool)?;
    let ended = wait_forwarding(pid as libc::pid_t)?;
    let linger = Duration::from_secs_f64(args.linger.clamp(0.0, 3600.0));
    let still_writing = spool::wait_for_writers(&spool.dir, linger);
    let base = TimeBase::new(start, timebase::end_anchor(started));
    let sched = capture.map(|c| c.finish(args.sched_system, pid));
    match collect(&spool.dir, &args.output, parent, base, sched) {
        Ok(mut summary) => {
            summary.still_writing = still_writing;
            summary.print(&args.output);
            remove_spool(args, &spool);
            if summary.is_empty() {
                return Ok(nothing_traced(args, ended));
            }
            Ok(exit_as(ended))
        }
        Err(e) => {
            eprintln!(
                "fxt record: {e}; the processes' traces are kept in {} (merge them with `fxt record --from-spool {} -o FILE`)",
                spool.dir.display(),
                spool.dir.display()
            );
            Ok(ExitCode::from(2))
        }
    }
}

/// Starts the command with the spool and the recorder's options in its
/// environment; returns its pid. The spool goes if it cannot start.
fn spawn(args: &Args, spool: &Spool) -> Result<u32, Error> {
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]).env(env::RECORD, &spool.dir);
    cmd.envs(args.recording.options().env());
    match cmd.spawn() {
        Ok(child) => Ok(child.id()),
        Err(e) => {
            let _ = spool.remove();
            Err(Error::msg(format!(
                "cannot run {}: {e}",
                args.command[0].to_string_lossy()
            )))
        }
    }
}

/// Removes the spool once its traces are in the archive (unless
/// `--keep-spool`).
fn remove_spool(args: &Args, spool: &Spool) {
    if args.keep_spool {
        eprintln!("fxt record: the spool is kept in {}", spool.dir.display());
    } else if let Err(e) = spool.remove() {
        eprintln!(
            "fxt record: cannot remove the spool {}: {e}",
            spool.dir.display()
        );
    }
}

/// Says that no process of the tree was traced, and ends with status 1 (or
/// the command's own failure): an empty archive is not a recording.
fn nothing_traced(args: &Args, ended: Ended) -> ExitCode {
    let command = args.command.first().map_or_else(
        || "the command".to_owned(),
        |c| format!("`{}`", c.to_string_lossy()),
    );
    let sched = if args.sched {
        " and --sched recorded no scheduling"
    } else {
        ""
    };
    eprintln!(
        "fxt record: nothing was traced: no process in the tree of {command} used fxt{sched}, \
         so {} holds no events. fxt record traces the programs linked with the fxt crate \
         that start a session (fxt::start); --sched also records the kernel's scheduling \
         of any program.",
        args.output.display()
    );
    match ended {
        Ended::Exited(0) => ExitCode::from(1),
        ended => exit_as(ended),
    }
}

/// The recorder's exit status: the command's, or its signal.
fn exit_as(ended: Ended) -> ExitCode {
    match ended {
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
    }
}
