//! `fxt trace start`: opens a window. A private spool folder (as `fxt
//! record` makes one) and the window's state are created first, so that
//! whatever happens next a `stop` finds them; then the scheduling recorder
//! (`--sched`) and the providers' sessions start.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use fxt_control::{ProviderState, Request, Response, StartRequest};

use super::common::{create_folder, refusal, state_error};
use super::daemon;
use super::providers::{self, labels, Provider};
use super::state::{self, StateError, Window};
use crate::error::Error;
use crate::recording::options::RecordingArgs;
use crate::recording::spool::Spool;
use crate::recording::timebase;

/// How long a provider has to start its session and answer.
const START_TIMEOUT: Duration = Duration::from_secs(5);

/// Arguments of `fxt trace start` (and of `fxt trace record`).
#[derive(clap::Args, Clone)]
#[group(id = "start_options")]
pub struct Args {
    /// A provider to trace, by pid (repeatable; default: every provider).
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Providers to trace, by name (repeatable; default: every provider).
    #[arg(long = "name", value_name = "NAME")]
    names: Vec<String>,
    /// The providers' sessions: what `fxt record` gives its tree.
    #[command(flatten)]
    recording: RecordingArgs,
    /// Also record the kernel's scheduling of the providers for the whole
    /// window (Linux; needs root, CAP_PERFMON or
    /// kernel.perf_event_paranoid <= -1).
    #[arg(long)]
    sched: bool,
    /// Where the spool folder (the providers' own traces until `stop`)
    /// is created (default: the temp directory).
    #[arg(long, value_name = "DIR")]
    spool_dir: Option<PathBuf>,
}

/// A random window id (the kernel's random source; the clock and pid if
/// that fails).
fn window_id() -> u64 {
    let mut id = [0u8; 8];
    // SAFETY: getrandom writes at most `id.len()` bytes into `id`.
    let n = unsafe { libc::getrandom(id.as_mut_ptr().cast(), id.len(), 0) };
    if n == id.len() as isize {
        return u64::from_ne_bytes(id);
    }
    timebase::raw_ns() ^ (u64::from(std::process::id()) << 40)
}

/// The providers the selectors name (every provider without selectors);
/// a selector that names no provider is an error.
fn select(all: &[Provider], args: &Args) -> Result<Vec<Provider>, Error> {
    if args.pids.is_empty() && args.names.is_empty() {
        return Ok(all.to_vec());
    }
    for pid in &args.pids {
        if !all.iter().any(|p| p.pid == *pid) {
            return Err(Error::msg(format!("no provider with pid {pid}")));
        }
    }
    for name in &args.names {
        if !all.iter().any(|p| p.name() == name) {
            return Err(Error::msg(format!("no provider named {name:?}")));
        }
    }
    Ok(all
        .iter()
        .filter(|p| args.pids.contains(&p.pid) || args.names.iter().any(|n| n == p.name()))
        .cloned()
        .collect())
}

/// Opens a window in `runtime` and returns it (with its providers started).
pub fn open(runtime: &Path, args: &Args) -> Result<Window, Error> {
    match state::load(runtime) {
        Err(StateError::None) => {}
        Ok(w) => return Err(state_error(StateError::Open(Box::new(w)))),
        Err(e) => return Err(state_error(e)),
    }
    let all = providers::survey(runtime)
        .map_err(|e| Error::msg(format!("{}: {e}", runtime.display())))?;
    let mut chosen = select(&all, args)?;
    end_orphans(&mut chosen);
    let (startable, skipped): (Vec<&Provider>, Vec<&Provider>) = chosen
        .iter()
        .partition(|p| matches!(&p.status, Ok(s) if s.state == ProviderState::Dormant));
    report_skipped(&skipped);
    if startable.is_empty() {
        return Err(Error::msg("no dormant provider to start a window in"));
    }

    let parent = args.spool_dir.clone().unwrap_or_else(std::env::temp_dir);
    let spool = create_folder(&parent, "spool")?;
    if spool.dir.to_string_lossy().contains(['\n', '\r']) {
        let _ = spool.remove();
        return Err(Error::msg("--spool-dir: a line break in the path"));
    }
    let start = timebase::anchor();
    let mut window = Window {
        id: window_id(),
        spool: spool.dir.clone(),
        providers: Vec::new(),
        categories: args.recording.categories.clone(),
        mode: args.recording.mode,
        buffer: args.recording.buffer,
        sample: args.recording.sample,
        alloc_sample: args.recording.alloc_sample,
        start,
        sched: None,
    };
    let created = spool
        .write_info(start)
        .map_err(|e| Error::io(&spool.dir.display().to_string(), e))
        .and_then(|()| window.create(runtime).map_err(state_error));
    if let Err(e) = created {
        let _ = spool.remove();
        return Err(e);
    }
    if let Err(e) = start_in(runtime, &mut window, &startable, args.sched, &spool) {
        // Nothing is tracing for this window: close it.
        if let Some(d) = window.sched {
            let _ = daemon::stop(d, &window.spool);
        }
        let _ = spool.remove();
        let _ = state::remove(runtime);
        return Err(e);
    }
    Ok(window)
}

