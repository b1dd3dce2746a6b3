//! Lasting conversations: an agent's history kept in
//! `<repo>/.crew/conversations/<agent>/<key>.jsonl`, one message a line, or in the team's
//! store (a [`ConversationKeeper`] of crew-team's, for a teammate on another host), so a later
//! job, a restarted worker or a crashed one continues where it stopped.
//!
//! Messages are appended as the turn adds them (after the input, each reply and each batch of
//! tool results), so a `kill -9` loses at most the line being written; a torn last line is
//! skipped on load and the history is normalised (a call cut mid-tool gets its interrupted
//! result). When the history changes other than by growing (compaction, normalisation), the
//! file is replaced atomically.

use std::path::{Path, PathBuf};

use crate::normalize::normalize_owned;
use crate::runtime::Agent;
use crew_model::ChatMessage;
use crew_store::StoreError;
use crew_store::conversation::{append_conversation, read_conversation, replace_conversation};
pub use crew_store::conversation::{
    conversation_path, conversations_dir, latest_key, set_latest_key,
};

/// Reads a conversation file: every whole line that parses, normalised. A missing file is an
/// empty conversation; a torn or unreadable line (a crash mid-write) is skipped with a warning.
pub fn load(path: &Path) -> Result<Vec<ChatMessage>, StoreError> {
    Ok(normalize_owned(read_lines(path)?.0))
}

/// The messages of a conversation file as written, and whether every line was whole.
fn read_lines(path: &Path) -> Result<(Vec<ChatMessage>, bool), StoreError> {
    let kept = read_conversation(path)?;
    for skipped in &kept.skipped {
        tracing::warn!(path = %path.display(), "conversation {skipped} skipped");
    }
    Ok((kept.messages, kept.skipped.is_empty()))
}

/// Where one conversation lasts.
pub trait ConversationKeeper: Send + Sync {
    /// Keeps `messages` from position `at` on: an append when `at` is what it holds, the
    /// history anew from 0.
    fn keep(&self, at: usize, messages: &[ChatMessage]) -> Result<(), StoreError>;
}

/// A conversation file.
struct ConversationFile {
    path: PathBuf,
}

impl ConversationKeeper for ConversationFile {
    fn keep(&self, at: usize, messages: &[ChatMessage]) -> Result<(), StoreError> {
        if at == 0 {
            replace_conversation(&self.path, messages)
        } else {
            append_conversation(&self.path, messages)
        }
    }
}

/// Keeps one conversation in step with an agent's history.
pub struct KeptConversation {
    keeper: Box<dyn ConversationKeeper>,
    /// What the keeper holds now (compared to find out whether appending is enough).
    written: Vec<ChatMessage>,
}

impl KeptConversation {
    /// Opens the file at `path`, returning it and the history it holds.
    pub fn open(path: PathBuf) -> Result<(Self, Vec<ChatMessage>), StoreError> {
        let (raw, whole) = read_lines(&path)?;
        let kept = Self::resume(Box::new(ConversationFile { path }), raw, !whole)?;
        Ok(kept)
    }

    /// The conversation `keeper` holds as `raw`, normalised; kept anew when normalising
    /// changed it or `torn` (a crash cut it), so later messages are appended to whole ones.
    pub fn resume(
        keeper: Box<dyn ConversationKeeper>,
        raw: Vec<ChatMessage>,
        torn: bool,
    ) -> Result<(Self, Vec<ChatMessage>), StoreError> {
        let history = normalize_owned(raw.clone());
        let mut kept = KeptConversation {
            keeper,
            written: raw,
        };
        if torn || kept.written != history {
            kept.rewrite(&history)?;
        }
        Ok((kept, history))
    }

    /// Brings the keeper in line with `history`: appends what is new, or keeps it anew when
    /// earlier messages changed.
    pub fn save(&mut self, history: &[ChatMessage]) -> Result<(), StoreError> {
        let grown = history.len() >= self.written.len()
            && history[..self.written.len()] == self.written[..];
        if !grown {
            return self.rewrite(history);
        }
        let new = &history[self.written.len()..];
        if !new.is_empty() {
            self.keeper.keep(self.written.len(), new)?;
        }
        self.written.extend_from_slice(new);
        Ok(())
    }

    fn rewrite(&mut self, history: &[ChatMessage]) -> Result<(), StoreError> {
        self.keeper.keep(0, history)?;
        self.written = history.to_vec();
        Ok(())
    }
}

impl Agent {
    /// Continues the conversation kept at `path` (empty if there is none yet) and keeps the
    /// file in step from now on.
    pub fn resume_from(&mut self, path: PathBuf) -> Result<(), StoreError> {
        let (kept, history) = KeptConversation::open(path)?;
        self.history = history;
        self.conversation = Some(kept);
        Ok(())
    }

    /// Continues the conversation `keeper` holds as `raw` and keeps it in step from now on;
    /// `torn`: some of what it held did not read back, so it is kept anew.
    pub fn resume_with(
        &mut self,
        keeper: Box<dyn ConversationKeeper>,
        raw: Vec<ChatMessage>,
        torn: bool,
    ) -> Result<(), StoreError> {
        let (kept, history) = KeptConversation::resume(keeper, raw, torn)?;
        self.history = history;
        self.conversation = Some(kept);
        Ok(())
    }

    /// Adds a note for the model to the conversation (it reads it with the next input), e.g.
    /// that the person interrupted the last turn.
    pub fn add_note(&mut self, text: &str) {
        self.history
            .push(ChatMessage::user_text(format!("({text})")));
        self.persist();
    }

    /// Writes what the history gained to the conversation file, if there is one. A failure is
    /// logged, not fatal: the turn goes on with the history in memory.
    pub(crate) fn persist(&mut self) {
        if let Some(file) = self.conversation.as_mut()
            && let Err(e) = file.save(&self.history)
        {
            tracing::warn!(agent = %self.name, "conversation not saved: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_model::ContentBlock;
    use std::fs::OpenOptions;
    use std::io::Write;

    #[test]
    fn appends_then_rewrites_and_a_torn_line_or_an_open_call_survive_loading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c/task_1.jsonl");
        let (mut file, history) = KeptConversation::open(path.clone()).unwrap();
        assert!(history.is_empty());
        let mut history = vec![ChatMessage::user_text("go")];
        file.save(&history).unwrap();
        history.push(ChatMessage {
            role: crew_model::Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "t1".into(),
                name: "bash".into(),
                input: serde_json::json!({"command": "sleep 30"}),
            }],
        });
        file.save(&history).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
        // A crash mid-write leaves a torn line.
        let mut raw = OpenOptions::new().append(true).open(&path).unwrap();
        raw.write_all(b"{\"role\":\"us").unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.len(), 3, "{loaded:?}");
        assert_eq!(
            loaded[2].tool_results(),
            vec![("t1", crate::normalize::INTERRUPTED, true)]
        );
        // A history that changed other than by growing replaces the file.
        let (mut file, _) = KeptConversation::open(path.clone()).unwrap();
        file.save(&[ChatMessage::user_text("summary")]).unwrap();
        assert_eq!(
            load(&path).unwrap(),
            vec![ChatMessage::user_text("summary")]
        );
    }

    #[test]
    fn latest_key_round_trips_and_bad_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(latest_key(dir.path(), "alice"), None);
        set_latest_key(dir.path(), "alice", "task_3").unwrap();
        assert_eq!(latest_key(dir.path(), "alice").as_deref(), Some("task_3"));
        assert!(conversation_path(dir.path(), "alice", "../x").is_err());
    }
}
