//! External hook commands from configuration. Each runs as `sh -c command` with a JSON
//! description of the event on stdin and may answer with JSON on stdout (block, permission
//! decision, updated input, extra context) or block by exiting with code 2. A hook that
//! fails, prints bad JSON or times out is logged and skipped: a broken hook never stops work.

use std::path::Path;
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::tools::note::Note;
use crate::tools::permissions::HookPermission;
use crate::tools::process::{ProcessEnd, ProcessSpec, run_process};
use crate::tools::tool::ToolOutput;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    Stop,
}

fn default_timeout_secs() -> u64 {
    60
}

/// One hook as `crew.toml` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    pub event: HookEvent,
    /// Regex over the tool name, matched in full; absent, empty or `*` = every tool.
    #[serde(default)]
    pub matcher: Option<String>,
    pub command: String,
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hook matcher `{matcher}` is not a valid regex: {reason}")]
pub struct HookError {
    pub matcher: String,
    pub reason: String,
}

#[derive(Debug, Clone)]
struct CompiledHook {
    spec: HookSpec,
    matcher: Option<Regex>,
}

/// The configured hooks, matchers compiled.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Vec<CompiledHook>,
}

/// What the PreToolUse hooks said.
#[derive(Debug, Clone, Default)]
pub struct PreToolUse {
    /// The call must not run; the reason goes to the model.
    pub block: Option<String>,
    /// The most restrictive permission decision any hook gave (deny > ask > allow).
    pub permission: Option<HookPermission>,
    /// The input the tool should receive instead of the model's.
    pub updated_input: Option<Value>,
    pub notes: Vec<Note>,
}

/// Whether the agent may stop, after the Stop hooks ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopDecision {
    Stop {
        notes: Vec<Note>,
    },
    /// A hook blocked the stop: the reason goes to the model, which continues once.
    Continue {
        reason: String,
        notes: Vec<Note>,
    },
}

/// One per turn: allows at most one forced continuation, so a Stop hook that always blocks
/// cannot keep the agent looping.
#[derive(Debug, Clone, Default)]
pub struct StopGuard {
    forced: bool,
}

impl StopGuard {
    pub fn new() -> Self {
        Self::default()
    }
}

/// One hook's answer.
enum HookReply {
    Skipped,
    Blocked(String),
    Output(HookOutput),
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HookOutput {
    decision: Option<String>,
    reason: Option<String>,
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
    system_message: Option<String>,
    /// Claude-Code-style nesting of the same fields; top-level values win.
    hook_specific_output: Option<Box<HookOutput>>,
}

impl HookOutput {
    fn flatten(mut self) -> Self {
        if let Some(inner) = self.hook_specific_output.take() {
            let inner = inner.flatten();
            self.decision = self.decision.or(inner.decision);
            self.reason = self.reason.or(inner.reason);
            self.permission_decision = self.permission_decision.or(inner.permission_decision);
            self.permission_decision_reason = self
                .permission_decision_reason
                .or(inner.permission_decision_reason);
            self.updated_input = self.updated_input.or(inner.updated_input);
            self.additional_context = self.additional_context.or(inner.additional_context);
            self.system_message = self.system_message.or(inner.system_message);
        }
        self
    }

    fn blocks(&self) -> Option<String> {
        (self.decision.as_deref() == Some("block")).then(|| {
            self.reason
                .clone()
                .unwrap_or_else(|| "blocked by hook".to_string())
        })
    }

    fn notes(&self, event: HookEvent) -> Vec<Note> {
        let context = self
            .additional_context
            .iter()
            .map(|t| Note::AdditionalContext {
                event,
                text: t.clone(),
            });
        let message = self.system_message.iter().map(|t| Note::SystemMessage {
            event,
            text: t.clone(),
        });
        context.chain(message).collect()
    }
}

const HOOK_OUTPUT_CAP: usize = 1024 * 1024;

impl Hooks {
    pub fn new(specs: Vec<HookSpec>) -> Result<Self, HookError> {
        let hooks = specs
            .into_iter()
            .map(|spec| {
                let matcher = match spec.matcher.as_deref().map(str::trim) {
                    None | Some("" | "*") => None,
                    Some(pattern) => Some(Regex::new(&format!("^(?:{pattern})$")).map_err(
                        |e| HookError {
                            matcher: pattern.to_string(),
                            reason: e.to_string(),
                        },
                    )?),
                };
                Ok(CompiledHook { spec, matcher })
            })
            .collect::<Result<_, HookError>>()?;
        Ok(Self { hooks })
    }

    fn matching(
        &self,
        event: HookEvent,
        tool: Option<&str>,
    ) -> impl Iterator<Item = &CompiledHook> {
        self.hooks.iter().filter(move |h| {
            h.spec.event == event
                && match (&h.matcher, tool) {
                    (Some(re), Some(tool)) => re.is_match(tool),
                    _ => true,
                }
        })
    }

