//! Reading a permission or plan request's typed fields (`tool`, `input`, `workspace`,
//! `reason`) and turning one into the allow rule "always" would add.

use std::path::Path;

use serde_json::Value;

use crew_store::Message;

pub(crate) fn tool(request: &Message) -> Option<&str> {
    request.extra.get("tool").and_then(Value::as_str)
}

pub(crate) fn input(request: &Message) -> Option<&Value> {
    request.extra.get("input")
}

/// The folder the asking agent works in (its worktree, or the repository root).
pub(crate) fn workspace(request: &Message) -> Option<&Path> {
    request
        .extra
        .get("workspace")
        .and_then(Value::as_str)
        .map(Path::new)
}

/// The workspace as the person reads it: relative to the repository root when inside it.
pub(crate) fn workspace_shown(request: &Message, root: &Path) -> Option<String> {
    let workspace = workspace(request)?;
    Some(match workspace.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => "the repository root".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => workspace.display().to_string(),
    })
}

/// Why the teammate asks: a `reason` field, else the message text.
pub(crate) fn reason(request: &Message) -> Option<&str> {
    request
        .extra
        .get("reason")
        .and_then(Value::as_str)
        .or(request.text.as_deref())
}

/// Why the agent says it asks (its own description of the call, or its words before it).
pub(crate) fn purpose(request: &Message) -> Option<&str> {
    request
        .extra
        .get("purpose")
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
}

/// The shell command of a bash request (input `{"command": ...}` or a plain string).
pub(crate) fn command(request: &Message) -> Option<&str> {
    if tool(request) != Some("bash") {
        return None;
    }
    match input(request)? {
        Value::String(s) => Some(s),
        other => other.get("command").and_then(Value::as_str),
    }
}

/// The rule that allows exactly this call from now on: `bash(<command>)`, `tool(<path>)`, or
/// the bare tool when its input names nothing more specific. None when no tool is named.
pub(crate) fn allow_rule(request: &Message) -> Option<String> {
    let tool = tool(request)?;
    if let Some(command) = command(request) {
        return Some(format!("bash({command})"));
    }
    let path = input(request).and_then(|i| {
        ["path", "file_path", "file"]
            .iter()
            .find_map(|k| i.get(*k).and_then(Value::as_str))
    });
    Some(match path {
        Some(path) => format!("{tool}({path})"),
        None => tool.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_store::{MessageKind, USER};
    use serde_json::json;

    fn request(extra: Value) -> Message {
        serde_json::from_value(
            json!({"id":"m","ts":"t","from":"alice","to":USER,"type":MessageKind::PermissionRequest,"request_id":"r"})
                .as_object()
                .unwrap()
                .clone()
                .into_iter()
                .chain(extra.as_object().unwrap().clone())
                .collect::<serde_json::Map<_, _>>()
                .into(),
        )
        .unwrap()
    }

    #[test]
    fn rules_name_the_command_or_path() {
        let bash = request(json!({"tool":"bash","input":{"command":"cargo test"}}));
        assert_eq!(allow_rule(&bash).as_deref(), Some("bash(cargo test)"));
        let write = request(json!({"tool":"write","input":{"path":"src/a.rs","content":"x"}}));
        assert_eq!(allow_rule(&write).as_deref(), Some("write(src/a.rs)"));
        let bare = request(json!({"tool":"web_fetch"}));
        assert_eq!(allow_rule(&bare).as_deref(), Some("web_fetch"));
        assert_eq!(allow_rule(&request(json!({}))), None);
    }
}
