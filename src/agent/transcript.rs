//! Turn transcripts: every event appended as one JSON line to
//! `<repo>/.crew/transcripts/<agent>/<session>.jsonl`, and `render` to read one back as text.
//! Only events are written (never the environment), and providers already redact keys.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::agent::event::AgentEvent;

#[derive(Debug, Error)]
pub enum TranscriptError {
    #[error("transcript {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read transcript: {0}")]
    Read(#[from] std::io::Error),
}

/// One line of a transcript file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptLine {
    pub ts: String,
    /// The session's turn the event belongs to (1-based; 0 before the first turn).
    pub turn: u64,
    pub event: AgentEvent,
}

/// `<repo_root>/.crew/transcripts/<agent>/<session>.jsonl`.
pub fn transcript_path(repo_root: &Path, agent: &str, session: &str) -> PathBuf {
    repo_root
        .join(".crew/transcripts")
        .join(agent)
        .join(format!("{session}.jsonl"))
}

/// Appends lines to one transcript file; each line is written whole, so a reader (or a crash)
/// never sees more than the last line torn.
#[derive(Debug)]
pub struct TranscriptWriter {
    path: PathBuf,
    file: File,
}

impl TranscriptWriter {
    /// Opens (creating folders and file as needed) for appending.
    pub fn open(path: PathBuf) -> Result<Self, TranscriptError> {
        let io = |source| TranscriptError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        Ok(Self { path, file })
    }

    pub fn append(&mut self, line: &TranscriptLine) -> Result<(), TranscriptError> {
        let io = |source| TranscriptError::Io {
            path: self.path.clone(),
            source,
        };
        let mut bytes = serde_json::to_vec(line).map_err(|e| io(std::io::Error::other(e)))?;
        bytes.push(b'\n');
        self.file.write_all(&bytes).map_err(io)
    }
}

/// A transcript as readable text. Lines that do not parse (a torn last line, an event type
/// from a newer crew) are shown raw and marked, not fatal.
pub fn render(reader: impl BufRead) -> Result<String, TranscriptError> {
    let mut out = String::new();
    let mut in_text = false;
    for (index, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<TranscriptLine>(&line);
        let is_delta = matches!(
            &parsed,
            Ok(TranscriptLine {
                event: AgentEvent::MessageDelta { .. },
                ..
            })
        );
        // A reply's deltas form one "assistant:" line; a reply without text gets none.
        match (in_text, is_delta) {
            (true, false) => out.push('\n'),
            (false, true) => out.push_str("assistant: "),
            _ => {}
        }
        in_text = is_delta;
        match parsed {
            Ok(TranscriptLine { event, .. }) => render_event(&mut out, event),
            Err(e) => out.push_str(&format!("?? line {}: {e}: {line}\n", index + 1)),
        }
    }
    if in_text {
        out.push('\n');
    }
    Ok(out)
}

/// At most `max` characters of `text` on one line.
fn short(text: &str, max: usize) -> String {
    let flat = text.replace('\n', "⏎");
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

fn render_event(out: &mut String, event: AgentEvent) {
    let line = match event {
        AgentEvent::TurnStart { turn, input, .. } => {
            format!("\n=== turn {turn} ===\nuser: {input}\n")
        }
        AgentEvent::MessageStart { .. } => String::new(),
        AgentEvent::MessageDelta { text } => text,
        AgentEvent::MessageStop { stop_reason, usage } => format!(
            "  [model stopped: {stop_reason:?}, {} tokens]\n",
            usage.total()
        ),
        AgentEvent::ToolUse {
            name, input, early, ..
        } => format!(
            "→ {name} {}{}\n",
            short(&input.to_string(), 200),
            if early { " (started early)" } else { "" }
        ),
        AgentEvent::ToolResult {
            name,
            content,
            is_error,
            rewritten_input,
            spilled,
            ..
        } => {
            let mut text = format!(
                "← {name}{}: {}\n",
                if is_error { " (error)" } else { "" },
                short(&content, 300)
            );
            if let Some(input) = rewritten_input {
                text.push_str(&format!("  (input rewritten by a hook to {input})\n"));
            }
            if let Some(path) = spilled {
                text.push_str(&format!("  (full output in {})\n", path.display()));
            }
            text
        }
        AgentEvent::PermissionAsked { tool, reason, .. } => {
            format!("? permission asked for {tool}: {reason}\n")
        }
        AgentEvent::PermissionWaiting { request_id, to } => {
            format!("… waiting for an answer to {request_id} (sent to {to})\n")
        }
        AgentEvent::PermissionAnswered {
            tool,
            allowed,
            detail,
        } => format!(
            "! permission for {tool} {}{}\n",
            if allowed { "granted" } else { "denied" },
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        ),
        AgentEvent::Compaction {
            step,
            trigger,
            tokens_before,
            tokens_after,
        } => format!(
            "~ compaction ({trigger:?}, {step:?}): {tokens_before} → {tokens_after} tokens\n"
        ),
        AgentEvent::Recovery {
            kind,
            attempt,
            reason,
        } => format!("↻ recovery {kind:?} #{attempt}: {reason}\n"),
        AgentEvent::TurnEnd { result } => format!(
            "=== end: {:?} after {} model calls, {} tokens: {} ===\n",
            result.stop_reason,
            result.turns,
            result.usage.total(),
            result.reason
        ),
    };
    out.push_str(&line);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: AgentEvent) -> String {
        serde_json::to_string(&TranscriptLine {
            ts: "2026-01-01T00:00:00Z".into(),
            turn: 1,
            event,
        })
        .unwrap()
    }

    #[test]
    fn deltas_join_into_one_line_and_broken_lines_are_shown() {
        let text = [
            line(AgentEvent::TurnStart {
                turn: 1,
                input: "hi".into(),
                prefix_fingerprint: "f".into(),
            }),
            line(AgentEvent::MessageStart { call: 1 }),
            line(AgentEvent::MessageDelta { text: "hel".into() }),
            line(AgentEvent::MessageDelta { text: "lo".into() }),
            r#"{"ts":"x","turn":1,"event":{"type":"from_the_future"}}"#.to_string(),
            r#"{"ts":"x","tu"#.to_string(),
        ]
        .join("\n");
        let shown = render(text.as_bytes()).unwrap();
        assert!(shown.contains("user: hi"), "{shown}");
        assert!(shown.contains("assistant: hello\n"), "{shown}");
        assert!(shown.contains("?? line 5"), "{shown}");
        assert!(shown.contains("?? line 6"), "{shown}");
    }
}
