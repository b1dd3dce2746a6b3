//! The governed path of one tool call, in this order:
//! find → schema → deserialise → validate → PreToolUse hooks → permission → sandbox → call →
//! PostToolUse / PostToolUseFailure hooks → result budget.
//! Every failure becomes an error result the model sees; `run` itself never fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::context::ToolContext;
use crate::hooks::{HookEvent, HookRun, Hooks};
use crate::memory::keep_hook_memories;
use crate::note::Note;
use crate::permissions::{
    DecidedBy, Decision, PermissionMode, PermissionOutcome, PermissionPolicy, PermissionQuery,
};
use crate::prompter::{PermissionAnswer, PermissionAsk, Prompter};
use crate::registry::ToolRegistry;
use crate::spill::apply_budget;
use crate::tool::{PreparedCall, Subject, Tool, ToolError, ToolKind, ToolOutput};
use crew_sandbox::SandboxPlan;

/// The Notification type (and matcher value) for a permission request.
const PERMISSION_PROMPT: &str = "permission_prompt";

/// A tool use as the model emitted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// Everything about one call, for the transcript and the next request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallOutcome {
    pub id: String,
    pub name: String,
    /// What the model sent (kept byte-for-byte for the conversation history).
    pub original_input: Value,
    /// What the tool received (after hook rewrites).
    pub effective_input: Value,
    pub output: ToolOutput,
    /// `None` when the call failed before the permission step.
    pub decision: Option<PermissionOutcome>,
    pub spilled: Option<PathBuf>,
    pub notes: Vec<Note>,
    /// A hook's `continue: false` around this call: the turn ends after it, for this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt: Option<String>,
}

impl ToolCallOutcome {
    fn start(call: &ToolCall) -> Self {
        Self {
            id: call.id.clone(),
            name: call.name.clone(),
            original_input: call.input.clone(),
            effective_input: call.input.clone(),
            output: ToolOutput::ok(""),
            decision: None,
            spilled: None,
            notes: Vec::new(),
            halt: None,
        }
    }

    fn fail(mut self, message: impl Into<String>) -> Self {
        self.output = ToolOutput::error(message);
        self
    }

    /// An error result for a call that never finished because it was cancelled.
    pub fn cancelled(call: &ToolCall, message: impl Into<String>) -> Self {
        Self::start(call).fail(message)
    }
}

/// The tools, the permission policy, the hooks and who to ask.
pub struct Pipeline {
    pub registry: ToolRegistry,
    /// Shared with the agent's subagents, which stay under the same policy (its plan approval
    /// and the rules the person remembered included).
    pub permissions: Arc<PermissionPolicy>,
    pub hooks: Hooks,
    /// `None`: every ask is denied.
    pub prompter: Option<Arc<dyn Prompter>>,
}

impl Pipeline {
    pub fn new(registry: ToolRegistry, permissions: PermissionPolicy) -> Self {
        Self {
            registry,
            permissions: Arc::new(permissions),
            hooks: Hooks::default(),
            prompter: None,
        }
    }

    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    pub fn with_prompter(mut self, prompter: Arc<dyn Prompter>) -> Self {
        self.prompter = Some(prompter);
        self
    }

    pub async fn run(&self, call: ToolCall, ctx: &ToolContext) -> ToolCallOutcome {
        let mut outcome = ToolCallOutcome::start(&call);
        if ctx.cancel.is_cancelled() {
            return outcome.fail("cancelled before it started");
        }
        let Some(tool) = self.registry.get(&call.name) else {
            let known = self.registry.names().join(", ");
            return outcome.fail(format!(
                "unknown tool `{}`; available tools: {known}",
                call.name
            ));
        };
        let mut prepared = match self.prepare(tool.as_ref(), &call.input, ctx) {
            Ok(prepared) => prepared,
            Err(message) => return outcome.fail(message),
        };

        let pre = self
            .hooks
            .pre_tool_use(&call.name, &call.input, &ctx.workspace, &ctx.cancel)
            .await;
        outcome.notes.extend(pre.notes);
        outcome.halt = pre.halt;
        if let Some(reason) = pre.block {
            return outcome.fail(format!("blocked by PreToolUse hook: {reason}"));
        }
        if let Some(updated) = pre.updated_input {
            // The rewritten input gets the same checks as the model's.
            prepared = match self.prepare(tool.as_ref(), &updated, ctx) {
                Ok(prepared) => prepared,
                Err(message) => {
                    return outcome.fail(format!(
                        "input rewritten by a PreToolUse hook is invalid: {message}"
                    ));
                }
            };
            outcome.effective_input = updated;
        }

        let decision = self
            .permission(
                tool.as_ref(),
                prepared.permission_subject(),
                &outcome.effective_input,
                ctx,
                pre.permission,
            )
            .await;
        outcome.decision = Some(decision.clone());
        if let Decision::Deny(reason) = decision.decision {
            return outcome.fail(format!("permission denied: {reason}"));
        }

        // Approved by the person, but unconfined: the transcript says so.
        if tool.kind() == ToolKind::Exec
            && let SandboxPlan::Unavailable(_) = ctx.sandbox.plan()
            && let Some(warning) = ctx.sandbox.warning()
        {
            outcome.notes.push(Note::Warning { text: warning });
        }

        // Granted because it only reads (plan mode): it runs so, whatever the read-only list
        // got wrong about it.
        let call_ctx = if tool.kind() == ToolKind::Exec
            && decision.decided_by == DecidedBy::Mode(PermissionMode::Plan)
        {
            ctx.read_only()
        } else {
            ctx.clone()
        };
        let result = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
            result = prepared.call(call_ctx) => result,
        };
        let output = result.unwrap_or_else(|e| ToolOutput::error(e.to_string()));

