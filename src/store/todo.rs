//! One agent's own checklist (its `todo_write` tool), as its status file carries it to the
//! screen.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What is to be done, in the imperative ("Run the tests").
    pub content: String,
    pub status: TodoStatus,
}

impl TodoItem {
    /// `[x]` done, `[~]` in progress, `[ ]` pending: the same marks for the model and the screen.
    pub fn mark(&self) -> &'static str {
        match self.status {
            TodoStatus::Completed => "[x]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Pending => "[ ]",
        }
    }
}

/// The list as text, one item a line with its mark.
pub fn render_todos(items: &[TodoItem]) -> String {
    items
        .iter()
        .map(|item| format!("{} {}\n", item.mark(), item.content))
        .collect()
}
