//! The model's context window. crew's defaults suit a 200k-token model; a local model may have
//! 4k. The window comes from the server (asked once, before the first call), the configuration
//! and overflow errors that name it; the smallest known wins, and compaction and the output
//! limit follow it.

use tokio_util::sync::CancellationToken;

use crate::config::{CompactionThresholds, Limits};
use crate::runtime::Agent;

/// What is known of the window, and the configured values the thresholds start from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    asked: bool,
    tokens: Option<u64>,
    compact_at_tokens: u64,
    summary_max_tokens: u32,
    max_output_tokens: u32,
}

impl Window {
    pub(crate) fn new(limits: &Limits, compaction: &CompactionThresholds) -> Self {
        Self {
            asked: false,
            tokens: None,
            compact_at_tokens: compaction.compact_at_tokens,
            summary_max_tokens: compaction.summary_max_tokens,
            max_output_tokens: limits.max_output_tokens,
        }
    }
}

/// The thresholds for a window of `window` tokens: a reply may take a quarter of it, and
/// compaction starts at 70% of the rest (the byte estimate runs low on code for small
/// models' tokenizers). Never above what was configured.
pub(crate) fn fitted(base: &Window, window: u64) -> (u64, u32, u32) {
    let quarter = u32::try_from(window / 4).unwrap_or(u32::MAX).max(1);
    let max_output = base.max_output_tokens.min(quarter);
    let summary = base.summary_max_tokens.min(quarter);
    let room = window.saturating_sub(u64::from(max_output));
    let compact_at = base.compact_at_tokens.min(room * 7 / 10);
    (compact_at, max_output, summary)
}

impl Agent {
    /// Asks the server for the window, once; the configured one counts as well.
    pub(crate) async fn ask_window(&mut self, cancel: &CancellationToken) {
        if std::mem::replace(&mut self.window.asked, true) {
            return;
        }
        let reported = tokio::select! {
            window = self.model.context_window() => window,
            _ = cancel.cancelled() => None,
        };
        if let Some(window) = reported {
            tracing::info!(agent = %self.name, window, "the server reports the context window");
            self.fit_window(window);
        }
        if let Some(window) = self.compaction.context_window {
            self.fit_window(window);
        }
    }

    /// Takes `window` as the context window when it is smaller than the one known.
    pub(crate) fn fit_window(&mut self, window: u64) {
        if self.window.tokens.is_some_and(|known| known <= window) {
            return;
        }
        self.window.tokens = Some(window);
        let (compact_at, max_output, summary) = fitted(&self.window, window);
        self.compaction.compact_at_tokens = compact_at;
        self.compaction.summary_max_tokens = summary;
        self.limits.max_output_tokens = max_output;
        tracing::info!(
            agent = %self.name,
            window,
            compact_at,
            max_output,
            "thresholds follow the context window"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_follow_a_small_window_and_never_rise_above_the_configured() {
        let base = Window::new(&Limits::default(), &CompactionThresholds::default());
        assert_eq!(fitted(&base, 4096), (2150, 1024, 1024));
        let (compact_at, max_output, summary) = fitted(&base, 1_000_000);
        assert_eq!(compact_at, 160_000);
        assert_eq!(max_output, 16_384);
        assert_eq!(summary, 4_096);
        assert_eq!(fitted(&base, 0), (0, 1, 1));
    }
}
