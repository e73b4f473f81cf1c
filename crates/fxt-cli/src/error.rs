//! The error that ends a command: a message for stderr, and whether it was
//! only the reader of stdout going away (`fxt dump big.fxt | head`), which
//! is not a failure.

use std::fmt;
use std::io;

/// An error that ends the command (exit status 2). One word: a result
/// with it (`Result<(), Error>`) is returned in registers, not stored by
/// the callee and read back by its caller.
pub struct Error(Box<Inner>);

struct Inner {
    message: String,
    broken_pipe: bool,
    in_file_order: bool,
}

impl Error {
    /// An error with a message.
    pub fn msg(message: impl Into<String>) -> Error {
        Error(Box::new(Inner {
            message: message.into(),
            broken_pipe: false,
            in_file_order: false,
        }))
    }

    /// Not a failure: a walk of ranges met a record that its command reads
    /// only in file order (`fxt stats` and a CPU sample), so the command
    /// walks the input again in one range. The walk that returns it has
    /// reported nothing.
    pub fn in_file_order() -> Error {
        let mut error = Error::msg("the trace must be read in file order");
        error.0.in_file_order = true;
        error
    }

    /// Whether this is [`Error::in_file_order`].
    pub fn is_in_file_order(&self) -> bool {
        self.0.in_file_order
    }

    /// An I/O error on `what` (a file name or "stdout").
    pub fn io(what: &str, error: io::Error) -> Error {
        Error(Box::new(Inner {
            broken_pipe: error.kind() == io::ErrorKind::BrokenPipe,
            message: format!("{what}: {error}"),
            in_file_order: false,
        }))
    }

    /// Whether the error is a write to a pipe whose reader went away.
    pub fn is_broken_pipe(&self) -> bool {
        self.0.broken_pipe
    }
}

impl From<io::Error> for Error {
    fn from(error: io::Error) -> Error {
        Error::io("output", error)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}
