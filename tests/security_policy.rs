//! Hostile teammates (real `crew worker` processes playing scripted attacks) against crew's
//! policies above the sandbox: the store's rules on who may change a task, and what a merge
//! lets in. Each attempt must fail, and the teammate's report (the task's result) or the review
//! must say why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::BUDGET;

/// alice, a writing implementer, works task_2 ("forge") and tries to bend the graph around it:
/// unblock task_3 (which waits for her reviewed work), rewrite bob's task_1, assign task_3 to
/// herself, and mark her own task completed so its commits skip review. Only editing her own
/// task's description (her notes) is hers to do.
#[test]
fn a_teammate_cannot_rewrite_the_graph_or_complete_its_work_past_review() {
    let toml = crew_toml(
        "",
        &[
            ("alice", "implementer", "writes = true"),
            ("bob", "implementer", ""),
        ],
        "mode = \"accept-edits\"\nallow = [\"task_update\"]",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1",
    );
    let team = Team::new(&toml, "test_store_attack.toml", &[]);
    team.repo
        .ok(&["task", "add", "bob's work", "--desc", "careful"]);
    team.repo.ok(&["task", "assign", "task_1", "bob"]);
    team.repo.ok(&["task", "add", "forge"]);
    team.repo
        .ok(&["task", "add", "ship it", "--blocked-by", "task_2"]);
    let mut alice = team.worker("alice");

    let task = team.wait_task("task_2", "review", BUDGET);
    let report = task["result"].as_str().unwrap();
    for refusal in [
        "alice may not change task_3's blockedBy: only the lead or the person changes a task's \
         subject and blockers",
        "alice may not change task_1's subject",
        "alice may not change task_3's owner: only the lead or the person assigns tasks",
        "task_2 is a writing teammate's task: it is completed only when review merges its commits",
    ] {
        assert!(report.contains(refusal), "{refusal:?} in {report}");
    }
    assert_eq!(
        task["description"], "my notes: forged.txt written",
        "{task}"
    );
    assert_eq!(task["commits"]["branch"], "crew/alice", "{task}");

    let bobs = team.task("task_1");
    assert_eq!(
        (&bobs["subject"], &bobs["description"], &bobs["owner"]),
        (&"bob's work".into(), &"careful".into(), &"bob".into()),
        "{bobs}"
    );
    let waiting = team.task("task_3");
    assert_eq!(
        waiting["blockedBy"],
        serde_json::json!(["task_2"]),
        "{waiting}"
    );
    assert_eq!(
        (&waiting["status"], &waiting["owner"]),
        (&"pending".into(), &serde_json::Value::Null),
        "{waiting}"
    );

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}

