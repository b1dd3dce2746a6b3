//! Lasting conversations: an agent's history kept in
//! `<repo>/.crew/conversations/<agent>/<key>.jsonl`, one message a line, so a later job, a
//! restarted worker or a crashed one continues where it stopped.
//!
//! Messages are appended as the turn adds them (after the input, each reply and each batch of
//! tool results), so a `kill -9` loses at most the line being written; a torn last line is
//! skipped on load and the history is normalised (a call cut mid-tool gets its interrupted
//! result). When the history changes other than by growing (compaction, normalisation), the
//! file is replaced atomically.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::normalize::normalize_owned;
use crate::runtime::Agent;
use crew_model::ChatMessage;
use crew_protocol::validate_name;
use crew_store::atomic::write_atomic;
use crew_store::secrets::redact_bytes;

#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    #[error("conversation {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("conversation key: {0}")]
    Key(#[from] crew_protocol::InvalidName),
}

/// `<repo_root>/.crew/conversations/<agent>`.
pub fn conversations_dir(repo_root: &Path, agent: &str) -> PathBuf {
    repo_root.join(".crew/conversations").join(agent)
}

/// The file of one conversation; `key` must be a valid crew name (a task id, `lead`, …).
pub fn conversation_path(
    repo_root: &Path,
    agent: &str,
    key: &str,
) -> Result<PathBuf, ConversationError> {
    validate_name("conversation key", key)?;
    Ok(conversations_dir(repo_root, agent).join(format!("{key}.jsonl")))
}

/// The key of the conversation this agent had last (for a message that names no task).
pub fn latest_key(repo_root: &Path, agent: &str) -> Option<String> {
    let text = std::fs::read_to_string(conversations_dir(repo_root, agent).join("latest")).ok()?;
    let key = text.trim().to_string();
    validate_name("conversation key", &key).ok()?;
    Some(key)
}

/// Remembers `key` as the agent's latest conversation.
pub fn set_latest_key(repo_root: &Path, agent: &str, key: &str) -> Result<(), ConversationError> {
    let dir = conversations_dir(repo_root, agent);
    let io = |source| ConversationError::Io {
        path: dir.join("latest"),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    write_atomic(&dir.join("latest"), key.as_bytes()).map_err(io)
}

/// Reads a conversation file: every whole line that parses, normalised. A missing file is an
/// empty conversation; a torn or unreadable line (a crash mid-write) is skipped with a warning.
pub fn load(path: &Path) -> Result<Vec<ChatMessage>, ConversationError> {
    Ok(normalize_owned(read_lines(path)?.0))
}

/// The messages of a conversation file as written, and whether every line was whole.
fn read_lines(path: &Path) -> Result<(Vec<ChatMessage>, bool), ConversationError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), true)),
        Err(source) => {
            return Err(ConversationError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut messages = Vec::new();
    let mut whole = true;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| ConversationError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<ChatMessage>(&line) {
            Ok(message) => messages.push(message),
            Err(e) => {
                whole = false;
                tracing::warn!(
                    path = %path.display(),
                    line = index + 1,
                    "conversation line skipped: {e}"
                );
            }
        }
    }
    Ok((messages, whole))
}

/// Keeps one conversation file in step with an agent's history.
#[derive(Debug)]
pub struct ConversationFile {
    path: PathBuf,
    /// What the file holds now (compared to find out whether appending is enough).
    written: Vec<ChatMessage>,
}

impl ConversationFile {
    /// Opens `path`, returning the file and the history it holds.
    pub fn open(path: PathBuf) -> Result<(Self, Vec<ChatMessage>), ConversationError> {
        let (raw, whole) = read_lines(&path)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| ConversationError::Io {
                path: path.clone(),
                source,
            })?;
        }
        let history = normalize_owned(raw.clone());
        let mut file = ConversationFile { path, written: raw };
        // A file cut by a crash is replaced by the normalised history it resumes from, so
        // later lines are appended to whole ones.
        if !whole || file.written != history {
            file.rewrite(&history)?;
        }
        Ok((file, history))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Brings the file in line with `history`: appends what is new, or replaces the file when
    /// earlier messages changed.
    pub fn save(&mut self, history: &[ChatMessage]) -> Result<(), ConversationError> {
        let grown = history.len() >= self.written.len()
            && history[..self.written.len()] == self.written[..];
        if !grown {
            return self.rewrite(history);
        }
        let new = &history[self.written.len()..];
        if new.is_empty() {
            return Ok(());
        }
        let io = |source| ConversationError::Io {
            path: self.path.clone(),
            source,
        };
        let bytes = lines(new).map_err(io)?;
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(io)?;
        file.write_all(&bytes).map_err(io)?;
        self.written.extend_from_slice(new);
        Ok(())
    }

    fn rewrite(&mut self, history: &[ChatMessage]) -> Result<(), ConversationError> {
        let io = |source| ConversationError::Io {
            path: self.path.clone(),
            source,
        };
        write_atomic(&self.path, &lines(history).map_err(io)?).map_err(io)?;
        self.written = history.to_vec();
        Ok(())
    }
}

/// Messages as redacted JSON lines.
fn lines(messages: &[ChatMessage]) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    for message in messages {
        serde_json::to_writer(&mut bytes, message).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
    }
    Ok(redact_bytes(&bytes).into_owned())
}

impl Agent {
    /// Continues the conversation kept at `path` (empty if there is none yet) and keeps the
    /// file in step from now on.
    pub fn resume_from(&mut self, path: PathBuf) -> Result<(), ConversationError> {
        let (file, history) = ConversationFile::open(path)?;
        self.history = history;
        self.conversation = Some(file);
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

    #[test]
    fn appends_then_rewrites_and_a_torn_line_or_an_open_call_survive_loading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c/task_1.jsonl");
        let (mut file, history) = ConversationFile::open(path.clone()).unwrap();
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
        let (mut file, _) = ConversationFile::open(path.clone()).unwrap();
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
