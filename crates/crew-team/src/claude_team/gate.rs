//! A Claude Code teammate's tool calls through crew: `crew cc-teammate` gives the teammate's
//! `claude` a `PreToolUse` hook (`--settings`) that runs `crew cc-teammate-hook`, which answers
//! each call as crew answers its own CLI teammates' `can_use_tool` requests: crew's rules (the
//! repository's crew.toml `[permissions]`, else accept-edits), then the person through the
//! approvals pane of crew's workspace for the team (`crew attach claude`). A hook's `allow`
//! spares the call Claude Code's own prompt, its `deny` refuses the call with the reason; the
//! team protocol's own tools (messages, tasks, plans) are left to Claude Code. The teammate's
//! "completed" goes to crew's review first (`review_hold`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crew_agent::emitter::Emitter;
use crew_agent::transcript::TranscriptWriter;
use crew_agent::{AgentEvent, EventSink, MailboxPrompter};
use crew_config::TeamConfig;
use crew_sandbox::SandboxMode;
use crew_store::{AgentName, Workspace};

use super::review_hold::{self, HandIn, HeldTeammate};
pub use crate::work::claude_code::permission::shell_word;
use crate::work::claude_code::permission::{BashConfinement, CrewView, shown_input};
use crate::work::cli_agent::{PermissionGate, permissions};

/// Claude Code's own coordination tools: the team protocol, not the repository.
const TEAM_PROTOCOL_TOOLS: &[&str] = &[
    "SendMessage",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskUpdate",
    "TodoWrite",
    "ExitPlanMode",
];

/// Which of the two hooks crew gives the teammate a call comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before the tool runs: crew answers it.
    PreToolUse,
    /// After it ran: crew only records what it gave (the teammate's pane).
    PostToolUse,
}

/// One tool-use hook input, as Claude Code sends it on stdin.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    pub event: HookEvent,
    pub tool_name: String,
    pub tool_input: Value,
    pub tool_use_id: String,
    /// What the tool gave (`PostToolUse` only).
    pub tool_response: Option<Value>,
}

impl HookCall {
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("the hook input is not JSON: {e}"))?;
        let tool_name = value["tool_name"]
            .as_str()
            .ok_or("the hook input has no `tool_name`")?
            .to_string();
        // An input without the field is the one crew asked for first, before the tool runs.
        let event = match value["hook_event_name"].as_str() {
            None | Some("PreToolUse") => HookEvent::PreToolUse,
            Some("PostToolUse") => HookEvent::PostToolUse,
            Some(other) => {
                return Err(format!(
                    "the hook input's `hook_event_name` is {other:?}, not PreToolUse or PostToolUse"
                ));
            }
        };
        Ok(HookCall {
            event,
            tool_name,
            tool_input: value.get("tool_input").cloned().unwrap_or(json!({})),
            tool_use_id: value["tool_use_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            tool_response: value.get("tool_response").cloned(),
        })
    }

    /// The transcript's record of how this call ended.
    fn result(&self, content: String, is_error: bool) -> AgentEvent {
        AgentEvent::ToolResult {
            id: self.tool_use_id.clone(),
            name: self.tool_name.clone(),
            content,
            is_error,
            rewritten_input: None,
            spilled: None,
            decision: None,
            notes: Vec::new(),
        }
    }

    /// What the tool gave, as text for the pane: a command's output, else the response as JSON.
    fn response_text(&self) -> String {
        let text = match &self.tool_response {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(response @ Value::Object(fields))
                if fields.contains_key("stdout") || fields.contains_key("stderr") =>
            {
                [&response["stdout"], &response["stderr"]]
                    .iter()
                    .filter_map(|v| v.as_str())
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            Some(response) => response.to_string(),
        };
        cut(text, RESPONSE_SHOWN)
    }
}

/// How much of a tool's response the teammate's transcript keeps (the pane shows less).
const RESPONSE_SHOWN: usize = 4000;

/// `text` cut to at most `max` bytes at a character boundary, saying so.
fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let total = text.len();
    text.truncate(end);
    text.push_str(&format!("… ({total} bytes in all)"));
    text
}