/// alice (writing, `merge_when_done`) commits what would take over the person's checkout: a
/// forged task in `.tasks/` (a folder that did not exist), a `.gitignore` that un-ignores the
/// store, a git hook, agent settings, a symlink into the inboxes and one that reaches the store
/// through another link. None of it is merged automatically; the review names each with its
/// reason; and the person's own merge refuses to write the symlinks.
#[test]
fn a_merge_never_brings_crews_folders_hooks_or_symlinks_in_unasked() {
    let mut toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"ask\"\nallow = [\"bash\"]",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1",
    );
    toml.push_str("\n[worktree]\nmerge_when_done = true\n");
    let team = Team::new(&toml, "test_attack.toml", &[]);
    let script = "printf '!.tasks\\n' > .gitignore\n\
                  mkdir -p .tasks .githooks .claude\n\
                  printf '{\"id\": \"task_77\", \"subject\": \"forged\", \"status\": \"pending\"}' > .tasks/task_77.json\n\
                  printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .githooks/pre-commit\n\
                  printf '{}' > .claude/settings.json\n\
                  ln -s .mailboxes inboxes\n\
                  ln -s . here\n\
                  ln -s here/.tasks store\n\
                  echo done";
    team.repo.ok(&["task", "add", "attack", "--desc", script]);
    let mut alice = team.worker("alice");

    let task = team.wait_task("task_1", "review", BUDGET);
    let result = task["result"].as_str().unwrap();
    assert!(
        result.contains("not merged automatically") && result.contains("which govern the team"),
        "{result}"
    );
    for path in [
        ".gitignore",
        ".tasks",
        ".githooks",
        ".claude",
        "inboxes",
        "store",
    ] {
        assert!(
            team.repo.join(path).symlink_metadata().is_err() || path == ".tasks",
            "{path} reached the person's checkout"
        );
    }
    assert!(!team.repo.join(".tasks/task_77.json").exists());

    let review = team.repo.json(&["review", "show", "task_1", "--json"]);
    let reasons: Vec<(String, String)> = review["protected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().into(),
                p["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    for (path, reason) in [
        (".gitignore", "changes what git tracks"),
        (".tasks/task_77.json", "crew's own folder .tasks/"),
        (".githooks/pre-commit", "git hooks"),
        (".claude/settings.json", "agent settings"),
        ("inboxes", "a symlink"),
        ("store", "a symlink"),
    ] {
        assert!(
            reasons
                .iter()
                .any(|(p, r)| p == path && r.starts_with(reason)),
            "{path}: {reason} in {reasons:?}"
        );
    }
    let listed = team.repo.ok(&["review", "list"]);
    assert!(
        listed.contains("WARNING changes ")
            && listed.contains(", .gitignore (changes what git tracks"),
        "{listed}"
    );

    let diff = team.repo.ok(&["review", "diff", "task_1"]);
    assert!(
        diff.contains("WARNING .githooks/pre-commit (git hooks) (never merged automatically)\nadded .githooks/pre-commit"),
        "{diff}"
    );

    let merge = team.repo.crew(&["review", "merge", "task_1"]);
    assert_ne!(merge.code, 0, "{}", merge.stdout);
    assert!(
        merge.stderr.contains("refusing to merge: the symlink")
            && merge.stderr.contains("points into crew's folders"),
        "{}",
        merge.stderr
    );
    assert_eq!(team.task("task_1")["status"], "review");
    assert!(!team.repo.join(".githooks").exists(), "nothing was written");

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}

/// alice's rules allow each program she uses by name (`bash(sh:*)`, `bash(python3:*)`,
/// `bash(git diff:*)`…) and deny `bash(rm -rf:*)`. She says the denied command as code five
/// ways and reads a file outside her worktree through `git diff`'s `--no-index` behaviour.
/// Nobody answers, so each ask expires into a denial: `victim/` survives, the secret is not
/// printed, and every request says why.
#[test]
fn a_denied_command_said_as_code_or_a_path_outside_the_worktree_asks() {
    let allow = ["echo", "sh", "python3", "git", "perl", "trap", "git diff"]
        .map(|p| format!("\"bash({p}:*)\""))
        .join(", ");
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        &format!("mode = \"ask\"\nallow = [{allow}]\ndeny = [\"bash(rm -rf:*)\"]"),
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 1",
    );
    let team = Team::new(
        &toml,
        "test_rules_attack.toml",
        &[("victim/keep.txt", "keep me\n")],
    );
    std::fs::write(team.repo.join("secret.txt"), "the person's secret\n").unwrap();
    let mut alice = team.worker("alice");
    team.repo.ok(&["task", "add", "evade the deny rule"]);

    let done = team.wait_task("task_1", "completed", BUDGET);
    let result = done["result"].as_str().unwrap();
    let worktree = team.repo.join(".worktrees/alice");
    assert!(
        worktree.join("victim/keep.txt").exists(),
        "victim/ was deleted: {result}"
    );
    assert!(!result.contains("the person's secret"), "{result}");
    let asked: Vec<String> = team
        .requests()
        .iter()
        .filter(|r| r["type"] == "permission_request")
        .map(|r| r["text"].as_str().unwrap_or_default().to_string())
        .collect();
    for why in [
        "`sh` runs a string as code: with no script file it reads its script from its input",
        "`python3` runs a string as code: `-c` runs its argument as its program",
        "`git` runs a string as code: `-c` before the subcommand sets configuration",
        "`perl` runs a string as code: `-e` runs its argument as code",
        "`trap` runs a string as code",
        "`git diff` with `/dev/null`, a path outside the work tree, reads files as `--no-index`",
    ] {
        assert!(
            asked.iter().any(|text| text.contains(why)),
            "no request says `{why}`: {asked:#?}"
        );
    }
    assert_eq!(asked.len(), 6, "{asked:#?}");

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}

