//! `fxt trace`: the trace manager. Programs that call
//! `fxt::register_provider` are dormant providers, each listening on a
//! socket in the user's runtime directory (`fxt_control`); `fxt trace`
//! lists them, opens a window in chosen providers (`start`), writes what
//! they traced into one archive (`stop`, `snapshot`), or does all in one
//! (`record --duration`).
//!
//! The window outlives the command that opened it: its state ([`state`])
//! and the providers' spool (crash-safe traces, as under `fxt record`)
//! are on disk, so `stop` works from another shell or after the first
//! manager was killed. Only one window is open at a time per user.

mod common;
mod daemon;
mod interrupt;
mod list;
mod providers;
mod record;
mod snapshot;
mod start;
mod state;
mod stop;

use std::process::ExitCode;

use clap::Subcommand;

use crate::error::Error;

/// Arguments of `fxt trace`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the providers you may control: pid, state, name, categories.
    List,
    /// Open a window: start tracing in the chosen providers (all by default).
    Start(start::Args),
    /// Close the window: stop the providers, write one archive.
    Stop(stop::Args),
    /// Write a snapshot of every tracing provider to one archive; tracing goes on.
    Snapshot(snapshot::Args),
    /// Start, wait SECONDS (or until Ctrl-C), stop.
    Record(record::Args),
    /// The scheduling recorder of a window (started by `start --sched`).
    #[command(hide = true)]
    SchedDaemon(daemon::Args),
}

/// Runs `fxt trace`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    if let Command::SchedDaemon(a) = args.command {
        return daemon::run(a);
    }
    let runtime = fxt_control::runtime_dir()
        .map_err(|e| Error::msg(format!("the runtime directory: {e}")))?;
    match args.command {
        Command::List => list::run(&runtime),
        Command::Start(a) => start::run(&runtime, a),
        Command::Stop(a) => stop::run(&runtime, a),
        Command::Snapshot(a) => snapshot::run(&runtime, a),
        Command::Record(a) => record::run(&runtime, a),
        Command::SchedDaemon(_) => unreachable!("handled above"),
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        command: super::Command,
    }

    #[test]
    fn arguments_are_consistent() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "fxt",
            "record",
            "--duration",
            "0.5",
            "-p",
            "12",
            "--name",
            "a",
            "--mode",
            "circular",
            "--buffer",
            "1M",
            "--sched",
            "-o",
            "x.fxt",
        ]);
        assert!(cli.is_ok());
        assert!(Cli::try_parse_from(["fxt", "start", "--mode", "sometimes"]).is_err());
        assert!(Cli::try_parse_from(["fxt", "start", "--buffer", "lots"]).is_err());
    }
}
