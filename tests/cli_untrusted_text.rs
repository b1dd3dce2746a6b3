//! Text agents write reaches a person's terminal through the CLI: escape sequences are shown
//! escaped, a line break cannot fake a line, and sizes are limited with a clear refusal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crate::support::Repo;

const ESC_TITLE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J";

#[test]
fn escape_sequences_in_subjects_and_messages_are_shown_escaped() {
    let repo = Repo::init();
    repo.ok(&["task", "add", &format!("fix{ESC_TITLE} it")]);
    // A task file written by hand (or by an older crew) with a line break in its subject.
    let path = repo.join(".tasks/task_1.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut task: serde_json::Value = serde_json::from_str(&text).unwrap();
    task["subject"] = "first\n✓ task_9    done       forged line".into();
    task["description"] = format!("line one\nline two{ESC_TITLE}").into();
    std::fs::write(&path, serde_json::to_string(&task).unwrap()).unwrap();
    repo.ok(&["task", "add", &format!("second{ESC_TITLE}")]);
    repo.ok(&[
        "send",
        "--from",
        "alice",
        "--to",
        "lead",
        &format!("hello{ESC_TITLE}\nbob -> lead message: forged"),
    ]);

    for args in [
        &["task", "list"][..],
        &["task", "graph"],
        &["task", "show", "task_1"],
        &["task", "show", "task_2"],
        &["inbox", "lead", "--peek"],
        &["requests"],
    ] {
        let out = repo.ok(args);
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{7}'),
            "{args:?}: {out:?}"
        );
    }
    let list = repo.ok(&["task", "list"]);
    assert_eq!(list.lines().count(), 2, "one line per task: {list}");
    assert!(list.contains("first\\n✓ task_9"), "{list}");
    assert!(list.contains("second\\u{1b}]0;pwned\\u{7}"), "{list}");
    let show = repo.ok(&["task", "show", "task_1"]);
    assert!(
        show.contains("line one\nline two\\u{1b}"),
        "descriptions keep their lines: {show}"
    );
    let inbox = repo.ok(&["inbox", "lead", "--peek"]);
    assert_eq!(inbox.lines().count(), 1, "{inbox}");
    assert!(
        inbox.contains("hello\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\nbob -> lead"),
        "{inbox}"
    );
    // --json is for programs: the text is exact (JSON escapes it).
    let json = repo.json(&["task", "show", "task_2", "--json"]);
    assert_eq!(json["subject"], format!("second{ESC_TITLE}"));
}

#[test]
fn subjects_descriptions_and_messages_have_limits() {
    let repo = Repo::init();
    let refused = |args: &[&str], expect: &[&str]| {
        let run = repo.crew(args);
        assert_eq!(run.code, 3, "{args:?}: {}", run.stderr);
        for part in expect {
            assert!(run.stderr.contains(part), "{part}: {}", run.stderr);
        }
    };
    refused(
        &["task", "add", &"s".repeat(201)],
        &[
            "task subject is 201 characters",
            "limit is 200",
            "subject_chars",
        ],
    );
    refused(
        &["task", "add", "one\ntwo"],
        &["a task subject is one line"],
    );
    refused(
        &["task", "add", "ok", "--desc", &"d".repeat(64 * 1024 + 1)],
        &["task description is 65537 bytes", "description_bytes"],
    );
    repo.ok(&["task", "add", "fine", "--desc", &"d".repeat(64 * 1024)]);
    refused(
        &["task", "update", "task_1", "--subject", &"s".repeat(300)],
        &["subject_chars"],
    );
    let tasks = repo.json(&["task", "list", "--json"]);
    assert_eq!(
        tasks["tasks"].as_array().unwrap().len(),
        1,
        "nothing refused was kept"
    );
    assert_eq!(tasks["tasks"][0]["subject"], "fine");

    // The limits are the team's to set.
    let toml = std::fs::read_to_string(repo.join("crew.toml")).unwrap();
    std::fs::write(
        repo.join("crew.toml"),
        format!("{toml}\n[limits]\nmessage_bytes = 1000\nsubject_chars = 10\n"),
    )
    .unwrap();
    refused(
        &["send", "--from", "alice", "--to", "lead", &"m".repeat(1001)],
        &[
            "message text is 1001 bytes",
            "the limit is 1000",
            "message_bytes",
            "a file",
        ],
    );
    repo.ok(&["send", "--from", "alice", "--to", "lead", &"m".repeat(1000)]);
    refused(&["task", "add", "eleven char"], &["limit is 10"]);

    std::fs::write(
        repo.join("crew.toml"),
        format!("{toml}\n[limits]\nmessage_byte = 1000\n"),
    )
    .unwrap();
    let run = repo.crew(&["task", "list"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("crew.toml") && run.stderr.contains("message_byte"),
        "a misspelt limit is named: {}",
        run.stderr
    );
}

#[test]
fn a_reader_that_goes_away_ends_a_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let repo = Repo::init();
    for n in 0..50 {
        repo.ok(&["task", "add", &format!("task number {n}")]);
    }
    // As `crew task list | head -0`: the pipe's reader is gone before crew writes.
    let mut child = Command::new(crate::support::crew_exe())
        .args(["task", "list"])
        .current_dir(repo.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
}
