//! Permission modes: what happens to a call that no rule and no hook decided (the decision
//! itself is crew-tools' `default_decision`).

use serde::{Deserialize, Serialize};

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
}
