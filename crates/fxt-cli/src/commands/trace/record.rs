//! `fxt trace record --duration SECONDS`: start, wait, stop in one
//! command; SIGINT (Ctrl-C) or SIGTERM ends the window early, and the
//! archive is still written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::{interrupt, start, stop};
use crate::error::Error;

/// Arguments of `fxt trace record`.
#[derive(clap::Args)]
pub struct Args {
    /// How long the window stays open (seconds; fractions allowed).
    #[arg(long, value_parser = parse_duration)]
    duration: Duration,
    /// The archive to write.
    #[arg(short, long, default_value = "trace.fxt")]
    output: PathBuf,
    #[command(flatten)]
    start: start::Args,
}

/// Seconds as a duration: finite, not negative, at most a year.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|_| format!("not a number: {s:?}"))?;
    if !(0.0..=365.0 * 86_400.0).contains(&secs) {
        return Err(format!("{s} seconds: want 0 to one year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Runs `fxt trace record`.
pub fn run(runtime: &Path, args: Args) -> Result<ExitCode, Error> {
    interrupt::install();
    interrupt::hold(true);
    start::open(runtime, &args.start)?;
    interrupt::hold(false);
    if interrupt::wait_until(Some(Instant::now() + args.duration)) {
        eprintln!("fxt trace: interrupted: the window ends now");
    }
    interrupt::hold(true);
    stop::close(runtime, &args.output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        for bad in ["-1", "nan", "inf", "1e99", "soon"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
