//! A `can_use_tool` control request as crew's policy sees it, and the `control_response` the
//! CLI expects back (`updatedInput` is required on allow: without it the CLI fails the call).

use std::path::Path;

use serde_json::{Value, json};

use crew_tools::permissions::{DecidedBy, PermissionQuery};
use crew_tools::{Decision, PermissionOutcome, PermissionPolicy, SandboxMode, Subject, ToolKind};

/// How Claude Code names the tools of crew's MCP server (`crew mcp`, server `crew`).
const MCP_PREFIX: &str = "mcp__crew__";

/// A Claude Code tool under crew's name, kind and subject, so crew's rules
/// (`bash(cargo test:*)`, `write(src/**)`) apply to it as to crew's own tools.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CrewView {
    pub tool: String,
    pub kind: ToolKind,
    pub subject: Subject,
}

impl CrewView {
    pub(crate) fn of(tool_name: &str, input: &Value) -> Self {
        let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_string);
        let path_or_none = |key: &str| text(key).map_or(Subject::None, Subject::Path);
        let (tool, kind, subject) = match tool_name {
            "Bash" => (
                "bash",
                ToolKind::Exec,
                text("command").map_or(Subject::None, Subject::Command),
            ),
            "Write" => ("write", ToolKind::Write, path_or_none("file_path")),
            "Edit" | "MultiEdit" => ("edit", ToolKind::Write, path_or_none("file_path")),
            "NotebookEdit" => ("edit", ToolKind::Write, path_or_none("notebook_path")),
            "Read" => ("read", ToolKind::Read, path_or_none("file_path")),
            "Glob" => ("glob", ToolKind::Read, path_or_none("path")),
            "Grep" => ("grep", ToolKind::Read, path_or_none("path")),
            // crew's own team tools through `crew mcp`: under crew's names, so the team-tool
            // rules crew's own agents have apply (allowed, unless a deny rule names them).
            other if other.starts_with(MCP_PREFIX) => {
                let tool = &other[MCP_PREFIX.len()..];
                return Self {
                    tool: tool.to_string(),
                    kind: ToolKind::Other,
                    subject: Subject::None,
                };
            }
            // Anything else (web, MCP, agents, plan mode) is matched by its own name only.
            other => {
                return Self {
                    tool: other.to_string(),
                    kind: ToolKind::Other,
                    subject: Subject::None,
                };
            }
        };
        Self {
            tool: tool.to_string(),
            kind,
            subject,
        }
    }

    /// crew's decision before anyone is asked: deny rules, the workspace boundary, ask and allow
    /// rules, the mode. The CLI runs its commands itself, outside crew's sandbox, so a
    /// command that only the mode would allow (the mode counts on the sandbox) asks instead,
    /// unless the person turned the sandbox off; an explicit allow rule still allows it.
    pub(crate) fn decide(
        &self,
        policy: &PermissionPolicy,
        sandbox: SandboxMode,
        workdir: &Path,
    ) -> PermissionOutcome {
        let roots = [workdir];
        let query = PermissionQuery {
            tool: &self.tool,
            kind: self.kind,
            subject: &self.subject,
            roots: &roots,
        };
        let outcome = policy.decide(&query, None);
        if self.kind == ToolKind::Exec
            && outcome.decision == Decision::Allow
            && matches!(outcome.decided_by, DecidedBy::Mode(_))
            && sandbox != SandboxMode::Off
        {
            return PermissionOutcome::new(
                Decision::Ask(
                    "the CLI runs this command itself, outside crew's sandbox".to_string(),
                ),
                outcome.decided_by,
            );
        }
        outcome
    }
}

/// The input of a `can_use_tool` request as the person is shown it: a file change under the
/// field names of crew's own `write` and `edit` (`path` relative to the working folder), so the
/// approval shows it as the diff it would make (a `MultiEdit` keeps its list of `edits`);
/// anything else as the CLI sent it.
pub(crate) fn shown_input(tool_name: &str, input: &Value, workdir: &Path) -> Value {
    let path_key = match tool_name {
        "Write" | "Edit" | "MultiEdit" => "file_path",
        "NotebookEdit" => "notebook_path",
        _ => return input.clone(),
    };
    let Value::Object(fields) = input else {
        return input.clone();
    };
    let mut shown = serde_json::Map::new();
    for (key, value) in fields {
        if key == path_key {
            let path = value.as_str().unwrap_or_default();
            let relative = Path::new(path)
                .strip_prefix(workdir)
                .map_or(path.to_string(), |rel| rel.display().to_string());
            shown.insert("path".to_string(), Value::String(relative));
        } else {
            shown.insert(key.clone(), value.clone());
        }
    }
    Value::Object(shown)
}

