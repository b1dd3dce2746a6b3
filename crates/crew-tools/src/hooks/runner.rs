//! Running one hook command and reading its answer.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{CompiledHook, Confinement, HookEvent};
use crate::context::scrub_env;
use crate::note::Note;
use crate::permissions::HookPermission;
use crate::process::{ProcessEnd, ProcessSpec, run_process};
use crew_sandbox::SandboxPlan;

/// One hook's answer.
pub(super) enum HookReply {
    Skipped,
    Blocked(String),
    Output(Box<HookOutput>),
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct HookOutput {
    /// `false`: the agent stops after this hook, whatever else it said.
    #[serde(rename = "continue")]
    continue_: Option<bool>,
    /// Why, for the person (the model is not told).
    stop_reason: Option<String>,
    /// Keeps the hook's `systemMessage` off the transcript and the screen.
    suppress_output: Option<bool>,
    decision: Option<String>,
    reason: Option<String>,
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    pub(super) updated_input: Option<Value>,
    additional_context: Option<String>,
    system_message: Option<String>,
    /// A memory to keep (`Stop` and `PostToolUseFailure` only): the fields of `memory_write`.
    memory: Option<Value>,
    /// Claude-Code-style nesting of the same fields; top-level values win.
    hook_specific_output: Option<Box<HookOutput>>,
}

impl HookOutput {
    fn flatten(mut self) -> Self {
        if let Some(inner) = self.hook_specific_output.take() {
            let inner = inner.flatten();
            self.continue_ = self.continue_.or(inner.continue_);
            self.stop_reason = self.stop_reason.or(inner.stop_reason);
            self.suppress_output = self.suppress_output.or(inner.suppress_output);
            self.decision = self.decision.or(inner.decision);
            self.reason = self.reason.or(inner.reason);
            self.permission_decision = self.permission_decision.or(inner.permission_decision);
            self.permission_decision_reason = self
                .permission_decision_reason
                .or(inner.permission_decision_reason);
            self.updated_input = self.updated_input.or(inner.updated_input);
            self.additional_context = self.additional_context.or(inner.additional_context);
            self.system_message = self.system_message.or(inner.system_message);
            self.memory = self.memory.or(inner.memory);
        }
        self
    }

    pub(super) fn blocks(&self) -> Option<String> {
        (self.decision.as_deref() == Some("block")).then(|| {
            self.reason
                .clone()
                .unwrap_or_else(|| "blocked by hook".to_string())
        })
    }

    /// `continue: false`, as the reason the agent stopped.
    pub(super) fn halt(&self) -> Option<String> {
        (self.continue_ == Some(false)).then(|| {
            self.stop_reason
                .clone()
                .unwrap_or_else(|| "a hook said not to continue".to_string())
        })
    }

    pub(super) fn notes(&self, event: HookEvent) -> Vec<Note> {
        let context = self
            .additional_context
            .iter()
            .map(|t| Note::AdditionalContext {
                event,
                text: t.clone(),
            });
        let shown = self.suppress_output != Some(true);
        let message = self
            .system_message
            .iter()
            .filter(|_| shown)
            .map(|t| Note::SystemMessage {
                event,
                text: t.clone(),
            });
        context
            .chain(message)
            .chain(self.memory_note(event))
            .collect()
    }

