//! Progress on stderr while probes run: a bar on a terminal, nothing otherwise; and each probe's
//! results stored as soon as it completes.

use crate::cmd::session::Session;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oslab_core::model::Measurement;
use oslab_probes::runner::Sink;
use oslab_probes::Probe;
use std::io::IsTerminal;

/// Draws one bar over the probes of a run, and stores their results as they complete.
pub struct Progress<'a> {
    bar: ProgressBar,
    session: &'a Session,
}

impl<'a> Progress<'a> {
    /// A bar for `total` probes; hidden when stderr is not a terminal.
    pub fn new(total: usize, session: &'a Session) -> Progress<'a> {
        let bar = ProgressBar::new(total as u64);
        if std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
        } else {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        Progress { bar, session }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Sink for Progress<'_> {
    fn started(&mut self, probe: &Probe, index: usize, _total: usize) {
        self.bar.set_position(index as u64);
        self.bar.set_message(probe.id);
    }

    fn finished(&mut self, _probe: &Probe, results: &[Measurement]) {
        self.session.append(results);
        self.bar.inc(1);
    }

    fn retrying(&mut self, probe: &Probe, attempt: u32) {
        self.bar.set_message(format!(
            "{} again (attempt {attempt}: it was noisy)",
            probe.id
        ));
    }
}
