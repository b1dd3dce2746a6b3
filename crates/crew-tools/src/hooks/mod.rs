//! External hook commands from configuration. Each runs as `sh -c command` with a JSON
//! description of the event on stdin and may answer with JSON on stdout (`continue`,
//! `stopReason`, `suppressOutput`, `systemMessage`, `decision`, `additionalContext`,
//! permission decision, updated input, also nested in `hookSpecificOutput`) or block by
//! exiting with code 2 (stderr is the reason). A hook that fails, prints bad JSON or runs past
//! its `timeout_secs` is logged and skipped: a broken hook never stops work.
//!
//! A hook runs where the agent works, and whatever its command runs or reads there (its
//! script, `cargo test`'s build scripts, a linter's config) the agent may have written. So
//! hooks are confined ([`Hooks::confined`]): the agent's own sandbox with its workspace
//! read-only, the same environment allow-list; and for an agent that writes its workspace a
//! hook's `allow` counts for nothing (its `ask`, `deny` and blocks still do: they only tighten).
//! Resolving hook commands from the person's checkout instead would not be sound: a command is
//! a shell line whose reads no one can list.

use std::path::Path;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::note::Note;
use crate::permissions::HookPermission;
use crate::tool::ToolOutput;
use crew_sandbox::Sandbox;

mod runner;

use runner::{HookReply, parse_permission, run_hook};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    Stop,
    /// Before a turn's input reaches the model; may block it or add context.
    UserPromptSubmit,
    /// Before the first turn of an agent session; may add context.
    SessionStart,
    /// Before the history is compacted (matcher: `proactive` or `reactive`).
    PreCompact,
    /// The agent needs the person (matcher: the notification type, `permission_prompt`).
    Notification,
    /// A subagent is about to finish (matcher: its role); may send it back to work once, as
    /// `Stop` does for an agent.
    SubagentStop,
}

fn default_timeout_secs() -> u64 {
    60
}

/// One hook as `crew.toml` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    pub event: HookEvent,
    /// Regex matched in full against the tool name (for UserPromptSubmit nothing; for
    /// SessionStart the source, PreCompact the trigger, Notification the type, SubagentStop
    /// the subagent's role); absent, empty or `*` = everything.
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

/// The configured hooks, matchers compiled, and how their commands are confined.
#[derive(Debug, Clone)]
pub struct Hooks {
    hooks: Vec<CompiledHook>,
    confinement: Confinement,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            hooks: Vec::new(),
            confinement: Confinement {
                sandbox: Sandbox::off(),
                agent_writes: false,
            },
        }
    }
}

/// Where and how hook commands run for one agent.
#[derive(Debug, Clone)]
struct Confinement {
    /// The agent's sandbox with the workspace read-only.
    sandbox: Sandbox,
    /// Whether the agent writes the folder its hooks run in: then nothing a hook says can
    /// loosen a decision, and a hook that could not be confined does not run.
    agent_writes: bool,
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
    /// A hook's `continue: false`: the call does not run and the turn ends, for this reason.
    pub halt: Option<String>,
    pub notes: Vec<Note>,
}

/// What the hooks of one event said, beyond tool permissions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookRun {
    /// A hook's `continue: false` (its `stopReason`): the agent stops.
    pub halt: Option<String>,
    /// `decision: "block"` reasons and exit-2 stderr, in hook order.
    pub blocks: Vec<String>,
    pub notes: Vec<Note>,
}

