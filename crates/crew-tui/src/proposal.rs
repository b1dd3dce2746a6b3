//! What a write or edit permission request would do to its file, as a diff for the approvals
//! pane: the file as it is now in the asking agent's workspace against what the tool would
//! leave. Read on a background thread (it touches the disk), once per request.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::ask;
use crew_git::{FileDiff, patched_change, proposed_change};
use crew_store::Message;
use crew_tools::TypedTool;
use crew_tools::builtin::edit::EditInput;
use crew_tools::builtin::write::WriteInput;
use crew_tools::builtin::{EditTool, WriteTool};
use crew_tools::schema::parse_input;

/// Files larger than this are not previewed.
const MAX_PREVIEW: u64 = 1 << 20;

/// Whether `request` asks to write or edit a named file (so a diff can be shown for it).
pub(crate) fn applies(request: &Message) -> bool {
    matches!(ask::tool(request), Some(WriteTool::NAME | EditTool::NAME))
        && ask::input(request)
            .and_then(|i| i.get("path"))
            .is_some_and(Value::is_string)
}

/// A list of edits of one file, applied in order (Claude Code's `MultiEdit`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MultiEditInput {
    path: String,
    edits: Vec<OneEdit>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OneEdit {
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// The diff the request would make, or why there is none to show. The input is read as the
/// tool itself reads it.
pub fn prepare(root: &Path, request: &Message) -> Result<FileDiff, String> {
    let input = ask::input(request).ok_or("the request has no input")?;
    let tool = ask::tool(request).unwrap_or_default();
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    // A CLI that proposes its edit as a diff (Codex): shown as it is.
    if let (true, Some(path), Some(hunks)) = (tool == EditTool::NAME, text("path"), text("diff")) {
        return patched_change(path, hunks)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("the proposed diff of {path} changes nothing"));
    }
    let unfit = |problem: String| format!("the request's input does not fit {tool}: {problem}");
    if tool == WriteTool::NAME {
        let write: WriteInput = parse_input(input).map_err(unfit)?;
        let file = ask::workspace(request).unwrap_or(root).join(&write.path);
        let current = read(&file)?;
        return proposed_change(&write.path, current.as_deref(), &write.content)
            .map_err(|e| e.to_string());
    }
    let (path, edits) = if input.get("edits").is_some() {
        let multi: MultiEditInput =
            serde_json::from_value(input.clone()).map_err(|e| unfit(e.to_string()))?;
        (multi.path, multi.edits)
    } else {
        let edit: EditInput = parse_input(input).map_err(unfit)?;
        let one = OneEdit {
            old_string: edit.old_string,
            new_string: edit.new_string,
            replace_all: edit.replace_all,
        };
        (edit.path, vec![one])
    };
    let file = ask::workspace(request).unwrap_or(root).join(&path);
    let current = read(&file)?;
    let mut new = current
        .clone()
        .ok_or_else(|| format!("{path} does not exist"))?;
    for edit in &edits {
        new = apply(&new, edit, &path)?;
    }
    proposed_change(&path, current.as_deref(), &new).map_err(|e| e.to_string())
}

/// `now` with one edit made, as the edit tool makes it.
fn apply(now: &str, edit: &OneEdit, path: &str) -> Result<String, String> {
    if edit.old_string.is_empty() {
        return Err("the edit has an empty old_string".into());
    }
    if !now.contains(&edit.old_string) {
        return Err(format!(
            "old_string is not in {path} as it is now (the edit would fail)"
        ));
    }
    Ok(if edit.replace_all {
        now.replace(&edit.old_string, &edit.new_string)
    } else {
        now.replacen(&edit.old_string, &edit.new_string, 1)
    })
}