    /// The hook's `memory`, to be kept by the agent, or why it cannot be.
    fn memory_note(&self, event: HookEvent) -> Option<Note> {
        let memory = self.memory.as_ref()?;
        if !matches!(event, HookEvent::Stop | HookEvent::PostToolUseFailure) {
            return Some(Note::Warning {
                text: format!(
                    "a {event:?} hook cannot keep a memory (only Stop and PostToolUseFailure hooks can); ignored"
                ),
            });
        }
        Some(match serde_json::from_value(memory.clone()) {
            Ok(memory) => Note::Remember { event, memory },
            Err(e) => Note::Warning {
                text: format!("a {event:?} hook's memory is invalid ({e}); ignored"),
            },
        })
    }
}

const HOOK_OUTPUT_CAP: usize = 1024 * 1024;

pub(super) fn parse_permission(output: &HookOutput, command: &str) -> Option<HookPermission> {
    let reason = || {
        output
            .permission_decision_reason
            .clone()
            .unwrap_or_else(|| format!("hook `{command}`"))
    };
    match output.permission_decision.as_deref()? {
        "allow" => Some(HookPermission::Allow),
        "deny" => Some(HookPermission::Deny(reason())),
        "ask" => Some(HookPermission::Ask(reason())),
        other => {
            tracing::warn!(%command, decision = other, "hook permissionDecision is not allow|deny|ask; ignored");
            None
        }
    }
}

pub(super) async fn run_hook(
    hook: &CompiledHook,
    confinement: &Confinement,
    payload: &Value,
    cwd: &Path,
    cancel: &CancellationToken,
) -> HookReply {
    let command = &hook.spec.command;
    let sandbox = &confinement.sandbox;
    if confinement.agent_writes
        && let SandboxPlan::Unavailable(missing) = sandbox.plan()
    {
        // Unconfined, in a folder the agent writes, it would run the agent's code as the
        // person: it does not run, and a tool call it guards does not either.
        let why = format!(
            "hook `{command}` not run: the sandbox is unavailable ({missing}) and it would run \
             unconfined in a folder the agent writes"
        );
        tracing::warn!("{why}");
        return if hook.spec.event == HookEvent::PreToolUse {
            HookReply::Blocked(why)
        } else {
            HookReply::Skipped
        };
    }
    let env = sandbox.environment(scrub_env(std::env::vars()));
    let args = vec!["-c".to_string(), command.clone()];
    let prepared = match sandbox.prepare(cwd, "sh", args, env) {
        Ok(prepared) => prepared,
        Err(e) => {
            tracing::warn!(%command, error = %e, "hook could not be confined; skipped");
            return HookReply::Skipped;
        }
    };
    let spec = ProcessSpec {
        program: prepared.program.clone(),
        args: prepared.args.clone(),
        cwd: cwd.to_path_buf(),
        env: Some(prepared.env.clone()),
        stdin: payload.to_string().into_bytes(),
        timeout: Duration::from_secs(hook.spec.timeout_secs),
        output_cap: HOOK_OUTPUT_CAP,
    };
    let result = run_process(spec, cancel).await;
    // The hook's private temporary folder goes only once it is over.
    drop(prepared);
    let result = match result {
        Ok(result) => result,
        Err(e) => {
            tracing::warn!(%command, error = %e, "hook could not start; skipped");
            return HookReply::Skipped;
        }
    };
    let status = match result.end {
        ProcessEnd::Exited(status) => status,
        ProcessEnd::TimedOut => {
            tracing::warn!(%command, secs = hook.spec.timeout_secs, "hook timed out; skipped");
            return HookReply::Skipped;
        }
        ProcessEnd::Cancelled => return HookReply::Skipped,
    };
    match status.code() {
        Some(0) => {}
        Some(2) => {
            let stderr = String::from_utf8_lossy(&result.stderr).trim().to_string();
            return HookReply::Blocked(if stderr.is_empty() {
                format!("blocked by hook `{command}`")
            } else {
                stderr
            });
        }
        code => {
            tracing::warn!(%command, ?code, "hook failed; skipped");
            return HookReply::Skipped;
        }
    }
    let stdout = String::from_utf8_lossy(&result.stdout);
    if stdout.trim().is_empty() {
        return HookReply::Output(Box::default());
    }
    match serde_json::from_str::<HookOutput>(stdout.trim()) {
        Ok(output) => HookReply::Output(Box::new(output.flatten())),
        // As in Claude Code, these two events take plain text on stdout as context.
        Err(_)
            if matches!(
                hook.spec.event,
                HookEvent::UserPromptSubmit | HookEvent::SessionStart
            ) =>
        {
            HookReply::Output(Box::new(HookOutput {
                additional_context: Some(stdout.trim().to_string()),
                ..HookOutput::default()
            }))
        }
        Err(e) => {
            tracing::warn!(%command, error = %e, "hook printed invalid JSON; skipped");
            HookReply::Skipped
        }
    }
}
