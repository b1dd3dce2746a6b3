//! `.mailboxes/<name>.jsonl`: append-only inboxes, one JSON message per line (invariant 3).
//!
//! Writers append whole lines under an exclusive lock on the inbox itself (the file is never
//! replaced, so locking it is sound). Readers take no lock: they only consume up to the last
//! newline, so a line being written is never seen half-done. Each reader's cursor is a byte
//! offset kept beside the inbox in `<name>.cursor`.
//!
//! A writer killed mid-line leaves a fragment with no newline: the kernel may cut a write that
//! spans a page at the page when SIGKILL arrives. The next writer, holding the lock (so no live
//! writer is mid-line), cuts that fragment off before appending: the killed send never returned,
//! so nothing acknowledged is lost, and the new line does not get glued onto it.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use fd_lock::RwLock;
use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::message::{Draft, Message, new_id};
use crate::roster::Roster;
use crate::task::now_rfc3339;
use crate::{Limits, StoreError, secrets};
use crew_protocol::{AgentName, MessageKind, RequestId};
use crew_protocol::{InvalidName, validate_name};

#[derive(Debug, Clone)]
pub struct Mailboxes {
    dir: PathBuf,
    limits: Limits,
}

/// One line of an inbox as read: a message, or a line that does not parse (shown in place).
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Message {
        offset: u64,
        message: Message,
    },
    Broken {
        offset: u64,
        raw: String,
        error: String,
    },
}

#[derive(Debug, Default)]
pub struct Batch {
    pub entries: Vec<Entry>,
    /// Offset just past the last complete line read: where the next read starts.
    pub end: u64,
}

#[derive(Serialize, Deserialize)]
struct Cursor {
    offset: u64,
}

