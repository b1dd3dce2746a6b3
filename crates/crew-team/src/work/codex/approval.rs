//! Codex's approval requests as crew's policy and the person see them, and the decision Codex
//! expects back. A command is crew's `bash` with the command line; a file change is a `write`
//! (one new file, so the approvals pane shows its content as the diff) or an `edit` of each path
//! with Codex's diff, taken from the item's `item/started` (the request does not carry it).

use std::path::Path;

use serde_json::{Value, json};

use crate::work::claude_code::permission::CrewView;
use crew_tools::builtin::{BashTool, EditTool, WriteTool};
use crew_tools::{Decision, PermissionPolicy, SandboxMode, Subject, ToolKind, TypedTool};

/// What one approval request asks, for crew.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Approval {
    /// One view per thing the request would do (a command; each changed file).
    pub views: Vec<CrewView>,
    /// What the person is shown.
    pub input: Value,
}

impl Approval {
    /// The approval for server request `method`, or `None` for one crew does not answer.
    /// `changes` is the file change's list from its `item/started`.
    pub(crate) fn of(
        method: &str,
        params: &Value,
        changes: Option<&Value>,
        workdir: &Path,
    ) -> Option<Self> {
        match method {
            "item/commandExecution/requestApproval" => {
                let command = params["command"].as_str().unwrap_or_default().to_string();
                Some(Self {
                    views: vec![CrewView {
                        tool: BashTool::NAME.to_string(),
                        kind: ToolKind::Exec,
                        subject: Subject::Command(command.clone()),
                    }],
                    input: json!({
                        "command": command,
                        "cwd": params["cwd"],
                        "reason": params["reason"],
                    }),
                })
            }
            "item/fileChange/requestApproval" => {
                let changes: Vec<(String, String, String)> = changes
                    .and_then(Value::as_array)
                    .map(|all| {
                        all.iter()
                            .map(|c| {
                                let path = c["path"].as_str().unwrap_or_default();
                                let shown = Path::new(path)
                                    .strip_prefix(workdir)
                                    .map_or(path.to_string(), |rel| rel.display().to_string());
                                let kind = c["kind"]["type"]
                                    .as_str()
                                    .or(c["kind"].as_str())
                                    .unwrap_or("update")
                                    .to_string();
                                (
                                    shown,
                                    kind,
                                    c["diff"].as_str().unwrap_or_default().to_string(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let tool = match changes.as_slice() {
                    [(_, kind, _)] if kind == "add" => WriteTool::NAME,
                    _ => EditTool::NAME,
                };
                let views = changes
                    .iter()
                    .map(|(path, _, _)| CrewView {
                        tool: tool.to_string(),
                        kind: ToolKind::Write,
                        subject: Subject::Path(path.clone()),
                    })
                    .collect();
                let input = match changes.as_slice() {
                    // A new file: its content is the diff, which the pane shows as one.
                    [(path, _, content)] if tool == WriteTool::NAME => {
                        json!({"path": path, "content": content})
                    }
                    // The first file's diff is what the pane shows; every file is listed.
                    _ => json!({
                        "path": changes.first().map(|(p, _, _)| p.clone()),
                        "diff": changes.first().map(|(_, _, d)| d.clone()),
                        "changes": changes
                            .iter()
                            .map(|(path, kind, diff)| json!({"path": path, "kind": kind, "diff": diff}))
                            .collect::<Vec<_>>(),
                        "reason": params["reason"],
                    }),
                };
                Some(Self { views, input })
            }
            _ => None,
        }
    }

    /// crew's decision without the person: a deny (any part refused) or an allow (every part
    /// allowed) ends it; otherwise the view that asks, for the person.
    pub(crate) fn precheck(
        &self,
        policy: &PermissionPolicy,
        sandbox: SandboxMode,
        workdir: &Path,
    ) -> Result<Option<CrewView>, String> {
        if self.views.is_empty() {
            return Err("Codex asked to change files it did not name".to_string());
        }
        let mut asking = None;
        for view in &self.views {
            match view.decide(policy, sandbox, workdir).decision {
                Decision::Deny(reason) => return Err(reason),
                Decision::Ask(_) => {
                    asking.get_or_insert_with(|| view.clone());
                }
                Decision::Allow => {}
            }
        }
        Ok(asking)
    }
}

/// The answer Codex expects: `accept`, `decline` (the turn goes on without it) or `cancel`
/// (refused, and the turn is interrupted: the person interrupted while it was asked).
pub(crate) fn decision(allowed: bool, interrupted: bool) -> Value {
    let decision = match (allowed, interrupted) {
        (_, true) => "cancel",
        (true, false) => "accept",
        (false, false) => "decline",
    };
    json!({ "decision": decision })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_tools::PermissionMode;
    use crew_tools::permissions::{BypassSwitches, RuleSet};

    fn policy(mode: PermissionMode, deny: &[&str]) -> PermissionPolicy {
        let rules = RuleSet {
            allow: Vec::new(),
            ask: Vec::new(),
            deny: deny.iter().map(|r| r.to_string()).collect(),
        };
        PermissionPolicy::new(mode, &rules, BypassSwitches::default()).unwrap()
    }

    #[test]
    fn a_new_file_is_a_write_with_its_content_and_an_outside_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("hello.txt");
        let changes = json!([{"path": inside, "kind": {"type": "add"}, "diff": "hello world\n"}]);
        let approval = Approval::of(
            "item/fileChange/requestApproval",
            &json!({}),
            Some(&changes),
            dir.path(),
        )
        .unwrap();
        assert_eq!(
            approval.input,
            json!({"path": "hello.txt", "content": "hello world\n"})
        );
        let edits = policy(PermissionMode::AcceptEdits, &[]);
        assert_eq!(
            approval.precheck(&edits, SandboxMode::Auto, dir.path()),
            Ok(None)
        );
        let ask = policy(PermissionMode::Ask, &[]);
        let asking = approval
            .precheck(&ask, SandboxMode::Auto, dir.path())
            .unwrap();
        assert_eq!(asking.unwrap().tool, "write");

        let two = json!([
            {"path": inside, "kind": {"type": "update"}, "diff": "@@ -1 +1 @@\n-a\n+b\n"},
            {"path": "/etc/passwd", "kind": {"type": "update"}, "diff": "x"},
        ]);
        let approval = Approval::of(
            "item/fileChange/requestApproval",
            &json!({}),
            Some(&two),
            dir.path(),
        )
        .unwrap();
        assert_eq!(approval.input["changes"][1]["path"], "/etc/passwd");
        let refused = approval.precheck(&edits, SandboxMode::Auto, dir.path());
        assert!(refused.unwrap_err().contains("/etc/passwd"));
    }

    #[test]
    fn a_command_meets_crews_deny_rules_and_unknown_requests_are_not_answered() {
        let dir = tempfile::tempdir().unwrap();
        let params = json!({"command": "/bin/bash -lc 'rm -rf build'", "cwd": dir.path()});
        let approval = Approval::of(
            "item/commandExecution/requestApproval",
            &params,
            None,
            dir.path(),
        )
        .unwrap();
        let strict = policy(PermissionMode::WorkspaceWrite, &["bash(rm:*)"]);
        assert!(
            approval
                .precheck(&strict, SandboxMode::Auto, dir.path())
                .is_err()
        );
        assert!(Approval::of("item/tool/requestUserInput", &params, None, dir.path()).is_none());
        assert_eq!(decision(true, false), json!({"decision": "accept"}));
        assert_eq!(decision(false, false), json!({"decision": "decline"}));
        assert_eq!(decision(true, true), json!({"decision": "cancel"}));
    }
}
