//! `fxt trace list`: every live provider of the caller's runtime directory
//! (the sockets of processes that are gone are removed on the way).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use fxt_control::ProviderState;

use super::providers;
use super::state;
use crate::error::Error;

/// Prints one line per provider: pid, state, name, categories.
pub fn run(runtime: &Path) -> Result<ExitCode, Error> {
    let all = providers::survey(runtime)
        .map_err(|e| Error::msg(format!("{}: {e}", runtime.display())))?;
    let open = state::load(runtime).ok().map(|w| w.id);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>8}  {:<12}  {:<20}  CATEGORIES",
        "PID", "STATE", "NAME"
    )?;
    for p in &all {
        let (state, categories) = match &p.status {
            Ok(s) => (
                match s.state {
                    ProviderState::Dormant => "dormant".to_owned(),
                    ProviderState::OwnSession => "own session".to_owned(),
                    ProviderState::Tracing { window } if Some(window) == open => {
                        "tracing".to_owned()
                    }
                    ProviderState::Tracing { window } => format!("tracing ({window:016x})"),
                },
                s.categories.join(","),
            ),
            Err(why) => ("no answer".to_owned(), why.clone()),
        };
        writeln!(
            out,
            "{:>8}  {:<12}  {:<20}  {categories}",
            p.pid,
            state,
            p.name()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