/// Claude Code's Bash commands run under crew's sandbox helper: an allowed Bash call is answered
/// with its command rewritten (`updatedInput`) to run confined to the agent's working folder and
/// a private temporary folder, so what runs is bounded as crew's own agents' commands are.
pub(crate) struct BashConfinement {
    sandbox: crew_sandbox::Sandbox,
    temp: std::path::PathBuf,
    /// The temporary folder, when this confinement made it (removed with it).
    _made: Option<tempfile::TempDir>,
}

impl BashConfinement {
    /// With a temporary folder of its own; `None` where commands cannot be confined here
    /// (`sandbox = "off"`, the kernel lacks a piece, or no temporary folder can be made).
    pub(crate) fn new(sandbox: crew_sandbox::Sandbox) -> Option<Self> {
        if sandbox.plan() != crew_sandbox::SandboxPlan::Confined {
            return None;
        }
        let made = tempfile::Builder::new()
            .prefix("crew-tmp-")
            .tempdir()
            .ok()?;
        let temp = made.path().canonicalize().ok()?;
        Some(BashConfinement {
            sandbox,
            temp,
            _made: Some(made),
        })
    }

    /// With the temporary folder `temp`, kept by the caller.
    pub(crate) fn in_folder(sandbox: crew_sandbox::Sandbox, temp: &Path) -> Option<Self> {
        (sandbox.plan() == crew_sandbox::SandboxPlan::Confined && temp.is_dir()).then(|| {
            BashConfinement {
                sandbox,
                temp: temp.to_path_buf(),
                _made: None,
            }
        })
    }

    /// `input` of a `tool_name` call with its command run confined in `workdir`; `None` for a
    /// call that is not a Bash command.
    pub(crate) fn wrap(&self, tool_name: &str, input: &Value, workdir: &Path) -> Option<Value> {
        let command = input["command"].as_str().filter(|_| tool_name == "Bash")?;
        let args = self
            .sandbox
            .helper_args(
                workdir,
                &self.temp,
                "/bin/bash",
                vec!["-c".into(), command.into()],
            )
            .ok()?;
        // Only the allow-listed variables, as for crew's own commands: not the CLI's
        // credentials.
        let env = self
            .sandbox
            .environment(std::env::vars())
            .into_iter()
            .filter(|(name, _)| name != "TMPDIR")
            .map(|(name, value)| shell_word(&format!("{name}={value}")));
        let line = ["env".to_string(), "-i".to_string()]
            .into_iter()
            .chain(env)
            .chain([
                shell_word(&format!("TMPDIR={}", self.temp.display())),
                shell_word(&self.sandbox.helper.display().to_string()),
            ])
            .chain(args.iter().map(|arg| shell_word(arg)))
            .collect::<Vec<_>>()
            .join(" ");
        let mut input = input.clone();
        input["command"] = Value::String(line);
        Some(input)
    }
}

/// `text` as one word of a POSIX shell command line.
pub fn shell_word(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The answer to control request `request_id`: allow with the input unchanged, or deny with
/// the reason (which the CLI shows the model as the tool's error).
pub(crate) fn control_response(request_id: &str, input: &Value, allow: Result<(), &str>) -> Value {
    let response = match allow {
        Ok(()) => json!({"behavior": "allow", "updatedInput": input}),
        Err(message) => json!({"behavior": "deny", "message": message}),
    };
    json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    })
}