impl Mailboxes {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Mailboxes {
            dir: dir.into(),
            limits: Limits::default(),
        }
    }

    /// The same inboxes, checking message text against `limits`.
    pub fn with_limits(self, limits: Limits) -> Self {
        Mailboxes { limits, ..self }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn inbox_path(&self, name: &AgentName) -> PathBuf {
        self.dir.join(format!("{name}.jsonl"))
    }

    fn cursor_path(&self, name: &AgentName) -> PathBuf {
        self.dir.join(format!("{name}.cursor"))
    }

    /// Checks both names against the team, stamps the message and appends it to `to`'s inbox.
    pub fn send(&self, roster: &Roster, draft: Draft) -> Result<Message, StoreError> {
        roster.check("sender", &draft.from)?;
        roster.check("recipient", &draft.to)?;
        if let Some(text) = &draft.text {
            self.limits.check_message(text)?;
        }
        let kind = checked_kind(draft.kind)?;
        let message = Message {
            id: new_id("msg"),
            ts: now_rfc3339(),
            from: draft.from,
            to: draft.to,
            kind,
            text: draft.text,
            request_id: draft.request.then(RequestId::new),
            approve: None,
            extra: draft.extra,
        };
        self.append(&message)?;
        Ok(message)
    }

    /// Appends one message as one line. Many processes may do this at once; none loses a line.
    pub fn append(&self, message: &Message) -> Result<(), StoreError> {
        let path = self.inbox_path(&message.to);
        let mut line = serde_json::to_vec(message)
            .map_err(|e| StoreError::malformed(&path, format!("cannot serialise message: {e}")))?;
        line.push(b'\n');
        fs::create_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        let mut lock = RwLock::new(file);
        let mut guard = lock.write().map_err(|e| StoreError::io(&path, e))?;
        cut_torn_tail(&mut guard).map_err(|e| StoreError::io(&path, e))?;
        guard
            .write_all(&secrets::redact_bytes(&line))
            .map_err(|e| StoreError::io(&path, e))
    }

    /// Complete lines from `offset` on. A cursor past the end (inbox removed and recreated)
    /// starts again from the beginning rather than missing everything.
    pub fn read_from(&self, name: &AgentName, offset: u64) -> Result<Batch, StoreError> {
        let path = self.inbox_path(name);
        let mut file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Batch::default()),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let len = file.metadata().map_err(|e| StoreError::io(&path, e))?.len();
        let start = if offset > len { 0 } else { offset };
        file.seek(SeekFrom::Start(start))
            .map_err(|e| StoreError::io(&path, e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(&path, e))?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let mut entries = Vec::new();
        let mut at = 0usize;
        for line in bytes[..complete].split_inclusive(|&b| b == b'\n') {
            let offset = start + at as u64;
            at += line.len();
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            entries.push(match serde_json::from_slice::<Message>(body) {
                Ok(message) => Entry::Message { offset, message },
                Err(e) => Entry::Broken {
                    offset,
                    raw: String::from_utf8_lossy(body).into_owned(),
                    error: format!("{}: byte {offset}: {e}", path.display()),
                },
            });
        }
        Ok(Batch {
            entries,
            end: start + complete as u64,
        })
    }

    pub fn cursor(&self, name: &AgentName) -> Result<u64, StoreError> {
        let path = self.cursor_path(name);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<Cursor>(&bytes)
                .map(|c| c.offset)
                .map_err(|e| StoreError::malformed(&path, format!("invalid cursor: {e}"))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }

    /// Moves `name`'s cursor to `offset` if that is forward. A cursor past the end of the
    /// inbox (removed and made again: `read_from` started over) moves back to it too. One
    /// reader, the inbox's owner, moves it, so no lock is taken.
    pub fn advance_cursor(&self, name: &AgentName, offset: u64) -> Result<(), StoreError> {
        let current = self.cursor(name)?;
        let path = self.inbox_path(name);
        let len = match fs::metadata(&path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == ErrorKind::NotFound => 0,
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        if offset > current || current > len {
            self.set_cursor(name, offset)?;
        }
        Ok(())
    }

    pub fn set_cursor(&self, name: &AgentName, offset: u64) -> Result<(), StoreError> {
        let path = self.cursor_path(name);
        fs::create_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        let bytes = serde_json::to_vec(&Cursor { offset })
            .map_err(|e| StoreError::malformed(&path, e.to_string()))?;
        write_atomic(&path, &bytes).map_err(|e| StoreError::io(&path, e))
    }

    /// Names of every inbox that exists, sorted (a file whose name is no agent's is no inbox).
    pub fn inboxes(&self) -> Result<Vec<AgentName>, StoreError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&self.dir, e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&self.dir, e))?;
            if let Some(name) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .and_then(|n| AgentName::parse(n).ok())
            {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Every entry of every inbox, inbox by inbox.
    pub fn read_all(&self) -> Result<Vec<(AgentName, Entry)>, StoreError> {
        let mut all = Vec::new();
        for name in self.inboxes()? {
            for entry in self.read_from(&name, 0)?.entries {
                all.push((name.clone(), entry));
            }
        }
        Ok(all)
    }
}

/// The kind a message is stored with, in every store: an empty one is a plain message, and
/// one crew does not know, though it becomes part of a file name nowhere, is shown on screens,
/// so it is held to the same characters as a name.
pub fn checked_kind(kind: MessageKind) -> Result<MessageKind, InvalidName> {
    Ok(match kind {
        MessageKind::Other(raw) if raw.is_empty() => MessageKind::Message,
        MessageKind::Other(raw) => {
            validate_name("message type", &raw)?;
            MessageKind::Other(raw)
        }
        known => known,
    })
}

/// Cuts what follows the last newline: a line a killed writer never finished. Called with the
/// inbox's exclusive lock held, so no live writer is in the middle of a line.
fn cut_torn_tail(file: &mut fs::File) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    if len == 0 || last_byte(file, len - 1)? == b'\n' {
        return Ok(());
    }
    let mut end = len;
    let mut chunk = vec![0u8; 8192];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let want = usize::try_from(end - start).unwrap_or(chunk.len());
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..want])?;
        if let Some(at) = chunk[..want].iter().rposition(|&b| b == b'\n') {
            return file.set_len(start + at as u64 + 1);
        }
        end = start;
    }
    file.set_len(0)
}