/// crew's answer to one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAnswer {
    /// Runs, as the input says or as `updated_input` rewrote it (a Bash command wrapped in
    /// crew's sandbox).
    Allow {
        reason: String,
        updated_input: Option<Value>,
    },
    Deny(String),
    /// crew has no word on it: Claude Code's own permissions decide.
    Pass,
}

impl HookAnswer {
    /// What the hook prints on stdout (nothing for [`HookAnswer::Pass`]).
    pub fn to_json(&self) -> Option<Value> {
        let (decision, reason, updated_input) = match self {
            HookAnswer::Allow {
                reason,
                updated_input,
            } => ("allow", reason, updated_input.as_ref()),
            HookAnswer::Deny(reason) => ("deny", reason, None),
            HookAnswer::Pass => return None,
        };
        let mut output = json!({
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        });
        if let Some(input) = updated_input {
            output["updatedInput"] = input.clone();
        }
        Some(json!({ "hookSpecificOutput": output }))
    }

    /// The reason said with an allow or a deny.
    pub fn reason(&self) -> Option<&str> {
        match self {
            HookAnswer::Allow { reason, .. } | HookAnswer::Deny(reason) => Some(reason),
            HookAnswer::Pass => None,
        }
    }
}

/// Everything the hook needs to answer for teammate `teammate` of team `team`.
pub struct TeammateGate {
    pub home: PathBuf,
    pub team: String,
    pub teammate: String,
    /// crew's workspace for the team (linked to the repository).
    pub workspace: Workspace,
    pub worktree: PathBuf,
    /// The teammate's private temporary folder (kept by `crew cc-teammate` while its `claude`
    /// runs): with it, its Bash commands run in crew's sandbox; without, they ask.
    pub temp: Option<PathBuf>,
    /// A completed task is merged at once (`crew claude setup --merge auto`), unless it
    /// conflicts or changes what governs the team: then it waits for the person.
    pub merge_when_done: bool,
}

impl TeammateGate {
    /// The hook's answer to `call`. Each call and what it gave go into the teammate's
    /// transcript in crew's workspace, so its pane on crew's screen shows the teammate working.
    pub fn answer(&self, call: &HookCall) -> HookAnswer {
        let emitter = self.emitter();
        if call.event == HookEvent::PostToolUse {
            if let Some(emitter) = &emitter {
                emitter.emit(call.result(call.response_text(), false));
            }
            return HookAnswer::Pass;
        }
        if let Some(emitter) = &emitter {
            emitter.emit(AgentEvent::ToolUse {
                id: call.tool_use_id.clone(),
                name: call.tool_name.clone(),
                input: call.tool_input.clone(),
                early: false,
            });
        }
        let answer = self.judge(call, emitter.as_ref());
        // A refused call never runs, so no PostToolUse tells its end: the refusal does.
        if let (HookAnswer::Deny(reason), Some(emitter)) = (&answer, &emitter) {
            emitter.emit(call.result(reason.clone(), true));
        }
        answer
    }

    fn judge(&self, call: &HookCall, emitter: Option<&Arc<Emitter>>) -> HookAnswer {
        let tool = call.tool_name.as_str();
        if tool == "TaskUpdate" && call.tool_input["status"] == "completed" {
            return self.completed(call);
        }
        if TEAM_PROTOCOL_TOOLS.contains(&tool) {
            return HookAnswer::Pass;
        }
        let Some(emitter) = emitter else {
            return HookAnswer::Deny(format!(
                "crew cannot keep {}'s transcript in {}",
                self.teammate,
                self.workspace.root().display()
            ));
        };
        match self.decide(call, emitter) {
            Ok(updated_input) => HookAnswer::Allow {
                reason: if updated_input.is_some() {
                    "allowed by crew; runs in crew's sandbox".to_string()
                } else {
                    "allowed by crew".to_string()
                },
                updated_input,
            },
            Err(reason) => HookAnswer::Deny(format!("crew: {reason}")),
        }
    }

