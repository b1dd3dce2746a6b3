//! Bounded recovery. Each path has its own counter, and the counters reset only on real
//! progress (a complete reply that was not cut short), so two paths cannot keep triggering
//! each other: compaction → max_tokens → continue → prompt too long → … runs out.

/// Continuations after a reply cut at `max_tokens`.
pub const MAX_CONTINUES: u32 = 3;
/// Retries after a reply stream broke mid-way.
pub const MAX_STREAM_RETRIES: u32 = 2;
/// Nudges after an empty reply (no text, no tool call).
pub const MAX_EMPTY_REPLIES: u32 = 2;
/// Failed compactions in a row after which the agent stops trying to compact.
pub const MAX_COMPACTION_FAILURES: u32 = 3;

#[derive(Debug, Default)]
pub(crate) struct Recovery {
    /// Reactive compaction is allowed once per turn, progress or not.
    reactive_used: bool,
    continues: u32,
    stream_retries: u32,
    empty_replies: u32,
}

impl Recovery {
    /// A complete, uncut reply: the per-path counters start over.
    pub fn progress(&mut self) {
        self.continues = 0;
        self.stream_retries = 0;
        self.empty_replies = 0;
    }

    /// Whether reactive compaction may run now (and marks it used).
    pub fn take_reactive(&mut self) -> bool {
        !std::mem::replace(&mut self.reactive_used, true)
    }

    /// The number of this continuation, or `None` when they are used up.
    pub fn take_continue(&mut self) -> Option<u32> {
        bump(&mut self.continues, MAX_CONTINUES)
    }

    /// The number of this nudge, or `None` when they are used up.
    pub fn take_empty_reply(&mut self) -> Option<u32> {
        bump(&mut self.empty_replies, MAX_EMPTY_REPLIES)
    }

    /// The number of this retry, or `None` when they are used up.
    pub fn take_stream_retry(&mut self) -> Option<u32> {
        bump(&mut self.stream_retries, MAX_STREAM_RETRIES)
    }
}

fn bump(counter: &mut u32, max: u32) -> Option<u32> {
    (*counter < max).then(|| {
        *counter += 1;
        *counter
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_bounded_and_reset_only_on_progress() {
        let mut r = Recovery::default();
        assert_eq!(
            (0..5).map(|_| r.take_continue()).collect::<Vec<_>>(),
            [Some(1), Some(2), Some(3), None, None]
        );
        assert_eq!(r.take_stream_retry(), Some(1));
        assert_eq!(r.take_empty_reply(), Some(1));
        assert_eq!(r.take_empty_reply(), Some(2));
        assert_eq!(r.take_empty_reply(), None);
        assert!(r.take_reactive());
        assert!(!r.take_reactive());
        r.progress();
        assert_eq!(r.take_continue(), Some(1));
        assert_eq!(r.take_stream_retry(), Some(1));
        assert_eq!(r.take_empty_reply(), Some(1));
        assert!(!r.take_reactive(), "once per turn, progress or not");
    }
}
