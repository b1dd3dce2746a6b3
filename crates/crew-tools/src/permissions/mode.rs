//! Permission modes: what happens to a call that no rule and no hook decided.

use serde::{Deserialize, Serialize};

use crate::permissions::policy::Decision;
use crate::tool::ToolKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Reading only; everything else is denied unless an allow rule opens it.
    ReadOnly,
    /// Reading, writing inside the workspace and running commands (in the workspace) are allowed.
    WorkspaceWrite,
    /// Reading is allowed; everything else asks.
    #[default]
    Ask,
    /// Reading and file edits are allowed; commands and other tools ask.
    AcceptEdits,
    /// Everything is allowed, except what deny rules and the workspace boundary refuse.
    Bypass,
    /// Reading only until a plan is approved (`request_plan_approval`); teams then switch the
    /// agent to `accept-edits` (see `PermissionMode::after_plan_approval`).
    Plan,
    /// For unattended runs: what `ask` would ask about is denied instead, and no request is
    /// ever made; allow rules and hooks still open what they name.
    DontAsk,
}

impl PermissionMode {
    pub const ALL: [PermissionMode; 7] = [
        PermissionMode::ReadOnly,
        PermissionMode::WorkspaceWrite,
        PermissionMode::Ask,
        PermissionMode::AcceptEdits,
        PermissionMode::Bypass,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
    ];

    /// The decision for a call of `kind` that nothing else decided.
    pub fn default_decision(self, kind: ToolKind) -> Decision {
        use PermissionMode::*;
        use ToolKind::*;
        match (self, kind) {
            (_, Read) | (Bypass, _) => Decision::Allow,
            (WorkspaceWrite, Write | Exec) | (AcceptEdits, Write) => Decision::Allow,
            (ReadOnly, _) => Decision::Deny(format!("{} mode allows reading only", self.as_str())),
            (Plan, _) => Decision::Deny(
                "plan mode allows reading only until your plan is approved; send it with \
                 request_plan_approval"
                    .to_string(),
            ),
            (DontAsk, _) => Decision::Deny(format!(
                "dont-ask mode denies {} tools that no allow rule grants (unattended run)",
                kind_name(kind)
            )),
            (WorkspaceWrite | Ask | AcceptEdits, _) => Decision::Ask(format!(
                "{} mode asks before {} tools run",
                self.as_str(),
                kind_name(kind)
            )),
        }
    }

    /// An ask, turned into what this mode does with it: `dont-ask` denies it, naming why it
    /// would have asked; every other mode keeps it.
    pub fn settle_ask(self, reason: String) -> Decision {
        match self {
            PermissionMode::DontAsk => {
                Decision::Deny(format!("dont-ask mode denies what would ask: {reason}"))
            }
            _ => Decision::Ask(reason),
        }
    }

    /// The mode an agent works under once its plan is approved: `plan` becomes `accept-edits`
    /// (the plan said which files change; commands still ask), any other mode stays.
    pub fn after_plan_approval(self) -> Self {
        match self {
            PermissionMode::Plan => PermissionMode::AcceptEdits,
            other => other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "read-only",
            PermissionMode::WorkspaceWrite => "workspace-write",
            PermissionMode::Ask => "ask",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Bypass => "bypass",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dont-ask",
        }
    }
}

fn kind_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Write => "write",
        ToolKind::Exec => "exec",
        ToolKind::Other => "other",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{0}`; expected read-only, workspace-write, ask, accept-edits, bypass, plan or dont-ask"
)]
pub struct UnknownMode(pub String);

impl std::str::FromStr for PermissionMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PermissionMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == s)
            .ok_or_else(|| UnknownMode(s.to_string()))
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_is_kebab_case() {
        let mode: PermissionMode = serde_json::from_str("\"workspace-write\"").unwrap();
        assert_eq!(mode, PermissionMode::WorkspaceWrite);
        assert_eq!(
            serde_json::to_string(&PermissionMode::AcceptEdits).unwrap(),
            "\"accept-edits\""
        );
        assert_eq!(PermissionMode::default(), PermissionMode::Ask);
        assert_eq!("accept-edits".parse(), Ok(PermissionMode::AcceptEdits));
        let err = "yolo".parse::<PermissionMode>().unwrap_err();
        assert!(err.to_string().contains("`yolo`"));
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str().parse(), Ok(mode));
        }
        assert_eq!("dont-ask".parse(), Ok(PermissionMode::DontAsk));
    }

    #[test]
    fn defaults_per_mode_and_kind() {
        use Decision::*;
        let table = [
            (PermissionMode::ReadOnly, ToolKind::Read, "allow"),
            (PermissionMode::ReadOnly, ToolKind::Write, "deny"),
            (PermissionMode::ReadOnly, ToolKind::Exec, "deny"),
            (PermissionMode::WorkspaceWrite, ToolKind::Write, "allow"),
            (PermissionMode::WorkspaceWrite, ToolKind::Exec, "allow"),
            (PermissionMode::WorkspaceWrite, ToolKind::Other, "ask"),
            (PermissionMode::Ask, ToolKind::Read, "allow"),
            (PermissionMode::Ask, ToolKind::Write, "ask"),
            (PermissionMode::AcceptEdits, ToolKind::Write, "allow"),
            (PermissionMode::AcceptEdits, ToolKind::Exec, "ask"),
            (PermissionMode::Bypass, ToolKind::Exec, "allow"),
            (PermissionMode::Plan, ToolKind::Read, "allow"),
            (PermissionMode::Plan, ToolKind::Write, "deny"),
            (PermissionMode::Plan, ToolKind::Exec, "deny"),
            (PermissionMode::Plan, ToolKind::Other, "deny"),
            (PermissionMode::DontAsk, ToolKind::Read, "allow"),
            (PermissionMode::DontAsk, ToolKind::Write, "deny"),
            (PermissionMode::DontAsk, ToolKind::Exec, "deny"),
            (PermissionMode::DontAsk, ToolKind::Other, "deny"),
        ];
        for (mode, kind, want) in table {
            let got = match mode.default_decision(kind) {
                Allow => "allow",
                Deny(_) => "deny",
                Ask(_) => "ask",
            };
            assert_eq!(got, want, "{mode} {kind:?}");
        }
    }
}
