//! `todo_write` / `todo_read`: the agent's own checklist for a multi-step job. The list lives
//! with the agent's tool context (one per agent session), not in the workspace, so the tools
//! touch nothing a permission guards; whoever shows the agent may watch it change.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::ToolContext;
use crate::tool::{Tool, ToolKind, ToolOutput};
use crate::{NoInput, ToolFuture, TypedTool};
use crew_store::{TodoItem, TodoStatus, render_todos};

type Watcher = Arc<dyn Fn(&[TodoItem]) + Send + Sync>;

/// The agent's checklist, shared by every clone of its tool context.
#[derive(Clone, Default)]
pub struct TodoList {
    inner: Arc<Mutex<(Vec<TodoItem>, Option<Watcher>)>>,
}

impl std::fmt::Debug for TodoList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.items()).finish()
    }
}

impl TodoList {
    pub fn items(&self) -> Vec<TodoItem> {
        self.lock().0.clone()
    }

    /// Replaces the list and tells the watcher.
    pub fn replace(&self, items: Vec<TodoItem>) {
        let watcher = {
            let mut inner = self.lock();
            inner.0 = items.clone();
            inner.1.clone()
        };
        if let Some(watch) = watcher {
            watch(&items);
        }
    }

    /// Calls `watch` with the list after every change (e.g. to show it on the screen).
    pub fn watch(&self, watch: impl Fn(&[TodoItem]) + Send + Sync + 'static) {
        self.lock().1 = Some(Arc::new(watch));
    }

    fn lock(&self) -> MutexGuard<'_, (Vec<TodoItem>, Option<Watcher>)> {
        // Every write replaces the list whole: a poisoned lock still holds a valid one.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The two tools, for a registry.
pub fn todo_tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(TodoWriteTool), Arc::new(TodoReadTool)]
}

#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWriteTool;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteInput {
    pub todos: Vec<TodoItem>,
}

impl TypedTool for TodoWriteTool {
    type Input = TodoWriteInput;
    const NAME: &'static str = "todo_write";
    // It changes only the agent's own list: nothing a mode or rule guards.
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Replace your own checklist for this job (the whole list each time). Use it for work of \
         three steps or more: add the steps, mark one in_progress before you start it and \
         completed as soon as it is done. Only you see it (and the person watching)."
    }

    fn validate(&self, input: &TodoWriteInput, _ctx: &ToolContext) -> Result<(), String> {
        let doing = input
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::InProgress)
            .count();
        if doing > 1 {
            return Err(format!(
                "{doing} items are in_progress; keep exactly one in progress at a time"
            ));
        }
        Ok(())
    }

    fn run(&self, input: TodoWriteInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let done = input
                .todos
                .iter()
                .filter(|t| t.status == TodoStatus::Completed)
                .count();
            let total = input.todos.len();
            let text = render_todos(&input.todos);
            ctx.todos.replace(input.todos);
            Ok(ToolOutput::ok(format!(
                "checklist updated ({done} of {total} done):\n{text}"
            )))
        })
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct TodoReadTool;

impl TypedTool for TodoReadTool {
    type Input = NoInput;
    const NAME: &'static str = "todo_read";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Show your own checklist as you last wrote it with todo_write."
    }

    fn is_concurrency_safe(&self, _input: &NoInput) -> bool {
        true
    }

    fn run(&self, _input: NoInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let items = ctx.todos.items();
            Ok(ToolOutput::ok(if items.is_empty() {
                "(your checklist is empty; write one with todo_write)".to_string()
            } else {
                render_todos(&items)
            }))
        })
    }
}
