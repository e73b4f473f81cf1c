//! `fxt trace snapshot`: what every tracing provider holds now, in one
//! archive, while tracing goes on. Providers of the open window and those
//! running their own session alike write a snapshot into a private folder
//! beside the archive (`PID.fxt`, as in a spool), which is merged on one
//! time base and removed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fxt_control::{ProviderState, Request, Response};

use super::providers::{self, Provider};
use super::state;
use super::stop::parent_of;
use crate::error::Error;
use crate::recording::collect::{self, Collection, Unfinished};
use crate::recording::spool::Spool;
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
    let tracing: Vec<Provider> = providers::survey(runtime)
        .map_err(|e| Error::msg(format!("{}: {e}", runtime.display())))?
        .into_iter()
        .filter(|p| matches!(&p.status, Ok(s) if s.state != ProviderState::Dormant))
        .collect();
    if tracing.is_empty() {
        return Err(Error::msg("no provider is tracing"));
    }
    let parent = parent_of(output);
    let dir = Spool::create(&parent).map_err(|e| {
        Error::msg(format!(
            "cannot create a snapshot folder in {}: {e}",
            parent.display()
        ))
    })?;
    // The TSC line runs from the window's anchor when one is open, else
    // from one taken now (the two anchors at least 20 ms apart).
    let taken = Instant::now();
    let start = match state::load(runtime) {
        Ok(w) if w.start.is_some() => w.start,
        _ => timebase::anchor(),
    };
    let targets: Vec<(u32, PathBuf)> = tracing.iter().map(|p| (p.pid, p.socket.clone())).collect();
    let answers = providers::call_all(
        &targets,
        |pid| Request::Snapshot {
            path: dir.dir.join(format!("{pid}.fxt")),
        },
        SNAPSHOT_TIMEOUT,
    );
    for (p, answer) in tracing.iter().zip(answers) {
        let why = match answer {
            Ok(Response::SnapshotWritten { .. }) => continue,
            Ok(Response::Error(why)) => why,
            Ok(_) => "unexpected answer".into(),
            Err(why) => why,
        };
        eprintln!("fxt trace: no snapshot of {}: {why}", p.label());
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
    let result = collect::collect_with(&dir.dir, output, &parent, base, collection);
    let _ = std::fs::remove_dir_all(&dir.dir);
    result?.print(output);
    Ok(std::process::ExitCode::SUCCESS)
}
