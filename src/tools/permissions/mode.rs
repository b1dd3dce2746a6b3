//! Permission modes: what happens to a call that no rule and no hook decided.

use serde::{Deserialize, Serialize};

use crate::tools::permissions::policy::Decision;
use crate::tools::tool::ToolKind;

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
}

impl PermissionMode {
    /// The decision for a call of `kind` that nothing else decided.
    pub fn default_decision(self, kind: ToolKind) -> Decision {
        use PermissionMode::*;
        use ToolKind::*;
        match (self, kind) {
            (_, Read) | (Bypass, _) => Decision::Allow,
            (WorkspaceWrite, Write | Exec) | (AcceptEdits, Write) => Decision::Allow,
            (ReadOnly, _) => Decision::Deny(format!("{} mode allows reading only", self.as_str())),
            (WorkspaceWrite | Ask | AcceptEdits, _) => Decision::Ask(format!(
                "{} mode asks before {} tools run",
                self.as_str(),
                kind_name(kind)
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "read-only",
            PermissionMode::WorkspaceWrite => "workspace-write",
            PermissionMode::Ask => "ask",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Bypass => "bypass",
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