    /// What writes the teammate's transcript in crew's workspace (`None`: it cannot be opened).
    fn emitter(&self) -> Option<Arc<Emitter>> {
        let name = AgentName::from_lossy(&self.teammate);
        let transcript = crew_agent::transcript::transcript_path(
            self.workspace.root(),
            name.as_str(),
            "claude-code",
        );
        match TranscriptWriter::open(transcript.clone()) {
            Ok(writer) => Some(Arc::new(Emitter::new(EventSink::new(|_| {}), writer))),
            Err(e) => {
                tracing::warn!(path = %transcript.display(), %e, "cannot write the teammate's transcript");
                None
            }
        }
    }

    /// crew's rules, then the person, as for crew's own Claude Code teammates; a Bash command
    /// allowed comes back wrapped in crew's sandbox where it can be confined.
    fn decide(&self, call: &HookCall, emitter: &Arc<Emitter>) -> Result<Option<Value>, String> {
        let repository = self.workspace.repository_root();
        let config = policy_source(&repository, self.workspace.root())?;
        let name = AgentName::from_lossy(&self.teammate);
        let confined = self.confined_bash(&config, name.as_str(), call);
        let (_, policy, runtime) =
            permissions(&config, name.as_str(), false).map_err(|e| e.to_string())?;
        let team_config = TeamConfig::load(&self.workspace.root().join(crew_config::FILE_NAME))
            .map_err(|e| e.to_string())?;
        let prompter = MailboxPrompter::new(
            self.workspace.mailboxes(),
            team_config.roster(),
            name.clone(),
            team_config.lead_name().clone(),
            config.request_timeout(),
        );
        let gate = PermissionGate {
            writes: true,
            policy: &policy,
            // A command crew confines itself is no longer "outside crew's sandbox": what the
            // mode allows, runs (as for crew's own agents).
            sandbox: if confined.is_some() {
                SandboxMode::Off
            } else {
                config.permissions.sandbox
            },
            workdir: &self.worktree,
            prompter: &prompter,
            runtime: &runtime,
            emitter,
        };
        let view = CrewView::of(&call.tool_name, &call.tool_input);
        let purpose = call.tool_input["description"].as_str().map(str::to_string);
        gate.decide(
            view,
            &shown_input(&call.tool_name, &call.tool_input, &self.worktree),
            purpose,
        )?;
        Ok(confined)
    }

    /// A Bash call's input with its command run by crew's sandbox helper, confined to the
    /// worktree and the teammate's temporary folder; `None` when it cannot be confined here
    /// (no temporary folder, `sandbox = "off"`, or the kernel lacks a piece).
    fn confined_bash(&self, config: &TeamConfig, name: &str, call: &HookCall) -> Option<Value> {
        // It writes in its own worktree whatever crew.toml says of a member by its name; the
        // network only where its entry allows it.
        let network = config.agent(name).is_some_and(|entry| entry.network);
        BashConfinement::in_folder(config.sandbox(network, true), self.temp.as_deref()?)?.wrap(
            &call.tool_name,
            &call.tool_input,
            &self.worktree,
        )
    }

    /// The teammate marks a task completed: into crew's review when it is its own.
    fn completed(&self, call: &HookCall) -> HookAnswer {
        let id = match &call.tool_input["taskId"] {
            Value::String(id) => id.clone(),
            Value::Number(n) => n.to_string(),
            _ => return HookAnswer::Pass,
        };
        let repository = self.workspace.repository_root();
        let trees = match crew_git::Worktrees::open(&repository) {
            Ok(trees) => trees,
            Err(e) => {
                return HookAnswer::Deny(format!("crew cannot open {}: {e}", repository.display()));
            }
        };
        let base = crew_git::current_branch(&repository).unwrap_or_else(|| "main".to_string());
        let held = HeldTeammate {
            home: &self.home,
            team: &self.team,
            teammate: &self.teammate,
            workspace: &self.workspace,
            trees: &trees,
            base_branch: &base,
        };
        match held.hand_in(&id) {
            Ok(HandIn::InReview { task, text }) if self.merge_when_done => {
                self.merge_at_once(task, text)
            }
            Ok(HandIn::InReview { text, .. }) => HookAnswer::Deny(text),
            Ok(HandIn::NothingToReview | HandIn::NotHeld) => HookAnswer::Pass,
            Err(e) => HookAnswer::Deny(format!(
                "crew could not keep task #{id}'s work for review: {e}"
            )),
        }
    }
}

