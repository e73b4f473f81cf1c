//! One module per subcommand. Each exports `Args` (its clap arguments) and
//! `run(Args) -> Result<ExitCode, Error>`, and imports only the shared
//! modules below it (`crate::error`, `crate::input`, ...), never another
//! command: what two commands share moves down into a module of its own
//! (`tests/layers.rs` checks it).

pub mod check;
pub mod convert;
pub mod diff;
pub mod dump;
pub mod export;
pub mod flame;
pub mod json;
pub mod merge;
pub mod open;
#[cfg(unix)]
pub mod record;
pub mod recover;
pub mod stats;
pub mod symbolize;
#[cfg(unix)]
pub mod trace;