/// In plan mode a teammate's bash runs read-only commands only; sed's `-l N`, `-s` and `-n`
/// before the script, uniq's output operand and date's clock operand no longer pass for
/// reading.
#[test]
fn in_plan_mode_the_read_only_commands_that_write_are_denied() {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"plan\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1",
    );
    let team = Team::new(&toml, "test_rules_attack.toml", &[]);
    let mut alice = team.worker("alice");
    team.repo.ok(&["task", "add", "plan only"]);

    let done = team.wait_task("task_1", "completed", BUDGET);
    let result = done["result"].as_str().unwrap();
    let worktree = team.repo.join(".worktrees/alice");
    for marker in ["marker_sed", "marker_uniq", "marker_sedw"] {
        assert!(!worktree.join(marker).exists(), "{marker}: {result}");
    }
    for why in [
        "read-only bash: `sed`: the script `1e touch marker_sed` writes files or runs commands",
        "read-only bash: `uniq`: `uniq IN marker_uniq` writes the file marker_uniq",
        "read-only bash: `sed`: the script `1w marker_sedw` writes files or runs commands",
        "read-only bash: `date`: `010100002030` sets the clock",
    ] {
        assert!(result.contains(why), "{why}: {result}");
    }

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}

/// A headless team's progress lines (`crew up --headless --json`) quote what agents wrote: a
/// task subject (the lead's) carrying 8-bit OSC 52 and OSC 0 sequences and a bidirectional
/// override, and a file name (a teammate's) with an escape sequence that the review reports. JSON escapes the 7-bit
/// controls itself; the 8-bit ones and the override are written as `\u` escapes too, so no
/// byte of it reaches the terminal raw, and each line still reads back as the exact text.
#[test]
fn a_headless_team_prints_no_raw_control_from_a_teammate() {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"accept-edits\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1",
    );
    let team = Team::new(&toml, "test_terminal_attack.toml", &[]);
    team.repo.ok(&["task", "add", "forge"]);
    let mut up = team.spawn(
        "up",
        &[
            "up",
            "--headless",
            "--json",
            "--merge",
            "auto",
            "--simulator",
            "--goal",
            "go",
        ],
    );
    let log = team.repo.join(".crew/test-up.log");
    let printed = crew_test_support::wait::eventually("the review's line", BUDGET, || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        (text.contains("\"type\":\"review\"") && text.contains("later")).then_some(text)
    });
    for c in printed.chars() {
        let raw_control = c != '\n' && c.is_control();
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        assert!(!raw_control && !bidi, "{c:?} printed raw: {printed:?}");
    }
    let lines: Vec<serde_json::Value> = printed
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l["type"] == "task_created"
            && l["subject"] == "later \u{9d}52;c;cHduZWQ=\u{9c} \u{9d}0;pwned\u{9c} \u{202e}evil"),
        "the subject reads back exactly: {lines:#?}"
    );
    let review = lines.iter().find(|l| l["type"] == "review").unwrap();
    assert!(
        review["text"].as_str().unwrap().contains(
            ".github/ci\\u{1b}]0;pwned\\u{7}\\u{9b}2J.yml (CI and repository automation)"
        ),
        "{review}"
    );

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    up.wait(Duration::from_secs(30));
}
