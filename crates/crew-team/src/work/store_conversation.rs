//! An agent's lasting conversation kept in the team's store rather than in a file of its host,
//! for a teammate that joined from another machine: whichever host runs the agent next (after a
//! crash, a lease that lapsed, a move) resumes it from the store.

use crew_agent::conversation::ConversationKeeper;
use crew_model::ChatMessage;
use crew_store::{AgentName, StoreError};

use crate::run::link::{LinkedStore, TeamLink};

/// Conversation `key` of agent `who`, in the store.
pub(crate) struct StoreConversation<S: LinkedStore> {
    pub link: TeamLink<S>,
    pub who: AgentName,
    pub key: String,
}

impl<S: LinkedStore> StoreConversation<S> {
    /// What the store holds of it, and whether a message did not read back (kept anew then).
    pub(crate) fn load(&self) -> Result<(Vec<ChatMessage>, bool), StoreError> {
        let (who, key) = (self.who.clone(), self.key.clone());
        let kept = self
            .link
            .call(|store| async move { store.conversation(&who, &key).await })?;
        let mut messages = Vec::with_capacity(kept.len());
        let mut unreadable = false;
        for value in kept {
            match serde_json::from_value(value) {
                Ok(message) => messages.push(message),
                Err(e) => {
                    tracing::warn!(agent = %self.who, key = %self.key, "a kept message does not read back: {e}");
                    unreadable = true;
                }
            }
        }
        Ok((messages, unreadable))
    }
}

impl<S: LinkedStore> ConversationKeeper for StoreConversation<S> {
    fn keep(&self, at: usize, messages: &[ChatMessage]) -> Result<(), StoreError> {
        let values = messages
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        let (who, key) = (self.who.clone(), self.key.clone());
        self.link
            .call(|store| async move { store.keep_conversation(&who, &key, at, &values).await })
    }
}
