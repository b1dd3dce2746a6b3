//! Permission modes: what happens to a call that no rule and no hook decided.

pub use crew_protocol::{PermissionMode, UnknownMode};

use crate::permissions::policy::Decision;
use crate::tool::ToolKind;

/// The decision for a call of `kind` that nothing else decided under `mode`.
pub fn default_decision(mode: PermissionMode, kind: ToolKind) -> Decision {
    use PermissionMode::*;
    use ToolKind::*;
    match (mode, kind) {
        (_, Read) | (Bypass, _) => Decision::Allow,
        (WorkspaceWrite, Write | Exec) | (AcceptEdits, Write) => Decision::Allow,
        (ReadOnly, _) => Decision::Deny(format!("{} mode allows reading only", mode.as_str())),
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
            mode.as_str(),
            kind_name(kind)
        )),
    }
}

/// An ask, turned into what `mode` does with it: `dont-ask` denies it, naming why it would
/// have asked; every other mode keeps it.
pub fn settle_ask(mode: PermissionMode, reason: String) -> Decision {
    match mode {
        PermissionMode::DontAsk => {
            Decision::Deny(format!("dont-ask mode denies what would ask: {reason}"))
        }
        _ => Decision::Ask(reason),
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

#[cfg(test)]
mod tests {
    use super::*;

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
            let got = match default_decision(mode, kind) {
                Allow => "allow",
                Deny(_) => "deny",
                Ask(_) => "ask",
            };
            assert_eq!(got, want, "{mode} {kind:?}");
        }
    }
}
