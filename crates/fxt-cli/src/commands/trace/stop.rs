//! `fxt trace stop`: closes the open window. Everything it needs is in the
//! window's state, so it works from any shell and after the manager that
//! started the window died: Stop goes to every provider of the window
//! (those the state names, and any other that says it traces for this
//! window: one `start` may have been killed before it wrote them down), all
//! at once; the scheduling recorder is stopped; the spool is merged into one
//! archive on one time base; the spool and the state are removed.
//!
//! A provider that does not answer within [`STOP_TIMEOUT`] (stopped with
//! SIGSTOP, hung) is named and merged with what it published so far; one
//! that died keeps what it published (its trace in the spool is
//! crash-safe) and is named unfinished in the archive.
//!
//! Exit status: 0 when every provider of the window has its trace in the
//! archive; [`PARTIAL`] when some have none (each named on stderr, the
//! archive holds the others); 2 when no provider's trace reached the
//! spool (the window is closed, no archive written) or the merge failed
//! (the window stays open).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use fxt_control::{Request, Response};

use super::common::{parent_of, refusal, state_error, PARTIAL};
use super::daemon;
use super::providers;
use super::state::{self, Window};
use crate::error::Error;
use crate::recording::collect::{self, Collection, Unfinished};
use crate::recording::spool::{self, Spool};
use crate::recording::timebase::{self, TimeBase};

/// How long a provider has to finish its session and answer Stop.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Arguments of `fxt trace stop`.
#[derive(clap::Args)]
pub struct Args {
    /// The archive to write.
    #[arg(short, long, default_value = "trace.fxt")]
    output: PathBuf,
}

/// What became of the window's providers at Stop.
#[derive(Default)]
struct Stopped {
    /// Every provider of the window (those its state names, then those
    /// found tracing for it).
    all: Vec<u32>,
    /// Those that did not answer, and why.
    silent: Vec<(u32, String)>,
    /// Those whose process is gone.
    died: Vec<u32>,
}

/// Sends Stop to the window's providers: those its state names at once,
/// and any other that says it traces for the window (found meanwhile).
fn stop_providers(runtime: &Path, window: &Window) -> Stopped {
    let request = |_| Request::Stop { window: window.id };
    let (mut listed, mut found): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut answers = Vec::new();
    std::thread::scope(|s| {
        let others = s.spawn(|| {
            let live = providers::survey(runtime).unwrap_or_default();
            let extra: Vec<(u32, PathBuf)> = live
                .into_iter()
                .filter(|p| !window.providers.contains(&p.pid) && p.in_window(window.id))
                .map(|p| (p.pid, p.socket))
                .collect();
            let answers = providers::call_all(&extra, request, None, STOP_TIMEOUT);
            (extra, answers)
        });
        let targets: Vec<(u32, PathBuf)> = window
            .providers
            .iter()
            .map(|&pid| (pid, fxt_control::socket_path(runtime, pid)))
            .collect();
        answers = providers::call_all(&targets, request, None, STOP_TIMEOUT);
        listed = targets.into_iter().map(|(pid, _)| pid).collect();
        if let Ok((extra, more)) = others.join() {
            found = extra.into_iter().map(|(pid, _)| pid).collect();
            answers.extend(more);
        }
    });
    let mut out = Stopped {
        all: listed.iter().chain(&found).copied().collect(),
        ..Stopped::default()
    };
    for (pid, answer) in listed.into_iter().chain(found).zip(answers) {
        let Some(why) = refusal(answer, |r| matches!(r, Response::Stopped { .. })) else {
            continue;
        };
        if providers::alive(pid) {
            out.silent.push((pid, why));
        } else {
            out.died.push(pid);
        }
    }
    out
}

/// Closes the window without an archive (nothing can be merged; left
/// open, it would stay open for good) and says why.
fn abandon(runtime: &Path, window: &Window, spool: Option<&Spool>, why: String) -> Error {
    if let Some(d) = window.sched {
        let _ = daemon::stop(d, &window.spool);
    }
    if let Some(s) = spool {
        remove_spool(s);
    }
    let _ = state::remove(runtime);
    Error::msg(format!("{why}; the window is closed without an archive"))
}

/// Why each provider of the window that answered nothing is missing.
fn reasons(stopped: &Stopped) -> String {
    let mut why: Vec<String> = stopped
        .silent
        .iter()
        .map(|(pid, why)| format!("pid {pid}: {why}"))
        .collect();
    why.extend(stopped.died.iter().map(|pid| format!("pid {pid}: ended")));
    if why.is_empty() {
        "every provider answered, none wrote a trace".into()
    } else {
        why.join("; ")
    }
}

/// Closes the open window of `runtime` into `output`; the exit status says
/// whether every provider's trace is in it (see the module docs).
pub fn close(runtime: &Path, output: &Path) -> Result<ExitCode, Error> {
    let window = state::load(runtime).map_err(state_error)?;
    let parent = parent_of(output);
    let stopped = stop_providers(runtime, &window);
    // Opened once, by a name from our private state, refused unless it is
    // still our private folder; read and removed through its descriptor.
    let spool = match Spool::open(&window.spool) {
        Ok(s) => s,
        Err(e) => {
            let why = format!("the window's spool {}: {e}", window.spool.display());
            return Err(abandon(runtime, &window, None, why));
        }
    };
    if spool::entries(&spool.via_fd()).map_or(true, |e| e.is_empty()) {
        let why = format!(
            "no provider's trace reached the spool ({})",
            reasons(&stopped)
        );
        return Err(abandon(runtime, &window, Some(&spool), why));
    }
    let sched = window
        .sched
        .and_then(|d| match daemon::stop(d, &spool.via_fd()) {
            Ok(counts) => Some(counts),
            Err(why) => {
                eprintln!("fxt trace: --sched: {why}");
                None
            }
        });
    let base = TimeBase::new(window.start, timebase::anchor());
    let collection = Collection {
        command: "fxt trace",
        sched_file: sched.map(|c| (spool.via_fd().join(daemon::TRACE), c)),
        unfinished: Unfinished::Mark,
    };
    let summary = collect::collect_with(&spool.via_fd(), output, &parent, base, collection)
        .map_err(|e| {
            Error::msg(format!(
                "{e}; the window stays open (its spool is {}): run `fxt trace stop` again",
                window.spool.display()
            ))
        })?;
    summary.print(output);
    for (pid, why) in &stopped.silent {
        eprintln!(
            "fxt trace: pid {pid} did not answer Stop ({why}); the archive holds what it published"
        );
    }
    for pid in &stopped.died {
        eprintln!(
            "fxt trace: pid {pid} ended during the window; the archive holds what it published"
        );
    }
    let missing: Vec<u32> = stopped
        .all
        .iter()
        .copied()
        .filter(|pid| !summary.pids().contains(pid))
        .collect();
    for pid in &missing {
        eprintln!("fxt trace: the archive lacks pid {pid}: no trace of it reached the spool");
    }
    remove_spool(&spool);
    state::remove(runtime)
        .map_err(|e| Error::io(&state::path(runtime).display().to_string(), e))?;
    Ok(if missing.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(PARTIAL)
    })
}

/// Removes the window's spool, through its descriptor.
fn remove_spool(spool: &Spool) {
    if let Err(e) = spool.remove() {
        eprintln!(
            "fxt trace: cannot remove the spool {}: {e}",
            spool.dir.display()
        );
    }
}

/// Runs `fxt trace stop`.
pub fn run(runtime: &Path, args: Args) -> Result<ExitCode, Error> {
    close(runtime, &args.output)
}