impl HookRun {
    /// The hooks' `additionalContext`, for the model.
    pub fn context(&self) -> Vec<&str> {
        self.notes
            .iter()
            .filter_map(|n| match n {
                Note::AdditionalContext { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// Whether the agent may stop, after the Stop hooks ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopDecision {
    Stop {
        notes: Vec<Note>,
        /// A hook's `continue: false`: the stop is the hook's, for this reason.
        halt: Option<String>,
    },
    /// A hook blocked the stop: the reason goes to the model, which continues once.
    Continue { reason: String, notes: Vec<Note> },
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
        Ok(Self {
            hooks,
            ..Self::default()
        })
    }

    /// Hooks for an agent whose commands run in `sandbox`: theirs run in it too, with the
    /// workspace read-only. Without this (hand-built hooks in tests) they run unconfined.
    pub fn confined(mut self, sandbox: &Sandbox) -> Self {
        self.confinement = Confinement {
            sandbox: sandbox.read_only(),
            agent_writes: sandbox.workspace_writable,
        };
        self
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
            let output = match run_hook(hook, &self.confinement, &payload, cwd, cancel).await {
                HookReply::Skipped => continue,
                HookReply::Blocked(reason) => {
                    result.block = Some(reason);
                    return result;
                }
                HookReply::Output(output) => output,
            };
            result.notes.extend(output.notes(HookEvent::PreToolUse));
            if let Some(halt) = output.halt() {
                result.block = Some(format!("the hook stopped the agent: {halt}"));
                result.halt = Some(halt);
                return result;
            }
            if let Some(reason) = output.blocks() {
                result.block = Some(reason);
                return result;
            }
            match parse_permission(&output, &hook.spec.command) {
                Some(HookPermission::Allow) if self.confinement.agent_writes => {
                    result.notes.push(Note::Warning {
                        text: format!(
                            "hook `{}` answered allow; ignored: it runs in the folder this agent \
                             writes, so its answer may be the agent's own (a hook can ask or \
                             deny here, not allow)",
                            hook.spec.command
                        ),
                    });
                }
                Some(permission) => {
                    result.permission = Some(stricter(result.permission.take(), permission));
                }
                None => {}
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

    /// Runs PostToolUse (or, for an error result, PostToolUseFailure) hooks. The tool already
    /// ran: a block becomes feedback for the model, and `continue: false` ends the turn.
    pub async fn post_tool_use(
        &self,
        tool: &str,
        input: &Value,
        response: &ToolOutput,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> HookRun {
        let event = if response.is_error {
            HookEvent::PostToolUseFailure
        } else {
            HookEvent::PostToolUse
        };
        let payload = tool_payload(event, tool, input, Some(response), cwd);
        let mut run = self.collect(event, Some(tool), &payload, cwd, cancel).await;
        for text in std::mem::take(&mut run.blocks) {
            run.notes.push(Note::HookFeedback { event, text });
        }
        run
    }

    /// Runs the Stop hooks. The first time in a turn a hook blocks, the agent is told to
    /// continue; on the re-run hooks see `stop_hook_active: true`, and a second block is
    /// ignored with a warning. `continue: false` stops the agent whatever a block said.
    pub async fn run_stop(
        &self,
        guard: &mut StopGuard,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> StopDecision {
        let fields = json!({
            "tool_name": Value::Null,
            "tool_input": Value::Null,
            "tool_response": Value::Null,
        });
        self.run_stop_as(HookEvent::Stop, None, fields, guard, cwd, cancel)
            .await
    }

    /// [`Hooks::run_stop`] for `event` (`Stop`, or `SubagentStop` for a subagent, whose
    /// matcher sees `target`), `fields` (a JSON object) added to the payload.
    pub async fn run_stop_as(
        &self,
        event: HookEvent,
        target: Option<&str>,
        fields: Value,
        guard: &mut StopGuard,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> StopDecision {
        let mut payload = json!({
            "hook_event_name": event,
            "cwd": cwd,
            "stop_hook_active": guard.forced,
        });
        if let (Some(payload), Value::Object(fields)) = (payload.as_object_mut(), fields) {
            payload.extend(fields);
        }
        let HookRun {
            halt,
            blocks: reasons,
            mut notes,
        } = self.collect(event, target, &payload, cwd, cancel).await;
        if reasons.is_empty() || halt.is_some() {
            return StopDecision::Stop { notes, halt };
        }
        if guard.forced {
            tracing::warn!(
                ?event,
                "stop hook blocked again after a forced continuation; stopping anyway"
            );
            notes.push(Note::Warning {
                text: format!(
                    "a {event:?} hook blocked again ({}); ignored: at most one forced continuation per turn",
                    reasons.join("; ")
                ),
            });
            return StopDecision::Stop { notes, halt: None };
        }
        guard.forced = true;
        StopDecision::Continue {
            reason: reasons.join("\n"),
            notes,
        }
    }

    /// Runs the hooks of an event outside tool calls (UserPromptSubmit, SessionStart,
    /// PreCompact, Notification). `target` is what matchers see; `fields` (a JSON object) is
    /// added to the payload.
    pub async fn run_event(
        &self,
        event: HookEvent,
        target: Option<&str>,
        fields: Value,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> HookRun {
        let mut payload = json!({"hook_event_name": event, "cwd": cwd});
        if let (Some(payload), Value::Object(fields)) = (payload.as_object_mut(), fields) {
            payload.extend(fields);
        }
        self.collect(event, target, &payload, cwd, cancel).await
    }

    /// Every matching hook of `event`, in order, its answers gathered.
    async fn collect(
        &self,
        event: HookEvent,
        target: Option<&str>,
        payload: &Value,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> HookRun {
        let mut run = HookRun::default();
        for hook in self.matching(event, target) {
            match run_hook(hook, &self.confinement, payload, cwd, cancel).await {
                HookReply::Skipped => {}
                HookReply::Blocked(reason) => run.blocks.push(reason),
                HookReply::Output(output) => {
                    run.notes.extend(output.notes(event));
                    run.blocks.extend(output.blocks());
                    if let Some(halt) = output.halt() {
                        run.halt.get_or_insert(halt);
                    }
                }
            }
        }
        run
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_load_from_toml() {
        #[derive(Deserialize)]
        struct Config {
            hooks: Vec<HookSpec>,
        }
        let config: Config = toml::from_str(
            r#"
            [[hooks]]
            event = "PreToolUse"
            matcher = "bash|write"
            command = "./check.sh"

            [[hooks]]
            event = "Stop"
            command = "cargo test -q"
            timeout_secs = 300
            "#,
        )
        .unwrap();
        assert_eq!(config.hooks[0].event, HookEvent::PreToolUse);
        assert_eq!(config.hooks[0].timeout_secs, 60);
        assert_eq!(config.hooks[1].matcher, None);
        assert_eq!(config.hooks[1].timeout_secs, 300);
        assert!(toml::from_str::<Config>("[[hooks]]\nevent = \"Later\"\ncommand = \"x\"").is_err());
    }

    #[test]
    fn matchers_are_full_name_regexes() {
        let spec = |matcher: &str| HookSpec {
            event: HookEvent::PreToolUse,
            matcher: Some(matcher.to_string()),
            command: "true".to_string(),
            timeout_secs: 1,
        };
        let hooks = Hooks::new(vec![spec("bash|write"), spec("*")]).unwrap();
        let matching = |tool| hooks.matching(HookEvent::PreToolUse, Some(tool)).count();
        assert_eq!(matching("bash"), 2);
        assert_eq!(matching("bash2"), 1);
        assert_eq!(matching("read"), 1);
        let err = Hooks::new(vec![spec("bash(")]).unwrap_err();
        assert_eq!(err.matcher, "bash(");
    }
}
