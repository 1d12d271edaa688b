//! Progress on stderr while probes run: a bar on a terminal, a line every 10 s otherwise.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oslab_core::model::Measurement;
use oslab_probes::registry::Remaining;
use oslab_probes::runner::Sink;
use oslab_probes::Probe;
use std::io::IsTerminal;

/// Draws one bar over the probes of a run.
pub struct Progress {
    bar: ProgressBar,
    /// Without a terminal: when the last progress line was written (a CI log is not silent for
    /// minutes), or None on a terminal, where the bar says it.
    logged: Option<std::time::Instant>,
    /// The plan, and how much of it has completed.
    remaining: oslab_probes::registry::Remaining,
    /// What the bar says after the estimate.
    message: String,
}

/// How often a progress line is written when stderr is not a terminal.
const LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Bar units per planned second.
const SCALE: f64 = 100.0;

impl Progress {
    /// A bar over `probes` (planned with `cx`), advancing by each one's planned seconds;
    /// hidden when stderr is not a terminal.
    pub fn new(
        probes: &[&'static Probe],
        repetitions: u32,
        cx: &oslab_probes::Context,
    ) -> Progress {
        let remaining = Remaining::new(&oslab_probes::registry::plan(probes, cx), repetitions);
        let total = remaining.total();
        let bar = ProgressBar::new((total * SCALE) as u64);
        // A bar redraws its line with cursor codes: not on a terminal that has none.
        let terminal =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        if terminal {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{elapsed:>4} [{bar:24}] {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
        } else {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        Progress {
            bar,
            logged: (!terminal).then(std::time::Instant::now),
            remaining,
            message: String::new(),
        }
    }

    fn left(&self) -> f64 {
        self.remaining.left(self.bar.elapsed().as_secs_f64())
    }

    fn show(&self) {
        self.bar.set_message(format!(
            "about {} left  {}",
            oslab_core::units::duration(self.left()),
            self.message
        ));
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Sink for Progress {
    fn started(&mut self, probe: &Probe, index: usize, total: usize) {
        self.message = format!("{}/{total} {}", index + 1, probe.id());
        self.show();
        if self.logged.is_some_and(|t| t.elapsed() >= LOG_EVERY) {
            eprintln!(
                "progress: probe {}/{total} ({}), {:.0} s in, about {} left",
                index + 1,
                probe.id(),
                self.bar.elapsed().as_secs_f64(),
                oslab_core::units::duration(self.left())
            );
            self.logged = Some(std::time::Instant::now());
        }
    }

    fn finished(&mut self, probe: &Probe, _results: &[Measurement]) {
        let elapsed = self.bar.elapsed().as_secs_f64();
        let planned = self.remaining.finished(probe.id(), elapsed);
        self.bar.inc((planned * SCALE) as u64);
        self.show();
    }

    fn retrying(&mut self, probe: &Probe, attempt: u32) {
        self.message = format!("{} again (attempt {attempt}: it was noisy)", probe.id());
        self.show();
    }
}
