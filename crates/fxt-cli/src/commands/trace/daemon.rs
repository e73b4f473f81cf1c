//! `fxt trace start --sched`: the kernel's scheduling for the whole window,
//! although `start` returns at once. `start` spawns a detached recorder
//! (this same program as the hidden `fxt trace sched-daemon`, in a session
//! of its own so a closing terminal does not end it) that captures as
//! `fxt record --sched` does. It says in `SPOOL/sched.status` whether it
//! captures, and on SIGTERM or SIGINT (from `stop`) writes the scheduling
//! of the window's processes to `SPOOL/sched.fxt` (renamed into place when
//! whole) and its counts to the status, then exits. It also ends when the
//! spool disappears, so a window abandoned without `stop` leaves no
//! recorder behind forever.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::interrupt;
use super::state::Daemon;
use crate::error::Error;
use crate::recording::collect::SchedCounts;
use crate::recording::spool::write_new;

const STATUS: &str = "sched.status";
/// The scheduling records in the spool (no pid: not read as a process).
pub const TRACE: &str = "sched.fxt";

/// How long `start` waits for the recorder to say whether it captures.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `stop` waits for the recorder to write its records.
const DONE_TIMEOUT: Duration = Duration::from_secs(60);

/// Arguments of the hidden `fxt trace sched-daemon`.
#[derive(clap::Args)]
pub struct Args {
    /// The window's spool folder.
    #[arg(long)]
    spool: PathBuf,
    /// The window's provider processes (their scheduling is kept, and
    /// that of processes they fork).
    #[arg(long = "pid", value_delimiter = ',')]
    pids: Vec<u32>,
}

/// Writes `bytes` to `spool/name` atomically: through a new temporary
/// file, never through a symlink (a leftover at its name, the link itself,
/// is removed first), renamed into place.
fn write_atomic(spool: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp = spool.join(format!(".{name}.tmp"));
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    write_new(&tmp, bytes)?;
    std::fs::rename(&tmp, spool.join(name))
}

/// Whether process `pid` is a scheduling recorder of this user: run as
/// this effective uid, its command line `fxt trace sched-daemon …` (its
/// start time is checked by the caller). Anything else is never signalled.
fn is_recorder(pid: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let mut args = cmdline.split(|&b| b == 0).skip(1);
    if args.next() != Some(b"trace") || args.next() != Some(b"sched-daemon") {
        return false;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1)?.parse::<u32>().ok())
            == Some(me)
    })
}

/// The recorder's status line, if written.
fn status(spool: &Path) -> Option<String> {
    std::fs::read_to_string(spool.join(STATUS))
        .ok()
        .map(|s| s.trim().to_owned())
}

/// The state and start time of process `pid` (`/proc/PID/stat`).
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: fields are
    // counted after its last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    // Field 22, the start time; `rest` begins at field 3.
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// Whether the recorder has exited (gone, or a zombie of ours: reaped).
fn exited(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on a pid that may or may not be our
    // child: it reaps a zombie child of ours and otherwise fails (ECHILD).
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
    !matches!(proc_stat(pid), Some((s, _)) if s != 'Z')
}

/// Starts a recorder for `pids` writing into `spool`; `Err` says why no
/// scheduling is captured (the window goes on without it).
pub fn spawn(spool: &Path, pids: &[u32]) -> Result<Daemon, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find fxt itself: {e}"))?;
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    let mut cmd = Command::new(exe);
    cmd.args(["trace", "sched-daemon", "--spool"])
        .arg(spool)
        .arg(format!("--pid={}", list.join(",")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of the
    // parent; it runs in the forked child before exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the recorder: {e}"))?;
    let pid = child.id();
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        match status(spool) {
            Some(s) if s == "capturing" => break,
            Some(s) => {
                exited(pid);
                return Err(s.strip_prefix("unavailable ").unwrap_or(&s).to_owned());
            }
            None if exited(pid) => return Err("the recorder exited at once".into()),
            None if Instant::now() >= deadline => {
                // SAFETY: kill(2) of the child just spawned (not reaped).
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                exited(pid);
                return Err("the recorder did not start in time".into());
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let start_time = proc_stat(pid).map(|(_, t)| t).unwrap_or(0);
    Ok(Daemon { pid, start_time })
}

/// Stops the recorder of a window and returns its counts once its records
/// are in the spool; `Err` says why the archive has no scheduling.
pub fn stop(daemon: Daemon, spool: &Path) -> Result<SchedCounts, String> {
    match proc_stat(daemon.pid) {
        Some((s, start)) if s != 'Z' && start == daemon.start_time && is_recorder(daemon.pid) => {
            // SAFETY: kill(2) of the recorder, checked by its start time,
            // owner and command line to be the process `start` spawned,
            // not a reused pid.
            unsafe { libc::kill(daemon.pid as libc::pid_t, libc::SIGTERM) };
        }
        _ => {}
    }
    let deadline = Instant::now() + DONE_TIMEOUT;
    while !exited(daemon.pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = status(spool).unwrap_or_default();
    let mut words = text.split(' ');
    if words.next() != Some("done") || !spool.join(TRACE).is_file() {
        return Err(format!(
            "the scheduling recorder ended without writing its records ({})",
            if text.is_empty() { "no status" } else { &text }
        ));
    }
    let mut n = || words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
    Ok(SchedCounts {
        switches: n(),
        wakeups: n(),
        lost: n(),
    })
}

/// Runs the recorder (`fxt trace sched-daemon`).
pub fn run(args: Args) -> Result<std::process::ExitCode, Error> {
    interrupt::install();
    // A mask inherited from a manager that held the signals must not keep
    // `stop`'s SIGTERM out.
    interrupt::hold(false);
    // SAFETY: ignoring SIGHUP: a terminal that closes must not end the
    // window's capture.
    unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
    let spool = &args.spool;
    let io_err = |e| Error::io(&spool.display().to_string(), e);
    #[cfg(target_os = "linux")]
    {
        use crate::recording::sched::{Capture, Keep, Unavailable};
        let capture = match Capture::start() {
            Ok(c) => c,
            Err(Unavailable(why)) => {
                write_atomic(spool, STATUS, format!("unavailable {why}").as_bytes())
                    .map_err(io_err)?;
                return Ok(std::process::ExitCode::from(1));
            }
        };
        write_atomic(spool, STATUS, b"capturing").map_err(io_err)?;
        while spool.is_dir()
            && !interrupt::wait_until(Some(Instant::now() + Duration::from_secs(1)))
        {}
        let trace = capture.finish(Keep::Processes(args.pids));
        let mut bytes = Vec::new();
        trace.write_fxt(&mut bytes, 0).map_err(io_err)?;
        write_atomic(spool, TRACE, &bytes).map_err(io_err)?;
        let counts = format!(
            "done {} {} {}",
            trace.switches(),
            trace.wakeups(),
            trace.lost()
        );
        write_atomic(spool, STATUS, counts.as_bytes()).map_err(io_err)?;
        Ok(std::process::ExitCode::SUCCESS)
    }
    #[cfg(not(target_os = "linux"))]
    {
        write_atomic(spool, STATUS, b"unavailable --sched needs Linux").map_err(io_err)?;
        Ok(std::process::ExitCode::from(1))
    }
}
