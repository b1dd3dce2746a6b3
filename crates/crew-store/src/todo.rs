//! One agent's own checklist (its `todo_write` tool), as its status file carries it to the
//! screen.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

// Also the `todo_write` tool's input, hence the schema; its doc comments are read by the model.
/// One step of the checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What is to be done, in the imperative ("Run the tests").
    #[schemars(length(min = 1))]
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
