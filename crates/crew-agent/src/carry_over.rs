//! What must outlive a compaction that folded or summarised old turns: the files the agent was
//! working on (as they are now, bounded) and its own checklist, which it wrote in a
//! `todo_write` call that may now be gone from the history.

use std::collections::HashSet;

use crate::runtime::Agent;
use crew_model::{ChatMessage, ContentBlock};
use crew_store::render_todos;
use crew_tools::paths::resolve_within;
use crew_tools::spill::floor_char_boundary;
use crew_tools::{Subject, TodoList, ToolKind};

/// Starts the checklist block put back after a compaction.
pub const TODOS_HEADER: &str =
    "[your checklist, kept across compaction; update it with todo_write]";

/// Starts the block of files put back after a compaction.
pub const FILES_HEADER: &str =
    "[files you read or changed most recently, put back after compaction as they are now]";

impl Agent {
    /// The agent's checklist (watch it to show it elsewhere).
    pub fn todos(&self) -> &TodoList {
        &self.tool_ctx.todos
    }

    /// The paths (as the model wrote them) of the files the agent read or changed most
    /// recently, newest first, at most `reattach_files` of them.
    pub(crate) fn recent_files(&self) -> Vec<String> {
        let registry = &self.pipeline.registry;
        let mut seen = HashSet::new();
        let mut files = Vec::new();
        let calls = self.history.iter().rev().flat_map(|m| {
            let mut uses = m.tool_uses();
            uses.reverse();
            uses
        });
        for (_, name, input) in calls {
            if files.len() >= self.compaction.reattach_files {
                break;
            }
            let Some(tool) = registry.get(name) else {
                continue;
            };
            if !matches!(tool.kind(), ToolKind::Read | ToolKind::Write) {
                continue;
            }
            let subject = tool.prepare(input).map(|call| call.permission_subject());
            if let Ok(Subject::Path(path)) = subject
                && resolve_within(&[self.workspace.as_path()], &path).is_ok_and(|p| p.is_file())
                && seen.insert(path.clone())
            {
                files.push(path);
            }
        }
        files
    }

    /// Puts `files` (those no call in `history` still names) and the checklist at the end of
    /// the first message of `history` (the summary or the folded record), so the agent still
    /// knows where it stands.
    pub(crate) fn carry_over(&self, history: &mut [ChatMessage], files: &[String]) {
        let shown: HashSet<String> = history
            .iter()
            .flat_map(ChatMessage::tool_uses)
            .filter_map(|(_, _, input)| input.get("path")?.as_str().map(str::to_string))
            .collect();
        let mut blocks = Vec::new();
        let attached = self.files_block(files.iter().filter(|f| !shown.contains(*f)));
        blocks.extend(attached);
        let items = self.tool_ctx.todos.items();
        if !items.is_empty() {
            blocks.push(format!("{TODOS_HEADER}\n{}", render_todos(&items)));
        }
        if let Some(first) = history.first_mut() {
            first
                .content
                .extend(blocks.into_iter().map(|text| ContentBlock::Text { text }));
        }
    }

    /// The files as they are now, each cut at `reattach_file_bytes` and all at
    /// `reattach_total_bytes`; files outside the workspace, gone or not text are left out.
    fn files_block<'a>(&self, files: impl Iterator<Item = &'a String>) -> Option<String> {
        let limits = &self.compaction;
        let mut budget = limits.reattach_total_bytes;
        let mut out = String::new();
        for raw in files {
            if budget == 0 {
                break;
            }
            let Ok(path) = resolve_within(&[self.workspace.as_path()], raw) else {
                continue;
            };
            let Ok(text) = std::fs::read(&path).map(String::from_utf8) else {
                continue;
            };
            let Ok(text) = text else {
                continue;
            };
            let cut = floor_char_boundary(&text, limits.reattach_file_bytes.min(budget));
            budget -= cut;
            let note = if cut < text.len() {
                format!(", the first {cut} shown; read the rest if you need it")
            } else {
                String::new()
            };
            out.push_str(&format!(
                "\n--- {raw} ({} bytes{note}) ---\n{}",
                text.len(),
                &text[..cut]
            ));
        }
        (!out.is_empty()).then(|| format!("{FILES_HEADER}{out}"))
    }
}