impl TeammateGate {
    /// `--merge auto`: held task `task` merged now; its "completed" then goes through to
    /// Claude Code. What cannot merge automatically stays in review, and the teammate is told
    /// why (`text`, crew's word that it is held, and the reason).
    fn merge_at_once(&self, task: crew_store::TaskId, text: String) -> HookAnswer {
        let merged = TeamConfig::load(&self.workspace.root().join(crew_config::FILE_NAME))
            .map_err(|e| e.to_string())
            .and_then(|config| {
                crate::review::merge_automatically(&self.workspace, &config, task)
                    .map_err(|e| e.to_string())
            });
        match merged {
            Ok(said) => match review_hold::mark_told_end(&self.workspace, task) {
                Ok(()) => {
                    tracing::info!(%said, "cc-teammate-hook merged at once");
                    HookAnswer::Pass
                }
                Err(e) => {
                    HookAnswer::Deny(format!("{text} ({said}; but crew could not note it: {e})"))
                }
            },
            Err(why) => HookAnswer::Deny(format!("{text} It was not merged automatically: {why}.")),
        }
    }
}

/// The crew.toml whose `[permissions]` rule the teammates: the repository's, else the one crew
/// keeps for the team (which says accept-edits).
fn policy_source(repository: &Path, workspace: &Path) -> Result<TeamConfig, String> {
    let own = repository.join(crew_config::FILE_NAME);
    let path = if own.is_file() {
        own
    } else {
        workspace.join(crew_config::FILE_NAME)
    };
    TeamConfig::load(&path).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_call_is_read_from_claude_codes_input_and_answered_in_its_shape() {
        let call = HookCall::parse(
            br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash",
                 "tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}"#,
        )
        .unwrap();
        assert_eq!(call.tool_name, "Bash");
        assert_eq!(call.tool_input, json!({"command": "ls"}));
        assert_eq!(call.event, HookEvent::PreToolUse);
        assert_eq!(call.tool_use_id, "toolu_1");
        let after = HookCall::parse(
            br#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},
                 "tool_response":{"stdout":"out","stderr":"err","interrupted":false}}"#,
        )
        .unwrap();
        assert_eq!(after.event, HookEvent::PostToolUse);
        assert_eq!(after.response_text(), "out\nerr");
        let read = HookCall {
            tool_response: Some(json!({"type": "text", "file": {"numLines": 1}})),
            ..after.clone()
        };
        assert_eq!(
            read.response_text(),
            r#"{"type":"text","file":{"numLines":1}}"#
        );
        let long = HookCall {
            tool_response: Some(json!("é".repeat(RESPONSE_SHOWN))),
            ..after
        };
        assert!(
            long.response_text()
                .ends_with(&format!("({} bytes in all)", 2 * RESPONSE_SHOWN))
        );
        let unknown = HookCall::parse(br#"{"hook_event_name":"Stop","tool_name":"Bash"}"#);
        assert!(unknown.unwrap_err().contains("\"Stop\""));
        assert!(
            HookCall::parse(b"not json")
                .unwrap_err()
                .contains("not JSON")
        );
        assert!(HookCall::parse(b"{}").unwrap_err().contains("tool_name"));

        let deny = HookAnswer::Deny("no".into()).to_json().unwrap();
        assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(deny["hookSpecificOutput"]["permissionDecisionReason"], "no");
        assert_eq!(deny["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(HookAnswer::Pass.to_json(), None);
        let rewritten = HookAnswer::Allow {
            reason: "ok".into(),
            updated_input: Some(json!({"command": "wrapped"})),
        };
        let allow = rewritten.to_json().unwrap();
        assert_eq!(allow["hookSpecificOutput"]["permissionDecision"], "allow");
        assert_eq!(
            allow["hookSpecificOutput"]["updatedInput"]["command"],
            "wrapped"
        );
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }
}
