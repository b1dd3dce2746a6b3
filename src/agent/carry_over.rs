//! What must outlive a compaction that folded or summarised old turns: the agent's own
//! checklist, which it wrote in a `todo_write` call that may now be gone from the history.

use crate::agent::runtime::Agent;
use crate::model::ContentBlock;
use crate::store::render_todos;
use crate::tools::TodoList;

/// Starts the checklist block put back after a compaction.
pub const TODOS_HEADER: &str =
    "[your checklist, kept across compaction; update it with todo_write]";

impl Agent {
    /// The agent's checklist (watch it to show it elsewhere).
    pub fn todos(&self) -> &TodoList {
        &self.tool_ctx.todos
    }

    /// Puts the current checklist at the end of the first message (the summary or the folded
    /// record), so the agent still knows where it stands.
    pub(crate) fn reattach_todos(&mut self) {
        let items = self.tool_ctx.todos.items();
        if items.is_empty() {
            return;
        }
        if let Some(first) = self.history.first_mut() {
            first.content.push(ContentBlock::Text {
                text: format!("{TODOS_HEADER}\n{}", render_todos(&items)),
            });
        }
    }
}