/// The file's text, None when it does not exist.
fn read(file: &Path) -> Result<Option<String>, String> {
    match fs::metadata(file) {
        Ok(meta) if meta.len() > MAX_PREVIEW => {
            return Err(format!(
                "{} is {} bytes; too large to preview",
                file.display(),
                meta.len()
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    }
    fs::read_to_string(file)
        .map(Some)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crew_git::{FileStatus, LineKind};
    use crew_store::{MessageKind, USER};

    fn request(dir: &Path, tool: &str, input: Value) -> Message {
        serde_json::from_value(json!({
            "id": "m1", "ts": "2026-01-01T00:00:00Z", "from": "alice", "to": USER,
            "type": MessageKind::PermissionRequest, "request_id": "req_1",
            "tool": tool, "input": input, "workspace": dir.join("wt").display().to_string(),
        }))
        .unwrap()
    }

    fn changed(file: &FileDiff) -> Vec<String> {
        file.hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind != LineKind::Context)
            .map(|l| {
                let sign = if l.kind == LineKind::Add { '+' } else { '-' };
                format!("{sign}{}", l.text)
            })
            .collect()
    }

    #[test]
    fn a_write_or_an_edit_becomes_the_diff_it_would_make_in_the_agents_workspace() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("wt/src")).unwrap();
        fs::write(dir.path().join("wt/src/a.sh"), "one\ntwo\nthree\n").unwrap();
        let root = dir.path();

        let new_file = request(
            root,
            "write",
            json!({"path": "src/b.sh", "content": "x\ny\n"}),
        );
        assert!(applies(&new_file));
        let diff = prepare(root, &new_file).unwrap();
        assert_eq!(
            (diff.status, diff.additions, diff.deletions),
            (FileStatus::Added, 2, 0)
        );

        let overwrite = request(
            root,
            "write",
            json!({"path": "src/a.sh", "content": "one\n2\nthree\n"}),
        );
        let diff = prepare(root, &overwrite).unwrap();
        assert_eq!(diff.status, FileStatus::Modified);
        assert_eq!(changed(&diff), ["-two", "+2"]);

        let edit = request(
            root,
            "edit",
            json!({"path": "src/a.sh", "old_string": "three", "new_string": "3"}),
        );
        assert_eq!(changed(&prepare(root, &edit).unwrap()), ["-three", "+3"]);

        let stale = request(
            root,
            "edit",
            json!({"path": "src/a.sh", "old_string": "four", "new_string": "4"}),
        );
        assert_eq!(
            prepare(root, &stale).unwrap_err(),
            "old_string is not in src/a.sh as it is now (the edit would fail)"
        );
        let bash = request(root, "bash", json!({"command": "ls"}));
        assert!(!applies(&bash));

        let confused = request(root, "edit", json!({"path": "src/a.sh", "old_string": 3}));
        assert!(applies(&confused));
        let why = prepare(root, &confused).unwrap_err();
        assert!(
            why.starts_with("the request's input does not fit edit: field `old_string`"),
            "{why}"
        );
    }

    #[test]
    fn a_list_of_edits_is_the_diff_of_them_all_in_order() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("wt")).unwrap();
        fs::write(dir.path().join("wt/hello.txt"), "hello\nworld\n").unwrap();
        let multi = request(
            dir.path(),
            "edit",
            json!({"path": "hello.txt", "edits": [
                {"old_string": "hello", "new_string": "hi"},
                {"old_string": "hi\nworld", "new_string": "hi\ncrew"},
            ]}),
        );
        assert!(applies(&multi));
        let diff = prepare(dir.path(), &multi).unwrap();
        assert_eq!(changed(&diff), ["-hello", "-world", "+hi", "+crew"]);
        let stale = request(
            dir.path(),
            "edit",
            json!({"path": "hello.txt", "edits": [{"old_string": "gone", "new_string": "x"}]}),
        );
        assert!(
            prepare(dir.path(), &stale)
                .unwrap_err()
                .contains("old_string is not in")
        );
    }

    #[test]
    fn an_edit_proposed_as_a_diff_is_shown_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let hunks = "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n";
        let codex = request(
            dir.path(),
            "edit",
            json!({"path": "src/a.sh", "diff": hunks}),
        );
        assert!(applies(&codex));
        let diff = prepare(dir.path(), &codex).unwrap();
        assert_eq!(diff.path, "src/a.sh");
        assert_eq!(changed(&diff), ["-two", "+2"]);
        let garbage = request(
            dir.path(),
            "edit",
            json!({"path": "src/a.sh", "diff": "not a diff"}),
        );
        assert!(prepare(dir.path(), &garbage).is_err());
    }
}
