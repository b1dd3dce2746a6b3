//! Turn transcripts: every event appended as one JSON line to
//! `<repo>/.crew/transcripts/<agent>/<session>.jsonl`, and `render` to read one back as text.
//! Only events are written (never the environment), and providers already redact keys.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::event::AgentEvent;
use crate::subagent::SubagentContext;

use crew_tools::Note;

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
        self.file
            .write_all(&crew_store::secrets::redact_bytes(&bytes))
            .map_err(io)
    }
}

/// Longest detail kept for one folded tool call (the transcript file keeps everything).
const DETAIL_MAX: usize = 4096;

/// One line of a transcript as the screen shows it. A tool call or result is folded to one
/// line; `detail` holds its whole input or output (up to `DETAIL_MAX`) for unfolding.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    pub text: String,
    pub detail: Option<String>,
}

impl Row {
    pub fn plain(text: impl Into<String>) -> Self {
        Row {
            text: text.into(),
            detail: None,
        }
    }
}

/// A rendered event: free text (may span lines, may end mid-line), or one folded line.
enum Piece {
    Text(String),
    Folded { line: String, detail: String },
}

/// A transcript as readable text (`crew replay`). Lines that do not parse (a torn last line,
/// an event type from a newer crew) are shown raw and marked, not fatal.
pub fn render(reader: impl BufRead) -> Result<String, TranscriptError> {
    let mut out = String::new();
    for piece in pieces(reader)? {
        match piece {
            Piece::Text(text) => out.push_str(&text),
            Piece::Folded { line, .. } => {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// A transcript as non-empty rows, tool calls folded with their details.
pub fn rows(reader: impl BufRead) -> Result<Vec<Row>, TranscriptError> {
    let mut rows = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, rows: &mut Vec<Row>| {
        rows.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(Row::plain),
        );
        text.clear();
    };
    for piece in pieces(reader)? {
        match piece {
            Piece::Text(t) => text.push_str(&t),
            Piece::Folded { line, detail } => {
                flush(&mut text, &mut rows);
                rows.push(Row {
                    text: line,
                    detail: Some(detail),
                });
            }
        }
    }
    flush(&mut text, &mut rows);
    Ok(rows)
}

/// Rows for a conversation kept as messages (a teammate's on another host, read from the team's
/// store), in the words transcript rows use: `user:`, `assistant:`, folded tool calls and results.
pub fn conversation_rows(messages: &[crew_model::ChatMessage]) -> Vec<Row> {
    use crew_model::{ContentBlock, Role as Speaker};
    let mut names = std::collections::HashMap::new();
    let mut rows = Vec::new();
    for message in messages {
        let who = match message.role {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
        };
        for block in &message.content {
            match block {
                ContentBlock::Text { text } => {
                    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
                    if let Some(first) = lines.next() {
                        rows.push(Row::plain(format!("{who}: {first}")));
                    }
                    rows.extend(lines.map(Row::plain));
                }
                ContentBlock::ToolUse { id, name, input } => {
                    names.insert(id.as_str(), name.as_str());
                    rows.push(Row {
                        text: format!("→ {name} {}", short(&input.to_string(), 200)),
                        detail: Some(capped(
                            &serde_json::to_string_pretty(input).unwrap_or_default(),
                        )),
                    });
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => rows.push(Row {
                    text: format!(
                        "← {}{}: {}",
                        names.get(tool_use_id.as_str()).copied().unwrap_or("tool"),
                        if *is_error { " (error)" } else { "" },
                        short(content, 300)
                    ),
                    detail: Some(capped(content)),
                }),
                ContentBlock::Thinking { thinking, .. } => rows.push(Row {
                    text: format!("✻ thinking: {}", short(thinking, 120)),
                    detail: Some(capped(thinking)),
                }),
                ContentBlock::RedactedThinking { .. } => {
                    rows.push(Row::plain("✻ thinking (redacted by the provider)"));
                }
            }
        }
    }
    rows
}

fn pieces(reader: impl BufRead) -> Result<Vec<Piece>, TranscriptError> {
    let mut out = Vec::new();
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
            (true, false) => out.push(Piece::Text("\n".into())),
            (false, true) => out.push(Piece::Text("assistant: ".into())),
            _ => {}
        }
        in_text = is_delta;
        match parsed {
            Ok(TranscriptLine { event, .. }) => out.extend(render_event(event)),
            Err(e) => out.push(Piece::Text(format!("?? line {}: {e}: {line}\n", index + 1))),
        }
    }
    if in_text {
        out.push(Piece::Text("\n".into()));
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

/// `text` up to `DETAIL_MAX` bytes (on a character boundary), saying how much was left out.
fn capped(text: &str) -> String {
    if text.len() <= DETAIL_MAX {
        return text.to_string();
    }
    let mut at = DETAIL_MAX;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!(
        "{}\n… {} more bytes (crew replay shows the transcript file)",
        &text[..at],
        text.len() - at
    )
}

fn render_event(event: AgentEvent) -> Vec<Piece> {
    let text = |s: String| vec![Piece::Text(s)];
    match event {
        AgentEvent::TurnStart { turn, input, .. } => {
            text(format!("\n=== turn {turn} ===\nuser: {input}\n"))
        }
        AgentEvent::MessageStart { .. } => Vec::new(),
        AgentEvent::MessageDelta { text: delta } => text(delta),
        AgentEvent::Thinking { block } => vec![match block {
            crew_model::ContentBlock::Thinking { thinking, .. } => Piece::Folded {
                line: format!("✻ thinking: {}", short(&thinking, 120)),
                detail: capped(&thinking),
            },
            _ => Piece::Folded {
                line: "✻ thinking (redacted by the provider)".into(),
                detail:
                    "The provider sent this reasoning encrypted; it is kept and sent back unread."
                        .into(),
            },
        }],
        AgentEvent::ModelFallback { from, to, reason } => {
            text(format!("⇄ model {from} → {to}: {reason}\n"))
        }
        AgentEvent::MessageStop { stop_reason, usage } => {
            let cache = match (
                usage.cache_read_input_tokens,
                usage.cache_creation_input_tokens,
            ) {
                (0, 0) => String::new(),
                (read, written) => format!(" ({read} read from cache, {written} written)"),
            };
            text(format!(
                "  [model stopped: {stop_reason:?}, {} tokens{cache}]\n",
                usage.total()
            ))
        }
        AgentEvent::ToolUse {
            name, input, early, ..
        } => vec![Piece::Folded {
            line: format!(
                "→ {name} {}{}",
                short(&input.to_string(), 200),
                if early { " (started early)" } else { "" }
            ),
            detail: capped(&serde_json::to_string_pretty(&input).unwrap_or_default()),
        }],
        AgentEvent::ToolResult {
            name,
            content,
            is_error,
            rewritten_input,
            spilled,
            ..
        } => {
            let mut pieces = vec![Piece::Folded {
                line: format!(
                    "← {name}{}: {}",
                    if is_error { " (error)" } else { "" },
                    short(&content, 300)
                ),
                detail: capped(&content),
            }];
            if let Some(input) = rewritten_input {
                pieces.push(Piece::Text(format!(
                    "  (input rewritten by a hook to {input})\n"
                )));
            }
            if let Some(path) = spilled {
                pieces.push(Piece::Text(format!(
                    "  (full output in {})\n",
                    path.display()
                )));
            }
            pieces
        }
        AgentEvent::PermissionAsked { tool, reason, .. } => {
            text(format!("? permission asked for {tool}: {reason}\n"))
        }
        // Only the person answers (invariant 5); `to` is only whose inbox carries the request.
        AgentEvent::PermissionWaiting { request_id, .. } => {
            text(format!("… waiting for you to answer {request_id}\n"))
        }
        AgentEvent::PermissionAnswered {
            tool,
            allowed,
            detail,
        } => text(format!(
            "! permission for {tool} {}{}\n",
            if allowed { "granted" } else { "denied" },
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        )),
        AgentEvent::Compaction {
            step,
            trigger,
            tokens_before,
            tokens_after,
        } => text(format!(
            "~ compaction ({trigger:?}, {step:?}): {tokens_before} → {tokens_after} tokens\n"
        )),
        AgentEvent::CompactionProbe {
            passed,
            answer,
            expected,
        } => text(format!(
            "~ compaction check {}: {} (looked for: {})\n",
            if passed {
                "passed"
            } else {
                "failed, summary undone"
            },
            short(&answer, 200),
            expected.join(", ")
        )),
        AgentEvent::Recovery {
            kind,
            attempt,
            reason,
        } => text(format!("↻ recovery {kind:?} #{attempt}: {reason}\n")),
        AgentEvent::SubagentStart {
            id,
            role,
            context,
            description,
            transcript,
        } => text(format!(
            "⤷ subagent {id} ({role}, {}): {description} — transcript {}\n",
            match context {
                SubagentContext::Fresh => "fresh",
                SubagentContext::Fork => "fork",
            },
            transcript.display()
        )),
        AgentEvent::SubagentTool { id, tool } => text(format!("  ⤷ {id} → {tool}\n")),
        AgentEvent::SubagentEnd {
            id,
            stop_reason,
            calls,
            usage,
            verdict,
        } => text(format!(
            "⤶ subagent {id} ended: {stop_reason:?} after {calls} call(s), {} tokens{}\n",
            usage.total(),
            verdict
                .map(|v| format!(", verdict {v}"))
                .unwrap_or_default()
        )),
        AgentEvent::HookNotes { event, notes } => notes
            .iter()
            .map(|note| {
                let (kind, body) = match note {
                    Note::AdditionalContext { text, .. } => ("context", text),
                    Note::SystemMessage { text, .. } => ("message", text),
                    Note::HookFeedback { text, .. } => ("feedback", text),
                    Note::Warning { text } => ("warning", text),
                    Note::Remember { memory, .. } => ("memory", &memory.name),
                };
                Piece::Text(format!("⚑ {event:?} hook {kind}: {}\n", short(body, 300)))
            })
            .collect(),
        AgentEvent::TurnEnd { result } => text(format!(
            "=== end: {:?} after {} model calls, {} tokens{} ===\n",
            result.stop_reason,
            result.turns,
            result.usage.total(),
            if result.reason.is_empty() {
                String::new()
            } else {
                format!(": {}", result.reason)
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_conversation_reads_as_transcript_rows() {
        use crew_model::{ChatMessage, ContentBlock, Role};
        let messages = [
            ChatMessage::user_text("Task task_1: write it\n\nDo it."),
            ChatMessage {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text {
                        text: "Writing.".into(),
                    },
                    ContentBlock::ToolUse {
                        id: "t1".into(),
                        name: "write".into(),
                        input: serde_json::json!({"path": "a.txt"}),
                    },
                ],
            },
            ChatMessage {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "denied".into(),
                    is_error: true,
                }],
            },
        ];
        let rows: Vec<String> = conversation_rows(&messages)
            .into_iter()
            .map(|r| r.text)
            .collect();
        assert_eq!(
            rows,
            [
                "user: Task task_1: write it",
                "Do it.",
                "assistant: Writing.",
                "→ write {\"path\":\"a.txt\"}",
                "← write (error): denied",
            ]
        );
    }

    fn line(event: AgentEvent) -> String {
        serde_json::to_string(&TranscriptLine {
            ts: "2026-01-01T00:00:00Z".into(),
            turn: 1,
            event,
        })
        .unwrap()
    }

    #[test]
    fn a_subagent_shows_nested_in_its_callers_transcript() {
        use crate::subagent::{SubagentContext, SubagentRole};
        let text = [
            line(AgentEvent::SubagentStart {
                id: "sub1".into(),
                role: SubagentRole::Verify,
                context: SubagentContext::Fork,
                description: "check the fix".into(),
                transcript: PathBuf::from(".crew/transcripts/alice/s.sub1.jsonl"),
            }),
            line(AgentEvent::SubagentTool {
                id: "sub1".into(),
                tool: "bash".into(),
            }),
            line(AgentEvent::SubagentEnd {
                id: "sub1".into(),
                stop_reason: crate::StopReason::Completed,
                calls: 2,
                usage: crew_model::Usage::default(),
                verdict: Some("pass".into()),
            }),
        ]
        .join("\n");
        let shown = render(text.as_bytes()).unwrap();
        assert!(
            shown.contains(
                "⤷ subagent sub1 (verify, fork): check the fix — transcript \
                 .crew/transcripts/alice/s.sub1.jsonl\n  ⤷ sub1 → bash\n\
                 ⤶ subagent sub1 ended: Completed after 2 call(s), 0 tokens, verdict pass"
            ),
            "{shown}"
        );
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

    #[test]
    fn rows_fold_each_tool_call_to_one_line_keeping_the_whole_input_and_output() {
        let output = format!("line one\nline two\n{}", "x".repeat(5000));
        let text = [
            line(AgentEvent::MessageDelta {
                text: "let me look".into(),
            }),
            line(AgentEvent::ToolUse {
                id: "t1".into(),
                name: "bash".into(),
                input: serde_json::json!({"command": "ls -la\ncat a"}),
                early: false,
            }),
            line(AgentEvent::ToolResult {
                id: "t1".into(),
                name: "bash".into(),
                content: output.clone(),
                is_error: false,
                rewritten_input: None,
                spilled: Some("/tmp/spill.txt".into()),
                decision: None,
                notes: Vec::new(),
            }),
        ]
        .join("\n");
        let rows = rows(text.as_bytes()).unwrap();
        let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts[0], "assistant: let me look");
        assert_eq!(texts[1], r#"→ bash {"command":"ls -la\ncat a"}"#);
        assert!(
            texts[2].starts_with("← bash: line one⏎line two⏎xxx"),
            "{}",
            texts[2]
        );
        assert_eq!(texts[3], "  (full output in /tmp/spill.txt)");
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].detail, None);
        assert_eq!(
            rows[1].detail.as_deref(),
            Some("{\n  \"command\": \"ls -la\\ncat a\"\n}")
        );
        let detail = rows[2].detail.as_deref().unwrap();
        assert!(detail.starts_with("line one\nline two\nxxx"));
        assert!(detail.ends_with("… 922 more bytes (crew replay shows the transcript file)"));
        // The replay text is the same rows, one per line.
        let replay = render(text.as_bytes()).unwrap();
        assert_eq!(replay.lines().collect::<Vec<_>>(), texts);
    }
}
