//! `fxt trace snapshot`: what every tracing provider holds now, in one
//! archive, while tracing goes on. Providers of the open window and those
//! running their own session alike write a snapshot into a private folder
//! beside the archive (`PID.fxt`, as in a spool), which is merged on one
//! time base and removed.
//!
//! Exit status: 0 when every tracing provider's snapshot is in the
//! archive; [`PARTIAL`] when some are missing (each named on stderr, the
//! archive holds the others); 2, and no archive, when none wrote one.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fxt_control::{ProviderState, Request, Response};

use super::common::{create_folder, parent_of, refusal, PARTIAL};
use super::providers::{self, Provider};
use super::state;
use crate::error::Error;
use crate::recording::collect::{self, Collection, Unfinished};
use crate::recording::timebase::{self, TimeBase};

/// How long a provider has to write its snapshot and answer.
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(10);

/// Arguments of `fxt trace snapshot`.
#[derive(clap::Args)]
pub struct Args {
    /// The archive to write.
    #[arg(short, long, default_value = "snapshot.fxt")]
    output: PathBuf,
}

/// Writes a snapshot of every tracing provider of `runtime` to `output`.
pub fn run(runtime: &Path, args: Args) -> Result<std::process::ExitCode, Error> {
    let output = &args.output;
    let window = state::load(runtime).ok();
    // The tracing providers, and those of the open window that did not
    // answer Status (asked anyway: missing from the archive, they are
    // named).
    let of_window = |pid| window.as_ref().is_some_and(|w| w.providers.contains(&pid));
    let tracing: Vec<Provider> = providers::survey(runtime)
        .map_err(|e| Error::msg(format!("{}: {e}", runtime.display())))?
        .into_iter()
        .filter(|p| match &p.status {
            Ok(s) => s.state != ProviderState::Dormant,
            Err(_) => of_window(p.pid),
        })
        .collect();
    if tracing.is_empty() {
        return Err(Error::msg("no provider is tracing"));
    }
    let parent = parent_of(output);
    let dir = create_folder(&parent, "snapshot")?;
    // The TSC line runs from the window's anchor when one is open, else
    // from one taken now (the two anchors at least 20 ms apart).
    let taken = Instant::now();
    let start = match window {
        Some(w) if w.start.is_some() => w.start,
        _ => timebase::anchor(),
    };
    let targets: Vec<(u32, PathBuf)> = tracing.iter().map(|p| (p.pid, p.socket.clone())).collect();
    let answers = providers::call_all(
        &targets,
        |_| Request::Snapshot,
        Some(dir.folder.as_fd()),
        SNAPSHOT_TIMEOUT,
    );
    let mut missing = Vec::new();
    for (p, answer) in tracing.iter().zip(answers) {
        if let Some(why) = refusal(answer, |r| matches!(r, Response::SnapshotWritten { .. })) {
            missing.push(format!("{}: {why}", p.label()));
        }
    }
    if missing.len() == tracing.len() {
        let _ = dir.remove();
        return Err(Error::msg(format!(
            "no provider wrote a snapshot, no archive written ({})",
            missing.join("; ")
        )));
    }
    if let Some(rest) = Duration::from_millis(20).checked_sub(taken.elapsed()) {
        std::thread::sleep(rest);
    }
    let base = TimeBase::new(start, timebase::anchor());
    let collection = Collection {
        command: "fxt trace",
        sched_file: None,
        unfinished: Unfinished::Ignore,
    };
    let result = collect::collect_with(&dir.via_fd(), output, &parent, base, collection);
    let _ = dir.remove();
    result?.print(output);
    for m in &missing {
        eprintln!("fxt trace: the snapshot lacks {m}");
    }
    Ok(if missing.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(PARTIAL)
    })
}
