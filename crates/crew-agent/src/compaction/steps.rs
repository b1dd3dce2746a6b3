//! The cheap rungs of the ladder: spill big results, drop stale payloads, fold old turns.
//! All three are deterministic and keep every call/result pair intact.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde_json::Value;

use crew_model::{ChatMessage, ContentBlock, Role};
use crew_tools::ToolRegistry;
use crew_tools::spill::apply_budget;
use crew_tools::tool::ToolOutput;

/// What an old result's content becomes when its payload is dropped.
pub const DROPPED: &str = "[result dropped to save context; re-run the tool if needed]";

/// The first line of a folded record.
pub const FOLD_HEADER: &str = "[Earlier conversation folded to save context]";

/// Characters of each user input and of the last assistant text kept in a fold record.
const FOLD_TEXT_CHARS: usize = 300;

/// Tool name by call id, over the whole history.
fn tool_names(history: &[ChatMessage]) -> HashMap<String, String> {
    history
        .iter()
        .flat_map(ChatMessage::tool_uses)
        .map(|(id, name, _)| (id.to_string(), name.to_string()))
        .collect()
}

/// Step 1: results longer than `limit` bytes are written to `spill_dir` and replaced by a
/// preview and the file's path. Results of tools without a result budget (`read`) are exempt:
/// reading a spill file back must never spill it again. Returns how many were spilled.
pub async fn spill_oversized(
    history: &mut [ChatMessage],
    registry: &ToolRegistry,
    spill_dir: &Path,
    limit: usize,
) -> usize {
    let names = tool_names(history);
    let exempt = |id: &str| {
        names
            .get(id)
            .and_then(|name| registry.get(name))
            .is_some_and(|tool| tool.result_budget().is_none())
    };
    let mut spilled = 0;
    for block in history.iter_mut().flat_map(|m| m.content.iter_mut()) {
        let ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } = block
        else {
            continue;
        };
        if content.len() <= limit || exempt(tool_use_id) {
            continue;
        }
        let output = ToolOutput {
            content: std::mem::take(content),
            is_error: *is_error,
        };
        let (output, path) = apply_budget(output, Some(limit), spill_dir, tool_use_id).await;
        *content = output.content;
        spilled += usize::from(path.is_some());
    }
    spilled
}

/// Step 2: results outside the last `keep_recent` messages lose their payload (call and
/// result stay paired, so the model can re-run the tool). Returns how many were dropped.
pub fn drop_stale(history: &mut [ChatMessage], keep_recent: usize) -> usize {
    let old = history.len().saturating_sub(keep_recent);
    let mut dropped = 0;
    for block in history[..old].iter_mut().flat_map(|m| m.content.iter_mut()) {
        if let ContentBlock::ToolResult { content, .. } = block
            && content.len() > DROPPED.len()
        {
            *content = DROPPED.to_string();
            dropped += 1;
        }
    }
    dropped
}

/// Where old history may be cut: the latest user message that is a person's input (no tool
/// results) with at least `keep` messages from it to the end, never the first message.
pub fn split_point(history: &[ChatMessage], keep: usize) -> Option<usize> {
    let last = history.len().checked_sub(keep.max(1))?;
    (1..=last).rev().find(|&i| {
        let m = &history[i];
        m.role == Role::User && m.tool_results().is_empty()
    })
}

/// Step 3: everything before the split point becomes one user message recording what was
/// asked, which tools ran and which files were touched. Returns false when there is nothing
/// old enough to fold.
pub fn fold(history: &mut Vec<ChatMessage>, keep_recent: usize) -> bool {
    let Some(split) = split_point(history, keep_recent) else {
        return false;
    };
    let record = fold_record(&history[..split]);
    history.splice(..split, [ChatMessage::user_text(record)]);
    true
}

fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The deterministic record of `old`.
fn fold_record(old: &[ChatMessage]) -> String {
    let mut earlier = Vec::new();
    let mut asked = Vec::new();
    let mut calls: Vec<(String, usize)> = Vec::new();
    let mut files = BTreeSet::new();
    let mut last_answer = String::new();
    for message in old {
        match message.role {
            Role::User => {
                let text = message.text();
                if let Some(body) = text.strip_prefix(FOLD_HEADER) {
                    earlier.push(body.trim().to_string());
                } else if !text.is_empty() {
                    asked.push(clip(&text, FOLD_TEXT_CHARS));
                }
            }
            Role::Assistant => {
                for (_, name, input) in message.tool_uses() {
                    match calls.iter_mut().find(|(n, _)| n == name) {
                        Some((_, count)) => *count += 1,
                        None => calls.push((name.to_string(), 1)),
                    }
                    if let Some(path) = input.get("path").and_then(Value::as_str) {
                        files.insert(path.to_string());
                    }
                }
                let text = message.text();
                if !text.is_empty() {
                    last_answer = clip(&text, FOLD_TEXT_CHARS);
                }
            }
        }
    }
    let mut out = format!("{FOLD_HEADER}\n{} messages folded.", old.len());
    for body in earlier {
        out.push_str(&format!("\n{body}"));
    }
    for text in asked {
        out.push_str(&format!("\nAsked: {text}"));
    }
    if !calls.is_empty() {
        let list: Vec<String> = calls.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
        out.push_str(&format!("\nTool calls: {}", list.join(", ")));
    }
    if !files.is_empty() {
        let list: Vec<&str> = files.iter().map(String::as_str).collect();
        out.push_str(&format!("\nFiles touched: {}", list.join(", ")));
    }
    if !last_answer.is_empty() {
        out.push_str(&format!("\nLast answer: {last_answer}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(n: usize, tool: &str, result: &str) -> Vec<ChatMessage> {
        let id = format!("t{n}");
        vec![
            ChatMessage::user_text(format!("task {n}")),
            ChatMessage {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.clone(),
                    name: tool.into(),
                    input: json!({"path": format!("f{n}.rs")}),
                }],
            },
            ChatMessage::user_tool_results(vec![ContentBlock::tool_result(id, result, false)]),
            ChatMessage::assistant_text(format!("done {n}")),
        ]
    }

    #[test]
    fn dropping_keeps_pairs_and_recent_results() {
        let mut history: Vec<ChatMessage> = (0..3)
            .flat_map(|n| turn(n, "grep", &"x".repeat(500)))
            .collect();
        assert_eq!(drop_stale(&mut history, 4), 2);
        assert_eq!(history[2].tool_results()[0].1, DROPPED);
        assert_eq!(history[2].tool_results()[0].0, "t0");
        assert_eq!(history[10].tool_results()[0].1.len(), 500);
        assert_eq!(drop_stale(&mut history, 4), 0, "already dropped");
    }

    #[test]
    fn folding_is_deterministic_and_keeps_the_recent_turns() {
        let history: Vec<ChatMessage> = (0..3).flat_map(|n| turn(n, "read", "ok")).collect();
        let mut a = history.clone();
        let mut b = history.clone();
        assert!(fold(&mut a, 4));
        assert!(fold(&mut b, 4));
        assert_eq!(a, b);
        assert_eq!(a.len(), 5);
        assert_eq!(&a[1..], &history[8..]);
        let record = a[0].text();
        assert!(record.starts_with(FOLD_HEADER));
        assert!(record.contains("Asked: task 0") && record.contains("Asked: task 1"));
        assert!(record.contains("Tool calls: read ×2"));
        assert!(record.contains("Files touched: f0.rs, f1.rs"));
        assert!(record.contains("Last answer: done 1"));
        // A second fold carries the first record forward.
        let mut longer = a.clone();
        longer.extend(turn(3, "bash", "ok"));
        longer.extend(turn(4, "bash", "ok"));
        assert!(fold(&mut longer, 4));
        assert!(longer[0].text().contains("Asked: task 0"));
        assert!(longer[0].text().contains("Asked: task 3"));
    }

    #[test]
    fn nothing_to_fold_when_only_recent_messages_exist() {
        let mut history = turn(0, "read", "ok");
        assert!(!fold(&mut history, 8));
        assert_eq!(split_point(&history, 0), None);
    }

    #[tokio::test]
    async fn spilling_skips_the_read_tool() {
        let dir = tempfile::tempdir().unwrap();
        let registry = ToolRegistry::core_tools().unwrap();
        let big = "y".repeat(5_000);
        let mut history: Vec<ChatMessage> = turn(0, "read", &big)
            .into_iter()
            .chain(turn(1, "bash", &big))
            .collect();
        assert_eq!(
            spill_oversized(&mut history, &registry, dir.path(), 1_000).await,
            1
        );
        assert_eq!(history[2].tool_results()[0].1, big);
        let spilled = history[6].tool_results()[0].1;
        assert!(spilled.contains("t1.txt") && spilled.len() < 2_000);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("t1.txt")).unwrap(),
            big
        );
    }
}
