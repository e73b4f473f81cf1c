//! Helpers every `fxt trace` subcommand shares (kept here, below them, so
//! that no subcommand borrows from another): errors worded once, the
//! folders they create, and what a provider's answer means.

use std::path::{Path, PathBuf};

use fxt_control::Response;

use super::state::StateError;
use crate::error::Error;
use crate::recording::spool::Spool;

/// The state error as the command's error.
pub fn state_error(e: StateError) -> Error {
    Error::msg(e.to_string())
}

/// The folder `output` is written in.
pub fn parent_of(output: &Path) -> PathBuf {
    match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A private folder (a spool) in `parent`; `what` names it in the error.
pub fn create_folder(parent: &Path, what: &str) -> Result<Spool, Error> {
    Spool::create(parent).map_err(|e| {
        Error::msg(format!(
            "cannot create a {what} folder in {}: {e}",
            parent.display()
        ))
    })
}

/// Why a provider's answer is not the one wanted (`None`: it is).
pub fn refusal(
    answer: Result<Response, String>,
    wanted: impl Fn(&Response) -> bool,
) -> Option<String> {
    match answer {
        Ok(r) if wanted(&r) => None,
        Ok(Response::Error(why)) => Some(why),
        Ok(_) => Some("unexpected answer".into()),
        Err(why) => Some(why),
    }
}

/// The exit status of a command whose archive lacks some providers
/// (named on stderr): written, but not whole.
pub const PARTIAL: u8 = 1;
