// SPDX-License-Identifier: MIT OR Apache-2.0
//! Progress of long transfers (`nvmedl read/write/verify`): a line on standard error, redrawn at
//! most every [`INTERVAL`], when `--progress` asks for it or (`auto`) when standard error is a
//! terminal. Never on standard output, which scripts parse.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::ValueEnum;

/// How often the progress line is redrawn.
pub const INTERVAL: Duration = Duration::from_millis(250);

/// `--progress` values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    /// When standard error is a terminal.
    #[default]
    Auto,
    /// Always (one line per update when standard error is not a terminal).
    Always,
    /// Never.
    Never,
}

/// One transfer's progress reporter.
pub struct Progress {
    what: &'static str,
    total: u64,
    done: u64,
    start: Instant,
    last: Option<Instant>,
    enabled: bool,
    tty: bool,
}

impl Progress {
    /// A reporter for `total` bytes of `what` ("read", "write", "verify").
    pub fn new(mode: ProgressMode, what: &'static str, total: u64) -> Self {
        let tty = std::io::stderr().is_terminal();
        let enabled = match mode {
            ProgressMode::Auto => tty,
            ProgressMode::Always => true,
            ProgressMode::Never => false,
        };
        Progress { what, total, done: 0, start: Instant::now(), last: None, enabled, tty }
    }

    /// `n` more bytes moved; redraws when [`INTERVAL`] has passed since the last line.
    pub fn add(&mut self, n: u64) {
        self.done = (self.done + n).min(self.total);
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self.last.is_some_and(|t| now.duration_since(t) < INTERVAL) {
            return;
        }
        self.last = Some(now);
        self.draw(now);
    }

    /// The final line (only if a line was drawn before: short transfers stay silent).
    pub fn finish(&mut self) {
        if self.enabled && self.last.is_some() {
            self.draw(Instant::now());
            if self.tty {
                eprintln!();
            }
        }
    }

    fn draw(&self, now: Instant) {
        let line = render(self.what, self.done, self.total, now.duration_since(self.start));
        let mut err = std::io::stderr().lock();
        // A progress line that cannot be written is not worth failing the transfer for.
        let _ = if self.tty { write!(err, "\r{line}") } else { writeln!(err, "{line}") };
        let _ = err.flush();
    }
}

/// `read 12.0/100.0 MiB (12%) 85.3 MB/s`.
pub fn render(what: &str, done: u64, total: u64, elapsed: Duration) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    let pct = done.saturating_mul(100).checked_div(total).unwrap_or(100);
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { done as f64 / secs / 1e6 } else { 0.0 };
    format!("{what} {:.1}/{:.1} MiB ({pct}%) {rate:.1} MB/s", done as f64 / MIB, total as f64 / MIB)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_fraction_and_rate() {
        assert_eq!(render("read", 1 << 20, 4 << 20, Duration::from_secs(1)), "read 1.0/4.0 MiB (25%) 1.0 MB/s");
        assert_eq!(render("write", 0, 0, Duration::ZERO), "write 0.0/0.0 MiB (100%) 0.0 MB/s");
    }

    #[test]
    fn counts_never_pass_the_total_and_never_mode_stays_silent() {
        let mut p = Progress::new(ProgressMode::Never, "read", 10);
        p.add(7);
        p.add(7);
        assert_eq!(p.done, 10);
        assert!(p.last.is_none());
        p.finish();
    }

    #[test]
    fn always_mode_draws_at_most_once_per_interval() {
        let mut p = Progress::new(ProgressMode::Always, "read", 1 << 30);
        p.add(1);
        let first = p.last.expect("first update draws");
        p.add(1);
        assert_eq!(p.last, Some(first), "a second update within the interval does not redraw");
    }
}
