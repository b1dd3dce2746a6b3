//! Detecting a stuck agent: the same tool calls with the same inputs, reply after reply (or
//! several times in one reply). What they return does not matter: a `task_create` loop gets a
//! new id each time, yet it is the loop.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use crew_tools::ToolCallOutcome;

/// Counts identical calls in a row.
#[derive(Debug, Default)]
pub(crate) struct RepeatTracker {
    last: Option<u64>,
    run: u32,
}

impl RepeatTracker {
    /// Records one reply's tool calls (ids and results ignored); returns the current run: the
    /// replies in a row making these same calls, or the copies of one call in this reply,
    /// whichever is more.
    pub fn observe(&mut self, outcomes: &[ToolCallOutcome]) -> u32 {
        let mut reply = DefaultHasher::new();
        let mut copies: HashMap<u64, u32> = HashMap::new();
        for outcome in outcomes {
            let mut call = DefaultHasher::new();
            outcome.name.hash(&mut call);
            outcome.original_input.to_string().hash(&mut call);
            let call = call.finish();
            call.hash(&mut reply);
            *copies.entry(call).or_default() += 1;
        }
        let key = reply.finish();
        if self.last == Some(key) {
            self.run += 1;
        } else {
            self.last = Some(key);
            self.run = 1;
        }
        self.run = self.run.max(copies.into_values().max().unwrap_or(0));
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
    fn a_run_counts_identical_calls_whatever_they_return() {
        let mut tracker = RepeatTracker::default();
        assert_eq!(tracker.observe(&[outcome("1", "a", "missing")]), 1);
        assert_eq!(tracker.observe(&[outcome("2", "a", "missing")]), 2);
        assert_eq!(
            tracker.observe(&[outcome("3", "a", "created task_7")]),
            3,
            "a different result is still the same call"
        );
        assert_eq!(
            tracker.observe(&[outcome("4", "b", "found")]),
            1,
            "input changed"
        );
        assert_eq!(tracker.observe(&[outcome("5", "b", "found")]), 2);
        assert_eq!(
            tracker.observe(&[outcome("6", "b", "x"), outcome("7", "c", "y")]),
            1,
            "another set of calls"
        );
    }

    #[test]
    fn copies_of_one_call_in_one_reply_count_too() {
        let mut tracker = RepeatTracker::default();
        let copies: Vec<_> = (0..4).map(|i| outcome(&i.to_string(), "a", "ok")).collect();
        assert_eq!(tracker.observe(&copies), 4);
        assert_eq!(tracker.observe(&copies), 5);
        assert_eq!(
            tracker.observe(&[outcome("8", "a", "x"), outcome("9", "b", "y")]),
            1
        );
    }
}
