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

use std::path::{Path, PathBuf};
use std::time::Duration;

use fxt_control::{Request, Response};

use super::daemon;
use super::providers;
use super::state::{self, Window};
use crate::error::Error;
use crate::recording::collect::{self, Collection, Unfinished};
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

/// The folder `output` is written in.
pub fn parent_of(output: &Path) -> PathBuf {
    match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// What became of the window's providers at Stop.
#[derive(Default)]
struct Stopped {
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
            let answers = providers::call_all(&extra, request, STOP_TIMEOUT);
            (extra, answers)
        });
        let targets: Vec<(u32, PathBuf)> = window
            .providers
            .iter()
            .map(|&pid| (pid, fxt_control::socket_path(runtime, pid)))
            .collect();
        answers = providers::call_all(&targets, request, STOP_TIMEOUT);
        listed = targets.into_iter().map(|(pid, _)| pid).collect();
        if let Ok((extra, more)) = others.join() {
            found = extra.into_iter().map(|(pid, _)| pid).collect();
            answers.extend(more);
        }
    });
    let mut out = Stopped::default();
    for (pid, answer) in listed.into_iter().chain(found).zip(answers) {
        let why = match answer {
            Ok(Response::Stopped { .. }) => continue,
            Ok(Response::Error(why)) => why,
            Ok(_) => "unexpected answer".into(),
            Err(why) => why,
        };
        if providers::alive(pid) {
            out.silent.push((pid, why));
        } else {
            out.died.push(pid);
        }
    }
    out
}

/// Closes the open window of `runtime` into `output`.
pub fn close(runtime: &Path, output: &Path) -> Result<(), Error> {
    let window = state::load(runtime).map_err(super::start::state_error)?;
    let parent = parent_of(output);
    let stopped = stop_providers(runtime, &window);
    if !window.spool.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        // Nothing can be merged: close the window, or it stays open for good.
        if let Some(d) = window.sched {
            let _ = daemon::stop(d, &window.spool);
        }
        let _ = state::remove(runtime);
        return Err(Error::msg(format!(
            "the window's spool {} is gone; the window is closed without an archive",
            window.spool.display()
        )));
    }
    let sched = window
        .sched
        .and_then(|d| match daemon::stop(d, &window.spool) {
            Ok(counts) => Some(counts),
            Err(why) => {
                eprintln!("fxt trace: --sched: {why}");
                None
            }
        });
    let base = TimeBase::new(window.start, timebase::anchor());
    let collection = Collection {
        command: "fxt trace",
        sched_file: sched.map(|c| (window.spool.join(daemon::TRACE), c)),
        unfinished: Unfinished::Mark,
    };
    let summary =
        collect::collect_with(&window.spool, output, &parent, base, collection).map_err(|e| {
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
    // The spool path comes from our private state; a symlink put in its
    // place is not followed.
    if window.spool.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        if let Err(e) = std::fs::remove_dir_all(&window.spool) {
            eprintln!(
                "fxt trace: cannot remove the spool {}: {e}",
                window.spool.display()
            );
        }
    }
    state::remove(runtime).map_err(|e| Error::io(&state::path(runtime).display().to_string(), e))
}

/// Runs `fxt trace stop`.
pub fn run(runtime: &Path, args: Args) -> Result<std::process::ExitCode, Error> {
    close(runtime, &args.output)?;
    Ok(std::process::ExitCode::SUCCESS)
}
