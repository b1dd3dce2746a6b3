//! `memory_write`, `memory_read`, `memory_forget`: the agent's long-term memory (see
//! `store::memory`), and memories a `Stop` / `PostToolUseFailure` hook asked to keep. The tools
//! touch only crew's memory folders, checked by the store, never the worktree: like the
//! checklist they need no permission (a deny rule still turns one off).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::ToolContext;
use crate::note::Note;
use crate::tool::{Tool, ToolError, ToolFuture, ToolKind, ToolOutput};
use crate::typed::TypedTool;
use crew_store::{AgentMemory, MemoryDraft, MemoryScope};

/// The three tools, for a registry.
pub fn memory_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(MemoryWriteTool),
        Arc::new(MemoryReadTool),
        Arc::new(MemoryForgetTool),
    ]
}

/// Whether a toolset includes the memory tools (then the prompt explains and indexes memory).
pub fn has_memory_tools(names: &[&str]) -> bool {
    names.contains(&"memory_read")
}

fn book(ctx: &ToolContext) -> Result<&dyn AgentMemory, ToolError> {
    ctx.memory
        .as_deref()
        .ok_or_else(|| ToolError::Refused("this agent has no memory folder".to_string()))
}

#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryWriteTool;

impl TypedTool for MemoryWriteTool {
    type Input = MemoryDraft;
    const NAME: &'static str = "memory_write";
    // It writes only crew's memory folder (checked by the store): nothing a mode guards.
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Keep something for your future conversations (a memory of the same name is replaced). \
         Only what will still matter and is not in the code or git history: type user (the \
         person and how they work), feedback (a correction or a confirmed approach, with why), \
         project (a decision, deadline or owner behind the work), reference (where to look \
         something up). The description is one line saying when the memory matters; write \
         file paths in backticks so crew can flag the memory when they are gone."
    }

    fn run(&self, draft: MemoryDraft, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let book = book(&ctx)?;
            let replaced = book
                .write(&draft)
                .map_err(|e| ToolError::Refused(e.to_string()))?;
            Ok(ToolOutput::ok(format!(
                "{} memory `{}` in {}",
                if replaced { "replaced" } else { "kept" },
                draft.name,
                book.scope_label(draft.scope)
            )))
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryReadInput {
    /// The memory to read; leave it out to list every memory of both scopes.
    pub name: Option<String>,
    /// Only this scope (default: yours, then the team's).
    pub scope: Option<MemoryScope>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryReadTool;

impl TypedTool for MemoryReadTool {
    type Input = MemoryReadInput;
    const NAME: &'static str = "memory_read";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Read a memory's body by name (yours first, then the team's), or with no name list every \
         memory of both scopes. A memory says what was true when it was written: check that a \
         file, function or flag it names still exists before you act on it."
    }

    fn is_concurrency_safe(&self, _input: &MemoryReadInput) -> bool {
        true
    }

    fn run(&self, input: MemoryReadInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let book = book(&ctx)?;
            let Some(name) = input.name else {
                let scopes = match input.scope {
                    Some(scope) => vec![scope],
                    None => vec![MemoryScope::Agent, MemoryScope::Team],
                };
                let mut out = String::new();
                for scope in scopes {
                    out.push_str(&format!("# {}\n", book.scope_label(scope)));
                    out.push_str(&book.prompt_index(scope, &ctx.workspace, usize::MAX, usize::MAX));
                }
                return Ok(ToolOutput::ok(out));
            };
            let memory = book
                .read(input.scope, &name)
                .map_err(|e| ToolError::Refused(e.to_string()))?;
            let missing = memory.missing_paths(&ctx.workspace);
            let mut out = format!(
                "{} ({}, in {}): {}\n\n{}",
                memory.name,
                memory.kind.as_str(),
                book.scope_label(memory.scope),
                memory.description,
                memory.body
            );
            if !missing.is_empty() {
                out.push_str(&format!(
                    "\n\n[STALE: {} no longer exists in your working directory; verify before \
                     acting on this memory, then update or forget it]",
                    missing.join(", ")
                ));
            }
            Ok(ToolOutput::ok(out))
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryForgetInput {
    pub name: String,
    /// Whose memory it is in (default: yours).
    #[serde(default)]
    pub scope: MemoryScope,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryForgetTool;

impl TypedTool for MemoryForgetTool {
    type Input = MemoryForgetInput;
    const NAME: &'static str = "memory_forget";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Delete a memory that is wrong or no longer useful (from your own memory unless scope \
         is team)."
    }

    fn run(&self, input: MemoryForgetInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let book = book(&ctx)?;
            book.forget(input.scope, &input.name)
                .map_err(|e| ToolError::Refused(e.to_string()))?;
            Ok(ToolOutput::ok(format!(
                "forgot memory `{}` from {}",
                input.name,
                book.scope_label(input.scope)
            )))
        })
    }
}

/// Writes the memories hooks asked to keep (`Note::Remember`), replacing each note by what
/// happened: a message for the person, or a warning naming why it was refused.
pub fn keep_hook_memories(book: Option<&dyn AgentMemory>, notes: &mut [Note]) {
    for note in notes.iter_mut() {
        let Note::Remember { event, memory } = note else {
            continue;
        };
        let event = *event;
        *note = match book.map(|book| (book, book.write(memory))) {
            Some((book, Ok(_))) => Note::SystemMessage {
                event,
                text: format!(
                    "a {event:?} hook kept memory `{}` in {}",
                    memory.name,
                    book.scope_label(memory.scope)
                ),
            },
            Some((_, Err(e))) => Note::Warning {
                text: format!(
                    "a {event:?} hook's memory `{}` was refused: {e}",
                    memory.name
                ),
            },
            None => Note::Warning {
                text: format!(
                    "a {event:?} hook's memory `{}` was dropped: this agent has no memory folder",
                    memory.name
                ),
            },
        };
    }
}