/// The answer to a control request crew does not handle (the CLI's own wording).
pub(crate) fn unsupported(request_id: &str, subtype: &str) -> Value {
    json!({
        "type": "control_response",
        "response": {
            "subtype": "error",
            "request_id": request_id,
            "error": format!("Unsupported control request subtype: {subtype}"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_tools::PermissionMode;
    use crew_tools::permissions::{BypassSwitches, RuleSet};

    fn policy(mode: PermissionMode, allow: &[&str], deny: &[&str]) -> PermissionPolicy {
        let rules = RuleSet {
            allow: allow.iter().map(|r| r.to_string()).collect(),
            ask: Vec::new(),
            deny: deny.iter().map(|r| r.to_string()).collect(),
        };
        PermissionPolicy::new(mode, &rules, BypassSwitches::default()).unwrap()
    }

    #[test]
    fn claude_tools_meet_crews_rules_under_crews_names() {
        let dir = tempfile::tempdir().unwrap();
        let bash = CrewView::of("Bash", &json!({"command": "rm -rf build"}));
        assert_eq!(bash.tool, "bash");
        let strict = policy(PermissionMode::WorkspaceWrite, &[], &["bash(rm:*)"]);
        let denied = bash.decide(&strict, SandboxMode::Auto, dir.path());
        assert!(matches!(denied.decision, Decision::Deny(_)), "{denied:?}");

        let write = CrewView::of("Write", &json!({"file_path": "/etc/passwd", "content": ""}));
        let edits = policy(PermissionMode::AcceptEdits, &[], &[]);
        let outside = write.decide(&edits, SandboxMode::Auto, dir.path());
        assert_eq!(outside.decided_by, DecidedBy::Workspace, "{outside:?}");

        let inside = CrewView::of("Edit", &json!({"file_path": "src/a.rs"}));
        assert_eq!(
            inside
                .decide(&edits, SandboxMode::Auto, dir.path())
                .decision,
            Decision::Allow
        );
    }

    #[test]
    fn crews_mcp_tools_meet_the_team_tool_rules_and_other_mcp_tools_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let create = CrewView::of("mcp__crew__task_create", &json!({"subject": "x"}));
        assert_eq!(create.tool, "task_create");
        let team = policy(PermissionMode::Ask, &["task_create"], &[]);
        let decide = |view: &CrewView, policy| view.decide(policy, SandboxMode::Auto, dir.path());
        assert_eq!(decide(&create, &team).decision, Decision::Allow);
        let denied = policy(PermissionMode::Ask, &["task_create"], &["task_create"]);
        assert!(matches!(
            decide(&create, &denied).decision,
            Decision::Deny(_)
        ));
        // Another server's tool of the same name is not crew's: matched by its full name.
        let other = CrewView::of("mcp__other__task_create", &json!({}));
        assert_eq!(other.tool, "mcp__other__task_create");
        assert!(matches!(decide(&other, &team).decision, Decision::Ask(_)));
    }

    #[test]
    fn a_command_only_the_mode_allows_asks_because_crews_sandbox_does_not_wrap_it() {
        let dir = tempfile::tempdir().unwrap();
        let bash = CrewView::of("Bash", &json!({"command": "make"}));
        let mode_only = policy(PermissionMode::WorkspaceWrite, &[], &[]);
        let asked = bash.decide(&mode_only, SandboxMode::Auto, dir.path());
        assert!(matches!(asked.decision, Decision::Ask(_)), "{asked:?}");
        assert_eq!(
            bash.decide(&mode_only, SandboxMode::Off, dir.path())
                .decision,
            Decision::Allow
        );
        let ruled = policy(PermissionMode::WorkspaceWrite, &["bash(make)"], &[]);
        assert_eq!(
            bash.decide(&ruled, SandboxMode::Auto, dir.path()).decision,
            Decision::Allow
        );
    }

    #[test]
    fn a_file_change_is_shown_under_crews_field_names_relative_to_the_worktree() {
        let workdir = Path::new("/repo/.worktrees/alice");
        let write = json!({"file_path": "/repo/.worktrees/alice/src/a.txt", "content": "x\n"});
        assert_eq!(
            shown_input("Write", &write, workdir),
            json!({"path": "src/a.txt", "content": "x\n"})
        );
        let edit = json!({"file_path": "/elsewhere/b.txt", "old_string": "a", "new_string": "b", "replace_all": false});
        assert_eq!(
            shown_input("Edit", &edit, workdir),
            json!({"path": "/elsewhere/b.txt", "old_string": "a", "new_string": "b", "replace_all": false})
        );
        let multi = json!({"file_path": "/repo/.worktrees/alice/c.txt", "edits": [{"old_string": "a", "new_string": "b"}]});
        assert_eq!(
            shown_input("MultiEdit", &multi, workdir)["path"],
            json!("c.txt")
        );
        let bash = json!({"command": "ls", "description": "List the files"});
        assert_eq!(shown_input("Bash", &bash, workdir), bash);
    }

    #[test]
    fn allow_carries_the_input_as_updated_input_and_deny_the_reason() {
        let input = json!({"command": "date"});
        let allow = control_response("r1", &input, Ok(()));
        assert_eq!(allow["response"]["request_id"], "r1");
        assert_eq!(allow["response"]["response"]["updatedInput"], input);
        let deny = control_response("r2", &input, Err("no"));
        assert_eq!(deny["response"]["response"]["behavior"], "deny");
        assert_eq!(deny["response"]["response"]["message"], "no");
    }
}