fn last_byte(file: &mut fs::File, at: u64) -> std::io::Result<u8> {
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::USER;

    #[test]
    fn a_fragment_a_killed_writer_left_is_cut_before_the_next_line() {
        let dir = tempfile::tempdir().unwrap();
        let boxes = Mailboxes::new(dir.path());
        let (lead, alice): (AgentName, AgentName) =
            ("lead".parse().unwrap(), "alice".parse().unwrap());
        let roster = Roster::new([lead.clone(), alice.clone()]);
        let send = |text: &str| {
            boxes
                .send(
                    &roster,
                    Draft {
                        text: Some(text.into()),
                        ..Draft::new(lead.clone(), alice.clone())
                    },
                )
                .unwrap()
        };
        let first = send("before");
        // What a writer killed inside its write leaves: part of a line, no newline. Longer than
        // one read chunk, so the cut has to look back past it.
        let path = boxes.inbox_path(&alice);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(format!(r#"{{"id":"torn","text":"{}"#, "x".repeat(20_000)).as_bytes())
            .unwrap();
        let second = send("after");
        let batch = boxes.read_from(&alice, 0).unwrap();
        let ids: Vec<&str> = batch
            .entries
            .iter()
            .map(|e| match e {
                Entry::Message { message, .. } => message.id.as_str(),
                other => panic!("not a whole message: {other:?}"),
            })
            .collect();
        assert_eq!(ids, [first.id.as_str(), second.id.as_str()]);
    }

    #[test]
    fn a_line_still_being_written_is_not_read_until_its_newline_arrives() {
        let dir = tempfile::tempdir().unwrap();
        let boxes = Mailboxes::new(dir.path());
        let (lead, alice): (AgentName, AgentName) =
            ("lead".parse().unwrap(), "alice".parse().unwrap());
        let roster = Roster::new([lead.clone(), alice.clone()]);
        let sent = boxes
            .send(
                &roster,
                Draft {
                    text: Some("hi".into()),
                    ..Draft::new(lead, alice.clone())
                },
            )
            .unwrap();
        let path = boxes.inbox_path(&alice);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"id":"half","ts":"#).unwrap();
        let batch = boxes.read_from(&alice, 0).unwrap();
        assert_eq!(batch.entries.len(), 1);
        assert!(matches!(&batch.entries[0], Entry::Message { message, .. } if *message == sent));
        file.write_all(
            b"\"2026-01-01T00:00:00Z\",\"from\":\"lead\",\"to\":\"alice\",\"type\":\"message\"}\n",
        )
        .unwrap();
        let rest = boxes.read_from(&alice, batch.end).unwrap();
        assert!(
            matches!(&rest.entries[..], [Entry::Message { message, .. }] if message.id == "half")
        );
        assert_eq!(rest.end, std::fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn cursors_persist_and_a_cursor_past_the_end_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let boxes = Mailboxes::new(dir.path());
        let bob: AgentName = "bob".parse().unwrap();
        assert_eq!(boxes.cursor(&bob).unwrap(), 0);
        boxes.set_cursor(&bob, 42).unwrap();
        assert_eq!(boxes.cursor(&bob).unwrap(), 42);
        let roster = Roster::new([bob.clone()]);
        boxes.send(&roster, Draft::new(USER, bob.clone())).unwrap();
        let batch = boxes.read_from(&bob, 10_000).unwrap();
        assert_eq!(batch.entries.len(), 1);
    }

    /// A line naming no valid agent is shown in place as broken, with the inbox's path and the
    /// bad value, and the lines after it still read (invariant 7).
    #[test]
    fn a_line_with_a_bad_name_is_broken_and_the_rest_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let boxes = Mailboxes::new(dir.path());
        let bob: AgentName = "bob".parse().unwrap();
        let good = r#"{"id":"m2","ts":"t","from":"user","to":"bob","type":"message"}"#;
        let bad = r#"{"id":"m1","ts":"t","from":"../x","to":"bob","type":"message"}"#;
        std::fs::write(boxes.inbox_path(&bob), format!("{bad}\n{good}\n")).unwrap();
        let batch = boxes.read_from(&bob, 0).unwrap();
        let [
            Entry::Broken { raw, error, .. },
            Entry::Message { message, .. },
        ] = &batch.entries[..]
        else {
            panic!("{:?}", batch.entries);
        };
        assert_eq!(raw, bad);
        let path = boxes.inbox_path(&bob);
        assert!(
            error.starts_with(&format!(
                "{}: byte 0: invalid agent name \"../x\"",
                path.display()
            )),
            "{error}"
        );
        assert_eq!(message.id, "m2");
    }
}
