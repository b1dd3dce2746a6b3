//! The one approval view every provider's permission requests get, as the workers ask them
//! (crew's tool name, the input under crew's field names, crew's reason and the agent's own
//! purpose): a Claude Code Bash command with its working folder and description, a Write and an
//! Edit as the diffs they would make in the worktree, and a Codex file change as its own diff.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::fs;
use std::path::Path;

use crew_store::{Draft, MessageKind, Roster, Workspace};
use crew_tui_test_support::{Harness, screen_text, workspace};
use serde_json::{Value, json};

/// alice's request for `tool` with `input`, sent to the person as a CLI teammate's gate sends it.
fn ask(root: &Path, tool: &str, input: Value, reason: &str, purpose: Option<&str>) {
    let roster = Roster::new(["lead", "alice", "bob", "carol"].map(|n| n.parse().unwrap()));
    let mut extra = serde_json::Map::new();
    extra.insert("tool".into(), json!(tool));
    extra.insert("input".into(), input);
    extra.insert("reason".into(), json!(reason));
    extra.insert(
        "workspace".into(),
        json!(root.join(".worktrees/alice").display().to_string()),
    );
    if let Some(purpose) = purpose {
        extra.insert("purpose".into(), json!(purpose));
    }
    Workspace::new(root)
        .mailboxes()
        .send(
            &roster,
            Draft {
                from: "alice".parse().unwrap(),
                to: "lead".parse().unwrap(),
                kind: MessageKind::PermissionRequest,
                text: Some(format!("alice asks to use {tool}: {reason}")),
                request: true,
                extra,
            },
        )
        .unwrap();
}

/// The approvals pane alone, with the temporary folder's path made stable.
fn approvals(root: &Path) -> String {
    let mut h = Harness::new(root);
    h.press(&["esc", "5"]);
    let screen = screen_text(&mut h.state, 100, 26);
    stable_ids(&screen.replace(&root.display().to_string(), "/repo"))
}

/// `text` with each request id's random part as `…`.
fn stable_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("req_") {
        out.push_str(&rest[..at + 4]);
        rest = rest[at + 4..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        out.push('…');
    }
    out.push_str(rest);
    out
}

fn worktree(root: &Path) -> std::path::PathBuf {
    let wt = root.join(".worktrees/alice");
    fs::create_dir_all(&wt).unwrap();
    wt
}

#[test]
fn a_claude_code_bash_command_shows_its_folder_and_the_agents_description() {
    let dir = workspace();
    worktree(dir.path());
    ask(
        dir.path(),
        "bash",
        json!({"command": "echo done > done.txt", "description": "Mark the work as done"}),
        "the CLI runs this command itself, outside crew's sandbox",
        Some("Mark the work as done"),
    );
    insta::assert_snapshot!("approval_claude_code_bash", approvals(dir.path()));
}

#[test]
fn a_claude_code_write_shows_the_diff_and_the_words_before_the_call() {
    let dir = workspace();
    fs::write(worktree(dir.path()).join("greeting.txt"), "hello\nworld\n").unwrap();
    ask(
        dir.path(),
        "write",
        json!({"path": "greeting.txt", "content": "hello\ncrew\n"}),
        "ask mode asks before file changes",
        Some("I'll write the greeting file."),
    );
    let screen = approvals(dir.path());
    assert!(
        screen.contains("-world") && screen.contains("+crew"),
        "{screen}"
    );
    insta::assert_snapshot!("approval_claude_code_write", screen);
}

#[test]
fn a_claude_code_edit_shows_the_diff_it_would_make() {
    let dir = workspace();
    fs::write(
        worktree(dir.path()).join("hello.txt"),
        "hello\nworld\nbye\n",
    )
    .unwrap();
    ask(
        dir.path(),
        "edit",
        json!({"path": "hello.txt", "old_string": "world", "new_string": "crew", "replace_all": false}),
        "ask mode asks before file changes",
        Some("Now I change world to crew."),
    );
    insta::assert_snapshot!("approval_claude_code_edit", approvals(dir.path()));
}

#[test]
fn a_codex_file_change_shows_its_own_diff_and_reason() {
    let dir = workspace();
    fs::write(worktree(dir.path()).join("a.sh"), "one\ntwo\nthree\n").unwrap();
    let diff = "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n";
    ask(
        dir.path(),
        "edit",
        json!({"path": "a.sh", "diff": diff,
            "changes": [{"path": "a.sh", "kind": "update", "diff": diff}],
            "reason": "number the second line"}),
        "ask mode asks before file changes",
        Some("number the second line"),
    );
    insta::assert_snapshot!("approval_codex_file_change", approvals(dir.path()));
}