/// Ends the sessions of providers still tracing for a window that is
/// closed (no window is open: one that did not answer the last `stop`,
/// stopped with SIGSTOP, went on afterwards into a spool that is gone);
/// those that end them are dormant again.
fn end_orphans(chosen: &mut [Provider]) {
    let orphans: Vec<(usize, u64)> = chosen
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match &p.status {
            Ok(s) => match s.state {
                ProviderState::Tracing { window } => Some((i, window)),
                _ => None,
            },
            Err(_) => None,
        })
        .collect();
    let targets: Vec<(u32, PathBuf)> = orphans
        .iter()
        .map(|&(i, _)| (chosen[i].pid, chosen[i].socket.clone()))
        .collect();
    let window_of = |pid: u32| {
        let i = orphans.iter().find(|&&(i, _)| chosen[i].pid == pid);
        i.map_or(0, |&(_, w)| w)
    };
    let answers = providers::call_all(
        &targets,
        |pid| Request::Stop {
            window: window_of(pid),
        },
        None,
        START_TIMEOUT,
    );
    for (&(i, window), answer) in orphans.iter().zip(answers) {
        if let Ok(Response::Stopped { .. }) = answer {
            eprintln!(
                "fxt trace: {} still traced for the closed window {window:016x}: that session is ended",
                chosen[i].label()
            );
            if let Ok(s) = &mut chosen[i].status {
                s.state = ProviderState::Dormant;
            }
        }
    }
}

/// Says which chosen providers are left alone, and why.
fn report_skipped(skipped: &[&Provider]) {
    for p in skipped {
        let why = match &p.status {
            Ok(s) => match s.state {
                ProviderState::OwnSession => "runs its own session".to_owned(),
                ProviderState::Tracing { window } => {
                    format!("already traces for window {window:016x}")
                }
                ProviderState::Dormant => continue,
            },
            Err(e) => format!("does not answer ({e})"),
        };
        eprintln!("fxt trace: left alone: {}: {why}", p.label());
    }
}

/// Starts the recorder (`sched`) and the sessions of `startable` for
/// `window`, and records in its state which started.
fn start_in(
    runtime: &Path,
    window: &mut Window,
    startable: &[&Provider],
    sched: bool,
    spool: &Spool,
) -> Result<(), Error> {
    let pids: Vec<u32> = startable.iter().map(|p| p.pid).collect();
    if sched {
        match daemon::spawn(&window.spool, &pids) {
            Ok(d) => {
                window.sched = Some(d);
                window.update(runtime).map_err(state_error)?;
            }
            Err(why) => eprintln!("fxt trace: --sched: {why}; tracing without scheduling"),
        }
    }
    let request = StartRequest {
        window: window.id,
        categories: window.categories.clone(),
        mode: window.mode,
        buffer: window.buffer,
        sample_hz: window.sample,
        alloc_sample: window.alloc_sample,
    };
    let targets: Vec<(u32, PathBuf)> = startable
        .iter()
        .map(|p| (p.pid, p.socket.clone()))
        .collect();
    let answers = providers::call_all(
        &targets,
        |_| Request::Start(request.clone()),
        Some(spool.folder.as_fd()),
        START_TIMEOUT,
    );
    let mut started = Vec::new();
    for (p, answer) in startable.iter().zip(answers) {
        match refusal(answer, |r| matches!(r, Response::Started)) {
            None => started.push(*p),
            Some(why) => eprintln!("fxt trace: not started: {}: {why}", p.label()),
        }
    }
    window.providers = started.iter().map(|p| p.pid).collect();
    window.update(runtime).map_err(state_error)?;
    if started.is_empty() {
        return Err(Error::msg("no provider started tracing"));
    }
    eprintln!(
        "fxt trace: window {:016x} open: {} providers: {}{}",
        window.id,
        started.len(),
        labels(started.iter().copied()),
        if window.sched.is_some() {
            "; scheduling recorded"
        } else {
            ""
        }
    );
    Ok(())
}

/// Runs `fxt trace start`.
pub fn run(runtime: &Path, args: Args) -> Result<ExitCode, Error> {
    open(runtime, &args)?;
    Ok(ExitCode::SUCCESS)
}
