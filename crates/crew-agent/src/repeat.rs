//! Detecting a stuck agent: the same tool calls, with the same inputs, giving the same
//! results, reply after reply.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use crew_tools::ToolCallOutcome;

/// Counts how many replies in a row made identical calls with identical results.
#[derive(Debug, Default)]
pub(crate) struct RepeatTracker {
    last: Option<u64>,
    run: u32,
}

impl RepeatTracker {
    /// Records one reply's tool outcomes (ids ignored); returns the current run length.
    pub fn observe(&mut self, outcomes: &[ToolCallOutcome]) -> u32 {
        let mut hasher = DefaultHasher::new();
        for outcome in outcomes {
            outcome.name.hash(&mut hasher);
            outcome.original_input.to_string().hash(&mut hasher);
            outcome.output.content.hash(&mut hasher);
            outcome.output.is_error.hash(&mut hasher);
        }
        let key = hasher.finish();
        if self.last == Some(key) {
            self.run += 1;
        } else {
            self.last = Some(key);
            self.run = 1;
        }
        self.run
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_tools::ToolCall;
    use serde_json::json;

    fn outcome(id: &str, path: &str, result: &str) -> ToolCallOutcome {
        let call = ToolCall {
            id: id.into(),
            name: "read".into(),
            input: json!({ "path": path }),
        };
        ToolCallOutcome::cancelled(&call, result)
    }

    #[test]
    fn a_run_counts_identical_calls_and_results_only() {
        let mut tracker = RepeatTracker::default();
        assert_eq!(tracker.observe(&[outcome("1", "a", "missing")]), 1);
        assert_eq!(tracker.observe(&[outcome("2", "a", "missing")]), 2);
        assert_eq!(
            tracker.observe(&[outcome("3", "a", "found")]),
            1,
            "result changed"
        );
        assert_eq!(
            tracker.observe(&[outcome("4", "b", "found")]),
            1,
            "input changed"
        );
        assert_eq!(tracker.observe(&[outcome("5", "b", "found")]), 2);
    }
}
