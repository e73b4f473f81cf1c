//! A progress bar for long work, shown only on a terminal and only once the
//! work has taken more than a second; warnings printed while it is visible
//! do not tear it.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before the bar appears.
const DELAY: Duration = Duration::from_secs(1);
/// Records between two looks at the clock.
const TICK_EVERY: u32 = 1 << 12;

/// Byte progress of one pass over an input.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    terminal: bool,
    shown: bool,
    ticks: u32,
}

impl Progress {
    /// A hidden bar for `what` over `total` bytes (a spinner if unknown).
    pub fn new(what: &str, total: Option<u64>) -> Progress {
        let bar = match total {
            Some(t) => ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::hidden())
                .with_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                ),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(
                ProgressStyle::with_template("{spinner} {msg} {bytes} ({bytes_per_sec})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        bar.set_message(what.to_owned());
        Progress {
            bar,
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            shown: false,
            ticks: 0,
        }
    }

    /// Notes that `position` bytes are done (cheap: looks at the clock
    /// once every few thousand calls).
    #[inline]
    pub fn tick(&mut self, position: u64) {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(TICK_EVERY) {
            self.update(position);
        }
    }

    /// Notes that `position` bytes are done, now.
    pub fn update(&mut self, position: u64) {
        if !self.terminal {
            return;
        }
        if !self.shown && self.started.elapsed() >= DELAY {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_position(position);
    }

    /// Prints `fxt: warning: {message}` on stderr.
    pub fn warn(&self, message: &str) {
        self.bar.suspend(|| eprintln!("fxt: warning: {message}"));
    }

    /// Removes the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
