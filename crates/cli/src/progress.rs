//! Progress bars of the long commands (report, dump, rules): drawn on standard error only
//! when it is a terminal, hidden otherwise so that logs and pipes stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A bar over `len` units of `what`, hidden unless standard error is a terminal (and
/// `visible`).
pub fn bar(len: u64, what: &str, visible: bool) -> ProgressBar {
    let bar = if visible && std::io::stderr().is_terminal() {
        ProgressBar::new(len)
    } else {
        ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden())
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {{msg}} [{{bar:30}}] {{pos}}/{{len}} {what}  {{elapsed}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// A spinner with a message, for work of unknown length; hidden unless standard error is a
/// terminal (and `visible`).
pub fn spinner(message: &str, visible: bool) -> ProgressBar {
    let bar = if visible && std::io::stderr().is_terminal() {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg}  {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(message.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// The report's phases on one bar.
pub struct ReportBar(pub ProgressBar);

impl smdebug_report::Progress for ReportBar {
    fn phase(&self, name: &str, total: u64) {
        self.0.set_message(name.to_owned());
        self.0.set_position(0);
        self.0.set_length(total);
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}