    /// Runs the PreToolUse hooks in order; each sees the input as the previous one left it.
    /// The first block stops the rest.
    pub async fn pre_tool_use(
        &self,
        tool: &str,
        input: &Value,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> PreToolUse {
        let mut result = PreToolUse::default();
        for hook in self.matching(HookEvent::PreToolUse, Some(tool)) {
            let current = result.updated_input.as_ref().unwrap_or(input);
            let payload = tool_payload(HookEvent::PreToolUse, tool, current, None, cwd);
            let output = match run_hook(hook, &payload, cwd, cancel).await {
                HookReply::Skipped => continue,
                HookReply::Blocked(reason) => {
                    result.block = Some(reason);
                    return result;
                }
                HookReply::Output(output) => output,
            };
            result.notes.extend(output.notes(HookEvent::PreToolUse));
            if let Some(reason) = output.blocks() {
                result.block = Some(reason);
                return result;
            }
            if let Some(permission) = parse_permission(&output, &hook.spec.command) {
                result.permission = Some(stricter(result.permission.take(), permission));
            }
            match output.updated_input {
                Some(updated @ Value::Object(_)) => result.updated_input = Some(updated),
                Some(_) => {
                    tracing::warn!(command = %hook.spec.command, "hook updatedInput is not an object; ignored")
                }
                None => {}
            }
        }
        result
    }

    /// Runs PostToolUse (or, for an error result, PostToolUseFailure) hooks; their output
    /// can only add notes, since the tool already ran.
    pub async fn post_tool_use(
        &self,
        tool: &str,
        input: &Value,
        response: &ToolOutput,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> Vec<Note> {
        let event = if response.is_error {
            HookEvent::PostToolUseFailure
        } else {
            HookEvent::PostToolUse
        };
        let mut notes = Vec::new();
        for hook in self.matching(event, Some(tool)) {
            let payload = tool_payload(event, tool, input, Some(response), cwd);
            match run_hook(hook, &payload, cwd, cancel).await {
                HookReply::Skipped => {}
                HookReply::Blocked(text) => notes.push(Note::HookFeedback { event, text }),
                HookReply::Output(output) => {
                    notes.extend(output.notes(event));
                    if let Some(text) = output.blocks() {
                        notes.push(Note::HookFeedback { event, text });
                    }
                }
            }
        }
        notes
    }

    /// Runs the Stop hooks. The first time in a turn a hook blocks, the agent is told to
    /// continue; on the re-run hooks see `stop_hook_active: true`, and a second block is
    /// ignored with a warning.
    pub async fn run_stop(
        &self,
        guard: &mut StopGuard,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> StopDecision {
        let payload = json!({
            "hook_event_name": HookEvent::Stop,
            "tool_name": Value::Null,
            "tool_input": Value::Null,
            "tool_response": Value::Null,
            "cwd": cwd,
            "stop_hook_active": guard.forced,
        });
        let mut notes = Vec::new();
        let mut reasons = Vec::new();
        for hook in self.matching(HookEvent::Stop, None) {
            match run_hook(hook, &payload, cwd, cancel).await {
                HookReply::Skipped => {}
                HookReply::Blocked(reason) => reasons.push(reason),
                HookReply::Output(output) => {
                    notes.extend(output.notes(HookEvent::Stop));
                    reasons.extend(output.blocks());
                }
            }
        }
        if reasons.is_empty() {
            return StopDecision::Stop { notes };
        }
        if guard.forced {
            tracing::warn!("Stop hook blocked again after a forced continuation; stopping anyway");
            notes.push(Note::Warning {
                text: format!(
                    "a Stop hook blocked again ({}); ignored: at most one forced continuation per turn",
                    reasons.join("; ")
                ),
            });
            return StopDecision::Stop { notes };
        }
        guard.forced = true;
        StopDecision::Continue {
            reason: reasons.join("\n"),
            notes,
        }
    }
}

fn tool_payload(
    event: HookEvent,
    tool: &str,
    input: &Value,
    response: Option<&ToolOutput>,
    cwd: &Path,
) -> Value {
    json!({
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": input,
        "tool_response": response,
        "cwd": cwd,
        "stop_hook_active": false,
    })
}

fn parse_permission(output: &HookOutput, command: &str) -> Option<HookPermission> {
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

fn stricter(current: Option<HookPermission>, new: HookPermission) -> HookPermission {
    let rank = |p: &HookPermission| match p {
        HookPermission::Allow => 0,
        HookPermission::Ask(_) => 1,
        HookPermission::Deny(_) => 2,
    };
    match current {
        Some(current) if rank(&current) >= rank(&new) => current,
        _ => new,
    }
}

async fn run_hook(
    hook: &CompiledHook,
    payload: &Value,
    cwd: &Path,
    cancel: &CancellationToken,
) -> HookReply {
    let command = &hook.spec.command;
    let spec = ProcessSpec {
        program: "sh".to_string(),
        args: vec!["-c".to_string(), command.clone()],
        cwd: cwd.to_path_buf(),
        env: None,
        stdin: payload.to_string().into_bytes(),
        timeout: Duration::from_secs(hook.spec.timeout_secs),
        output_cap: HOOK_OUTPUT_CAP,
    };
    let result = match run_process(spec, cancel).await {
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
        return HookReply::Output(HookOutput::default());
    }
    match serde_json::from_str::<HookOutput>(stdout.trim()) {
        Ok(output) => HookReply::Output(output.flatten()),
        Err(e) => {
            tracing::warn!(%command, error = %e, "hook printed invalid JSON; skipped");
            HookReply::Skipped
        }
    }
}
