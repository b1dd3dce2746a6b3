//! What an agent shares with the subagents it starts: what they spent (counted in the caller's
//! turn, so its budget bounds them too), and what a fork starts from — the caller's last model
//! request and the reply that asked for the subagent. The fork's first request is that
//! request's system prompt, tools and messages unchanged, then the reply, then placeholder
//! results for the reply's calls and the fork's directive — so everything the caller sent last
//! is a byte-identical prefix of it.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crew_model::{ChatMessage, ContentBlock, ModelRequest, Usage};

/// The result a fork sees for each call of the reply it was forked from (its own included):
/// the same text for every call, so forks started by one reply share their prefix too.
pub const FORK_PLACEHOLDER: &str = "(forked: a subagent carries on from here)";

/// The caller's side: updated before each model call and after each reply.
#[derive(Debug, Default)]
pub(crate) struct SubagentLink {
    last: Mutex<Option<(ModelRequest, Option<ChatMessage>)>>,
    spent: Mutex<Usage>,
}

impl SubagentLink {
    /// A subagent ended having used `usage`.
    pub fn add_spent(&self, usage: Usage) {
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner) += usage;
    }

    /// What subagents used since the last call, for the caller's turn to count.
    pub fn take_spent(&self) -> Usage {
        std::mem::take(&mut *self.spent.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The caller is about to send `request`.
    pub fn record_request(&self, request: &ModelRequest) {
        *self.lock() = Some((request.clone(), None));
    }

    /// The reply to the recorded request is complete.
    pub fn record_reply(&self, reply: &ChatMessage) {
        if let Some((_, slot)) = self.lock().as_mut() {
            *slot = Some(reply.clone());
        }
    }

    /// The request a fork starts from (its messages end with the placeholder results), or
    /// `None` when the caller has not made a call with a complete reply yet.
    pub fn fork_request(&self) -> Option<ModelRequest> {
        let guard = self.lock();
        let (request, reply) = guard.as_ref()?;
        let reply = reply.as_ref()?;
        let results = reply
            .tool_uses()
            .into_iter()
            .map(|(id, _, _)| ContentBlock::tool_result(id, FORK_PLACEHOLDER, false))
            .collect();
        let mut fork = request.clone();
        fork.messages.push(reply.clone());
        fork.messages.push(ChatMessage::user_tool_results(results));
        Some(fork)
    }

    fn lock(&self) -> MutexGuard<'_, Option<(ModelRequest, Option<ChatMessage>)>> {
        // Each write replaces the value whole: a poisoned lock still holds a valid one.
        self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
