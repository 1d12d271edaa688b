//! Progress on stderr while probes run: a bar on a terminal, nothing otherwise; and each probe's
//! results stored as soon as it completes.

use crate::cmd::session::RecordedSession;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oslab_core::model::Measurement;
use oslab_probes::runner::Sink;
use oslab_probes::Probe;
use std::io::IsTerminal;

/// Draws one bar over the probes of a run, and stores their results as they complete.
pub struct Progress<'a> {
    bar: ProgressBar,
    session: &'a RecordedSession,
    /// Without a terminal: when the last progress line was written (a CI log is not silent for
    /// minutes), or None on a terminal, where the bar says it.
    logged: Option<std::time::Instant>,
}

/// How often a progress line is written when stderr is not a terminal.
const LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Bar units per unit of relative cost (the bar advances by each probe's expected share).
const SCALE: f64 = 100.0;

impl<'a> Progress<'a> {
    /// A bar over `probes`, advancing by each one's expected cost so the time-left estimate
    /// holds; hidden when stderr is not a terminal.
    pub fn new(probes: &[&Probe], repetitions: u32, session: &'a RecordedSession) -> Progress<'a> {
        let once: f64 = probes.iter().map(|p| p.cost).sum();
        let total = once * repetitions as f64;
        let bar = ProgressBar::new((total * SCALE) as u64);
        let terminal = std::io::stderr().is_terminal();
        if terminal {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{elapsed:>4} [{bar:30}] about {eta} left  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
        } else {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        Progress {
            bar,
            session,
            logged: (!terminal).then(std::time::Instant::now),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Sink for Progress<'_> {
    fn started(&mut self, probe: &Probe, index: usize, total: usize) {
        self.bar
            .set_message(format!("{}/{total} {}", index + 1, probe.id));
        if self.logged.is_some_and(|t| t.elapsed() >= LOG_EVERY) {
            eprintln!(
                "progress: probe {}/{total} ({}), {:.0} s in",
                index + 1,
                probe.id,
                self.bar.elapsed().as_secs_f64()
            );
            self.logged = Some(std::time::Instant::now());
        }
    }

    fn finished(&mut self, probe: &Probe, results: &[Measurement]) {
        self.session.append(results);
        self.bar.inc((probe.cost * SCALE) as u64);
    }

    fn retrying(&mut self, probe: &Probe, attempt: u32) {
        self.bar.set_message(format!(
            "{} again (attempt {attempt}: it was noisy)",
            probe.id
        ));
    }
}