        let post = self
            .hooks
            .post_tool_use(
                &call.name,
                &outcome.effective_input,
                &output,
                &ctx.workspace,
                &ctx.cancel,
            )
            .await;
        outcome.notes.extend(post.notes);
        keep_hook_memories(ctx.memory.as_deref(), &mut outcome.notes);
        outcome.halt = post.halt;

        let (output, spilled) =
            apply_budget(output, tool.result_budget(), &ctx.spill_dir, &call.id).await;
        outcome.output = output;
        outcome.spilled = spilled;
        tracing::debug!(
            id = %outcome.id,
            tool = %outcome.name,
            is_error = outcome.output.is_error,
            spilled = outcome.spilled.is_some(),
            "tool call finished"
        );
        outcome
    }

    /// Notification hooks: the agent is about to wait for a person's permission. Their output
    /// changes nothing; it is logged.
    async fn notify_person(&self, tool: &str, reason: &str, ctx: &ToolContext) {
        let run = self
            .hooks
            .run_event(
                HookEvent::Notification,
                Some(PERMISSION_PROMPT),
                json!({
                    "notification_type": PERMISSION_PROMPT,
                    "message": format!("permission needed to use {tool}: {reason}"),
                    "tool_name": tool,
                }),
                &ctx.workspace,
                &ctx.cancel,
            )
            .await;
        if run != HookRun::default() {
            tracing::info!(?run, "Notification hooks answered; nothing to act on");
        }
    }

    /// The one place a model's input is checked and made typed: the schema (every problem at
    /// once, each naming its field), deserialisation into the tool's input, then the tool's own
    /// semantic validation.
    fn prepare<'t>(
        &self,
        tool: &'t dyn Tool,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<Box<dyn PreparedCall + 't>, String> {
        let invalid =
            |problems: String| format!("invalid input for `{}`:\n{problems}", tool.name());
        if let Some(Err(problems)) = self.registry.check_input(tool.name(), input) {
            return Err(invalid(problems));
        }
        let prepared = tool.prepare(input).map_err(invalid)?;
        prepared
            .validate(ctx)
            .map_err(|reason| format!("`{}` refused the input: {reason}", tool.name()))?;
        Ok(prepared)
    }

    async fn permission(
        &self,
        tool: &dyn Tool,
        subject: Subject,
        input: &Value,
        ctx: &ToolContext,
        hook: Option<crate::permissions::HookPermission>,
    ) -> PermissionOutcome {
        let read_roots = ctx.read_roots();
        let write_roots = ctx.write_roots();
        let roots: &[&Path] = if tool.kind() == ToolKind::Read {
            &read_roots
        } else {
            &write_roots
        };
        let query = PermissionQuery {
            tool: tool.name(),
            kind: tool.kind(),
            subject: &subject,
            roots,
        };
        let mut outcome = self.permissions.decide(&query, hook.as_ref());
        // No rule, list or mode may let a command run unconfined: the person decides each one.
        if tool.kind() == ToolKind::Exec
            && outcome.decision == Decision::Allow
            && let SandboxPlan::Unavailable(missing) = ctx.sandbox.plan()
        {
            outcome.decision = Decision::Ask(format!(
                "the sandbox is unavailable here ({missing}), so this command would run unconfined"
            ));
        }
        if let Decision::Ask(reason) = outcome.decision {
            // Also this ask is the mode's to settle: `dont-ask` denies it.
            outcome.decision =
                crate::permissions::mode::settle_ask(self.permissions.mode(), reason);
        }
        let Decision::Ask(reason) = outcome.decision else {
            return outcome;
        };
        let Some(prompter) = &self.prompter else {
            return PermissionOutcome::new(
                Decision::Deny(format!("{reason}; no one is there to ask")),
                DecidedBy::NoPrompter,
            );
        };
        self.notify_person(tool.name(), &reason, ctx).await;
        let ask = PermissionAsk {
            tool: tool.name().to_string(),
            input: input.clone(),
            subject,
            reason,
            workspace: ctx.workspace.clone(),
            purpose: ctx.purpose.clone(),
        };
        let answer = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => PermissionAnswer::Deny("cancelled while waiting for an answer".to_string()),
            answer = prompter.ask(ask) => answer,
        };
        let decision = match answer {
            PermissionAnswer::Allow => Decision::Allow,
            PermissionAnswer::AllowAlways(rule) => {
                self.permissions.remember_written(&rule);
                Decision::Allow
            }
            PermissionAnswer::Deny(reason) => Decision::Deny(reason),
        };
        PermissionOutcome::new(decision, DecidedBy::Prompter)
    }
}
