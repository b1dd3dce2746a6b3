//! Lasting conversations on files: `<repo>/.crew/conversations/<agent>/<key>.jsonl`, one
//! message a line, and `latest` beside them, the key the agent kept last. The messages are the
//! agent loop's; this layer keeps them as redacted JSON lines, appended as the history grows
//! (a `kill -9` loses at most the line being written) and replaced atomically when it changed
//! otherwise.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::StoreError;
use crate::atomic::write_atomic;
use crate::secrets::redact_bytes;
use crew_protocol::{InvalidName, validate_name};

/// `<root>/.crew/conversations/<agent>`.
pub fn conversations_dir(root: &Path, agent: &str) -> PathBuf {
    root.join(".crew/conversations").join(agent)
}

/// The file of one conversation; `key` must be a valid crew name (a task id, `lead`, …).
pub fn conversation_path(root: &Path, agent: &str, key: &str) -> Result<PathBuf, InvalidName> {
    validate_name("conversation key", key)?;
    Ok(conversations_dir(root, agent).join(format!("{key}.jsonl")))
}

/// What a conversation file holds: each whole line that parses, and what was passed over (a
/// line torn by a crash mid-write), as `line N: why`.
#[derive(Debug)]
pub struct KeptLines<T> {
    pub messages: Vec<T>,
    pub skipped: Vec<String>,
}

/// Reads a conversation file; a missing one is empty.
pub fn read_conversation<T: DeserializeOwned>(path: &Path) -> Result<KeptLines<T>, StoreError> {
    let mut kept = KeptLines {
        messages: Vec::new(),
        skipped: Vec::new(),
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(kept),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| StoreError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(message) => kept.messages.push(message),
            Err(e) => kept.skipped.push(format!("line {}: {e}", index + 1)),
        }
    }
    Ok(kept)
}

/// Appends `messages` to the file (made, with its folder, if need be).
pub fn append_conversation<T: Serialize>(path: &Path, messages: &[T]) -> Result<(), StoreError> {
    if messages.is_empty() {
        return Ok(());
    }
    let bytes = lines(path, messages)?;
    make_dir(path)?;
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut file| file.write_all(&bytes))
        .map_err(|e| StoreError::io(path, e))
}

/// Replaces the file with `messages`, atomically.
pub fn replace_conversation<T: Serialize>(path: &Path, messages: &[T]) -> Result<(), StoreError> {
    let bytes = lines(path, messages)?;
    make_dir(path)?;
    write_atomic(path, &bytes).map_err(|e| StoreError::io(path, e))
}

/// The key of the conversation `agent` kept last, if any.
pub fn latest_key(root: &Path, agent: &str) -> Option<String> {
    let text = std::fs::read_to_string(conversations_dir(root, agent).join("latest")).ok()?;
    let key = text.trim().to_string();
    validate_name("conversation key", &key).ok()?;
    Some(key)
}

/// Remembers `key` as `agent`'s latest conversation.
pub fn set_latest_key(root: &Path, agent: &str, key: &str) -> Result<(), StoreError> {
    validate_name("conversation key", key)?;
    let path = conversations_dir(root, agent).join("latest");
    make_dir(&path)?;
    write_atomic(&path, key.as_bytes()).map_err(|e| StoreError::io(&path, e))
}

fn make_dir(path: &Path) -> Result<(), StoreError> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e)),
        None => Ok(()),
    }
}

/// Messages as redacted JSON lines.
fn lines<T: Serialize>(path: &Path, messages: &[T]) -> Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::new();
    for message in messages {
        serde_json::to_writer(&mut bytes, message)
            .map_err(|e| StoreError::malformed(path, e.to_string()))?;
        bytes.push(b'\n');
    }
    Ok(redact_bytes(&bytes).into_owned())
}
