//! Progress bars and spinners on standard error, hidden when the output is JSON.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

pub(super) fn progress_bar(quiet: bool, total: Option<u64>) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = match total {
        Some(total) => ProgressBar::new(total),
        None => ProgressBar::no_length(),
    };
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {percent:>3}% {elapsed_precise} {msg}") {
        bar.set_style(style);
    }
    bar
}

pub(super) fn progress_spinner(quiet: bool, message: &'static str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let spinner = ProgressBar::new_spinner().with_message(message);
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner
}
