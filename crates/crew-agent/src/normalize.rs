//! Message normalisation before every model call: the API wants user and assistant strictly
//! alternating, starting with the user, every `tool_use` answered by a `tool_result` in the
//! next message, and nothing empty. Interruptions and crashes break all of that; this repairs it.

use std::collections::HashSet;

use crew_model::{ChatMessage, ContentBlock, Role};

/// The result given to a tool call that never got one.
pub const INTERRUPTED: &str = "tool call interrupted";

/// Put in front when the history would otherwise start with the assistant.
const CONVERSATION_START: &str = "(conversation start)";

/// A normalised copy of `messages`: orphan calls get an error result, results without a
/// matching call in the preceding assistant message are dropped (as are duplicates), empty
/// blocks and messages are removed, and consecutive messages of one role are merged (tool
/// results first in a user message). Normalising twice changes nothing.
pub fn normalize(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    normalize_owned(messages.to_vec())
}

/// [`normalize`] taking the history by value, so blocks are moved rather than copied (the
/// loop normalises before every call).
pub fn normalize_owned(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut paired: Vec<ChatMessage> = Vec::with_capacity(messages.len() + 1);
    // Calls of the latest assistant message still waiting for their result.
    let mut open: Vec<String> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut seen_calls: HashSet<String> = HashSet::new();
    for message in messages {
        match message.role {
            Role::Assistant => {
                close(&mut paired, &mut open, &answered);
                answered.clear();
                let content: Vec<ContentBlock> = message
                    .content
                    .into_iter()
                    .filter(|block| match block {
                        ContentBlock::Text { text } => !text.is_empty(),
                        // A repeated id could never be answered unambiguously.
                        ContentBlock::ToolUse { id, .. } => seen_calls.insert(id.clone()),
                        ContentBlock::ToolResult { .. } => false,
                        // The API wants thinking back unchanged during tool use.
                        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {
                            true
                        }
                    })
                    .collect();
                open = content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::ToolUse { id, .. } => Some(id.clone()),
                        _ => None,
                    })
                    .collect();
                paired.push(ChatMessage {
                    role: Role::Assistant,
                    content,
                });
            }
            Role::User => {
                let content = message
                    .content
                    .into_iter()
                    .filter(|block| match block {
                        ContentBlock::Text { text } => !text.is_empty(),
                        ContentBlock::ToolUse { .. }
                        | ContentBlock::Thinking { .. }
                        | ContentBlock::RedactedThinking { .. } => false,
                        ContentBlock::ToolResult { tool_use_id, .. } => {
                            open.contains(tool_use_id) && answered.insert(tool_use_id.clone())
                        }
                    })
                    .collect();
                paired.push(ChatMessage {
                    role: Role::User,
                    content,
                });
            }
        }
    }
    close(&mut paired, &mut open, &answered);
    merge(paired)
}

/// Adds an error result for every open call that has none.
fn close(out: &mut Vec<ChatMessage>, open: &mut Vec<String>, answered: &HashSet<String>) {
    let missing: Vec<ContentBlock> = open
        .drain(..)
        .filter(|id| !answered.contains(id))
        .map(|id| ContentBlock::tool_result(id, INTERRUPTED, true))
        .collect();
    if !missing.is_empty() {
        out.push(ChatMessage::user_tool_results(missing));
    }
}

/// Drops empty messages, merges neighbours of one role, puts tool results first in user
/// messages, and makes sure the user speaks first.
fn merge(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    for message in messages.into_iter().filter(|m| !m.content.is_empty()) {
        match out.last_mut() {
            Some(last) if last.role == message.role => last.content.extend(message.content),
            _ => out.push(message),
        }
    }
    for message in out.iter_mut().filter(|m| m.role == Role::User) {
        let (results, others): (Vec<_>, Vec<_>) = std::mem::take(&mut message.content)
            .into_iter()
            .partition(|b| matches!(b, ContentBlock::ToolResult { .. }));
        message.content = results;
        message.content.extend(others);
    }
    if out.first().is_some_and(|m| m.role == Role::Assistant) {
        out.insert(0, ChatMessage::user_text(CONVERSATION_START));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "read".into(),
            input: json!({"path": "a"}),
        }
    }

    fn result(id: &str) -> ContentBlock {
        ContentBlock::tool_result(id, "ok", false)
    }

    fn assistant(content: Vec<ContentBlock>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content,
        }
    }

    #[test]
    fn consecutive_user_messages_merge_and_empty_ones_vanish() {
        let history = vec![
            ChatMessage::user_text("a"),
            ChatMessage::user_text(""),
            ChatMessage::user_text("b"),
            assistant(vec![]),
            ChatMessage::assistant_text("c"),
            ChatMessage::assistant_text("d"),
        ];
        let normal = normalize(&history);
        assert_eq!(normal.len(), 2);
        assert_eq!(normal[0].text(), "ab");
        assert_eq!(normal[1].text(), "cd");
        assert_eq!(normalize(&normal), normal);
    }

    #[test]
    fn orphan_calls_get_an_interrupted_result_in_the_next_message() {
        let history = vec![
            ChatMessage::user_text("go"),
            assistant(vec![call("t1"), call("t2")]),
            ChatMessage::user_tool_results(vec![result("t2")]),
            ChatMessage::user_text("next"),
            assistant(vec![call("t3")]),
        ];
        let normal = normalize(&history);
        assert_eq!(normal.len(), 5);
        assert_eq!(
            normal[2].tool_results(),
            vec![("t2", "ok", false), ("t1", INTERRUPTED, true)]
        );
        assert_eq!(normal[2].text(), "next");
        assert_eq!(normal[4].tool_results(), vec![("t3", INTERRUPTED, true)]);
        assert_eq!(normalize(&normal), normal);
    }

    #[test]
    fn results_without_a_matching_call_and_duplicates_are_dropped() {
        let history = vec![
            ChatMessage::user_tool_results(vec![result("ghost")]),
            ChatMessage::user_text("go"),
            assistant(vec![call("t1")]),
            ChatMessage::user_tool_results(vec![result("t1"), result("t1"), result("old")]),
            ChatMessage::assistant_text("done"),
            ChatMessage::user_tool_results(vec![result("t1")]),
        ];
        let normal = normalize(&history);
        assert_eq!(normal.len(), 4);
        assert_eq!(normal[0].text(), "go");
        assert_eq!(normal[2].tool_results(), vec![("t1", "ok", false)]);
        assert_eq!(normal[3].text(), "done");
    }

    #[test]
    fn history_starts_with_the_user_and_alternates() {
        let normal = normalize(&[
            ChatMessage::assistant_text("hi"),
            ChatMessage::user_text("x"),
        ]);
        assert_eq!(normal[0].role, Role::User);
        assert!(normal.windows(2).all(|w| w[0].role != w[1].role));
        assert!(normalize(&[]).is_empty());
    }
}
