//! The review queue in the screen: reached with one key from anywhere (the lead's text box
//! included), a task's own diff, and merge / send back / discard from the keys, on a real
//! repository with a task in review.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::{Path, PathBuf};

use crew_config::init_template;
use crew_git::{Author, Worktrees, exclude_from_git, init_with_files};
use crew_store::workspace::RUNTIME_FOLDERS;
use crew_store::{Claimant, NewTask, Status, TaskId, USER, Workspace};
use crew_tui::Pane;
use crew_tui::event::Effect;
use crew_tui_test_support::{Harness, draw};

/// A repository whose alice has task_1 ("Add a parser") in review: one commit adding parser.rs.
fn repo_with_review() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    init_with_files(
        root,
        "main",
        &[
            (
                "crew.toml",
                &init_template("web", "main", &Default::default()),
            ),
            ("README.md", "# web\n"),
        ],
        &Author::new("person", "person@crew.invalid"),
        "start",
    )
    .unwrap();
    exclude_from_git(root, RUNTIME_FOLDERS).unwrap();
    submit(root, "Add a parser", "parser.rs", "fn parse() {}\n");
    dir
}

/// alice claims a new task, writes `file`, commits it as the task and submits it for review.
fn submit(root: &Path, subject: &str, file: &str, text: &str) -> TaskId {
    let ws = Workspace::new(root);
    let trees = Worktrees::open(root).unwrap();
    let wt = trees.ensure("alice", "main", &[], &[]).unwrap();
    trees
        .bring_up_to_date("alice", "main", &Author::new("alice", "alice@crew.invalid"))
        .unwrap();
    let task = ws
        .tasks()
        .create(NewTask {
            subject: subject.into(),
            ..NewTask::default()
        })
        .unwrap();
    let id = task.id;
    let alice = Claimant {
        name: &"alice".parse().unwrap(),
        role: Some("implementer"),
    };
    ws.tasks().claim(id, alice).unwrap();
    let start = trees.head_of("alice").unwrap();
    ws.tasks().record_start(id, "crew/alice", &start).unwrap();
    std::fs::write(wt.path.join(file), text).unwrap();
    let message = format!("{}: {subject}\n\nwrote {file}\n", task.id);
    let head = trees
        .commit_work(
            "alice",
            &message,
            &Author::new("alice", "alice@crew.invalid"),
        )
        .unwrap();
    let mut commits = ws.tasks().read(id).unwrap().commits.unwrap();
    commits.head = head;
    ws.tasks()
        .submit_for_review(
            id,
            &"alice".parse().unwrap(),
            format!("wrote {file}"),
            *commits,
        )
        .unwrap();
    id
}

fn status_of(root: &Path, id: u64) -> (Status, Option<String>) {
    let task = Workspace::new(root).tasks().read(TaskId(id)).unwrap();
    (task.status, task.owner.map(String::from))
}

/// The screen with the temporary folder's path replaced, so snapshots are stable.
fn stable_screen(h: &mut Harness) -> String {
    stable_screen_of_height(h, 32)
}

fn stable_screen_of_height(h: &mut Harness, rows: u16) -> String {
    let real = std::mem::replace(&mut h.state.root, PathBuf::from("/repo/web"));
    for r in &mut h.state.reviews {
        r.age_secs = 120;
    }
    let text = crew_tui_test_support::screen_text(&mut h.state, 120, rows);
    h.state.root = real;
    text
}

#[test]
fn the_review_queue_is_one_key_away_from_the_text_box_and_shows_the_task() {
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    assert_eq!(h.state.focus, Pane::Lead);
    assert_eq!(h.state.reviews.len(), 1, "{}", h.status());
    h.press(&["ctrl-r"]);
    assert_eq!(h.state.focus, Pane::Approvals);
    assert!(
        h.state.input.lines().join("").is_empty(),
        "nothing was typed"
    );
    let screen = stable_screen(&mut h);
    assert!(
        screen.contains("reviews 1"),
        "the header counts it:\n{screen}"
    );
    insta::assert_snapshot!("review_queue", screen);

    h.press(&["enter"]);
    let view = h.state.diff.as_ref().expect("the task's diff is open");
    assert_eq!(view.task, Some(TaskId(1)));
    let files: Vec<&str> = view.files().iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, ["parser.rs"]);
    insta::assert_snapshot!("review_diff", stable_screen(&mut h));
}

#[test]
fn merge_from_the_queue_completes_the_task_and_updates_the_base() {
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    h.press(&["ctrl-r", "M"]);
    assert!(
        h.status().contains("task_1 merged into main"),
        "{}",
        h.status()
    );
    assert_eq!(status_of(dir.path(), 1).0, Status::Completed);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("parser.rs")).unwrap(),
        "fn parse() {}\n"
    );
    h.changed(&[".tasks/task_1.json"]);
    assert!(h.state.reviews.is_empty());
}

#[test]
fn send_back_from_the_diff_returns_the_task_to_its_teammate_with_the_note() {
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    h.press(&["ctrl-r", "enter", "b"]);
    h.type_text("add tests");
    h.press(&["enter"]);
    assert_eq!(
        status_of(dir.path(), 1),
        (Status::Pending, Some("alice".into()))
    );
    let task = Workspace::new(dir.path()).tasks().read(TaskId(1)).unwrap();
    assert!(
        task.notes
            .last()
            .unwrap()
            .ends_with("sent back by user: add tests")
    );
    assert!(!dir.path().join("parser.rs").exists(), "nothing was merged");
}

#[test]
fn discard_takes_the_changes_out_and_fails_the_task_with_the_reason() {
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    h.press(&["ctrl-r", "X"]);
    h.type_text("wrong approach");
    h.press(&["enter"]);
    let task = Workspace::new(dir.path()).tasks().read(TaskId(1)).unwrap();
    assert_eq!(task.status, Status::Failed);
    assert!(task.result.unwrap().contains("wrong approach"));
    assert!(!dir.path().join(".worktrees/alice/parser.rs").exists());
}

#[test]
fn a_conflicting_merge_is_shown_with_its_files_and_changes_nothing() {
    let dir = repo_with_review();
    // The person writes the same file on the base meanwhile.
    let root = dir.path();
    std::fs::write(root.join("parser.rs"), "// the person's parser\n").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=p", "-c", "user.email=p@crew.invalid"])
            .args(args)
            .current_dir(root)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["add", "parser.rs"]);
    git(&["commit", "-q", "-m", "person's parser"]);
    let mut h = Harness::new(root);
    assert_eq!(h.state.reviews[0].conflicts, ["parser.rs"]);
    let screen = stable_screen(&mut h);
    assert!(
        screen.contains("conflicts with the base in parser.rs"),
        "{screen}"
    );
    h.press(&["ctrl-r", "M"]);
    assert!(
        h.status().contains("conflicts in parser.rs"),
        "{}",
        h.status()
    );
    assert_eq!(status_of(root, 1).0, Status::Review);
    assert_eq!(
        std::fs::read_to_string(root.join("parser.rs")).unwrap(),
        "// the person's parser\n"
    );
    draw(&mut h.state, 80, 24);
}

#[test]
fn a_task_entering_review_rings_the_bell_and_sends_a_desktop_notification() {
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    submit(dir.path(), "Add a lexer", "lexer.rs", "fn lex() {}\n");
    h.changed(&[".tasks/task_2.json"]);
    assert!(h.effects.iter().any(|e| matches!(e, Effect::Bell)));
    assert!(
        h.effects.iter().any(
            |e| matches!(e, Effect::DesktopNotify { text } if text == "task_2 waits for your review")
        ),
        "{:?}",
        h.effects
    );
    assert_eq!(h.state.reviews.len(), 2);
    // Both can be turned off in crew.toml.
    let toml = dir.path().join("crew.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str("\n[ui]\nbell = false\ndesktop_notifications = false\n");
    std::fs::write(&toml, text).unwrap();
    let mut quiet = Harness::new(dir.path());
    submit(dir.path(), "Add a printer", "printer.rs", "fn print() {}\n");
    quiet.changed(&[".tasks/task_3.json"]);
    assert!(
        !quiet
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Bell | Effect::DesktopNotify { .. })),
        "{:?}",
        quiet.effects
    );
}

#[test]
fn a_desktop_notification_carries_no_escape_sequence_from_agent_text() {
    let osc = crew_tui::terminal::desktop_notification("task_1 \x1b]0;pwned\x07; done\n");
    assert_eq!(
        osc,
        "\x1b]9;task_1  ]0 pwned   done \x07\x1b]777;notify;crew;task_1  ]0 pwned   done \x07"
    );
}

#[test]
fn discard_reverts_in_the_worktree_of_the_commits_branch_after_the_task_changed_hands() {
    let dir = repo_with_review();
    let root = dir.path();
    let ws = Workspace::new(root);
    assert!(root.join(".worktrees/alice/parser.rs").exists());
    // Reassigned by hand after review began: the commits stay on crew/alice.
    let path = ws.tasks().path(TaskId(1));
    let mut task: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    task["owner"] = "bob".into();
    std::fs::write(&path, task.to_string()).unwrap();
    let config = crew_config::TeamConfig::parse(
        Path::new("crew.toml"),
        &init_template("web", "main", &Default::default()),
    )
    .unwrap();
    crew_team::review::discard(&ws, &config, TaskId(1), &USER, "not needed").unwrap();
    assert_eq!(status_of(root, 1).0, Status::Failed);
    assert!(!root.join(".worktrees/alice/parser.rs").exists());
}

#[test]
fn a_review_warns_about_a_renamed_crew_toml() {
    let dir = repo_with_review();
    let root = dir.path();
    let ws = Workspace::new(root);
    let trees = Worktrees::open(root).unwrap();
    let wt = root.join(".worktrees/alice");
    std::fs::rename(wt.join("crew.toml"), wt.join("team.toml")).unwrap();
    let head = trees
        .commit_work("alice", "task_1: rename", &Author::crew("alice"))
        .unwrap();
    let mut commits = ws.tasks().read(TaskId(1)).unwrap().commits.unwrap();
    commits.head = head;
    // Resubmitted with the rename as one of its commits.
    ws.tasks().send_back(TaskId(1), &USER, "again").unwrap();
    ws.tasks()
        .claim(
            TaskId(1),
            Claimant {
                name: &"alice".parse().unwrap(),
                role: Some("implementer"),
            },
        )
        .unwrap();
    ws.tasks()
        .submit_for_review(
            TaskId(1),
            &"alice".parse().unwrap(),
            "renamed".into(),
            *commits,
        )
        .unwrap();
    let config = crew_config::TeamConfig::parse(
        Path::new("crew.toml"),
        &init_template("web", "main", &Default::default()),
    )
    .unwrap();
    let review = crew_team::review::show(&ws, &config, TaskId(1)).unwrap();
    let protected: Vec<String> = review.protected.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        protected,
        ["team.toml (moved from crew.toml: the team's configuration)"],
        "{review:?}"
    );
}

#[test]
fn merge_from_the_diff_shows_the_result_there_and_a_narrow_diff_keeps_its_way_out() {
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    h.press(&["ctrl-r", "enter"]);
    let narrow = crew_tui_test_support::screen_text(&mut h.state, 80, 24);
    let hints = narrow
        .lines()
        .find(|l| l.contains(" merge "))
        .unwrap_or_default();
    for shown in ["merge", "send_back", "discard", "esc", "back"] {
        assert!(hints.contains(shown), "{shown}: {hints}");
    }
    h.press(&["M"]);
    let view = h.state.diff.as_ref().expect("the diff stays open");
    let outcome = view.outcome.clone().unwrap_or_default();
    assert!(outcome.contains("task_1 merged into main"), "{outcome}");
    let screen = stable_screen(&mut h);
    assert!(!screen.contains("merging task_1"), "{screen}");
    assert!(screen.contains("task_1 merged into main"), "{screen}");
    assert_eq!(status_of(dir.path(), 1).0, Status::Completed);
}

#[test]
fn a_approves_a_review_into_the_merge_queue_and_ctrl_r_again_shows_the_queue() {
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    h.press(&["ctrl-r", "A"]);
    assert!(
        h.status().contains("task_1 approved into the merge queue"),
        "{}",
        h.status()
    );
    let queue = Workspace::new(dir.path()).merge_queue();
    let entry = queue.load().unwrap().entries[0].clone();
    assert_eq!(
        (entry.id, entry.state),
        (TaskId(1), crew_store::EntryState::Waiting)
    );
    assert_eq!(
        status_of(dir.path(), 1).0,
        Status::Review,
        "approving merges nothing by itself"
    );

    h.press(&["ctrl-r"]);
    let view = h.state.queue.as_ref().expect("the queue's view is open");
    assert_eq!(view.selected_id(), Some(TaskId(1)));
    h.press(&["p"]);
    assert!(queue.load().unwrap().paused, "{}", h.status());
    h.press(&["p"]);
    assert!(!queue.load().unwrap().paused, "{}", h.status());
    h.press(&["x"]);
    assert!(
        h.status().contains("taken out of the merge queue"),
        "{}",
        h.status()
    );
    assert!(queue.load().unwrap().active().next().is_none());
    h.press(&["esc"]);
    assert!(h.state.queue.is_none());
    assert_eq!(h.state.focus, Pane::Approvals);
}

#[test]
fn the_merge_queue_view_shows_states_times_runs_and_the_live_output() {
    use crew_store::{EntryState, QueueRun, RunOutcome};
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    h.press(&["ctrl-r", "A", "ctrl-r"]);
    let at = "2026-01-01T00:00:00Z";
    h.state.now = humantime::parse_rfc3339(at).unwrap() + std::time::Duration::from_secs(12);
    let view = h.state.queue.as_mut().unwrap();
    let Some(Ok(snapshot)) = view.snapshot.as_mut() else {
        panic!("not loaded: {:?}", view.snapshot);
    };
    let mut merged = snapshot.queue.entries[0].clone();
    merged.id = TaskId(7);
    merged.state = EntryState::Merged;
    merged.note = Some("merge queue: tested on main".into());
    snapshot.subjects.insert(TaskId(7), "Add a lexer".into());
    snapshot.queue.entries.insert(0, merged);
    for e in &mut snapshot.queue.entries {
        e.updated_at = at.into();
    }
    snapshot.queue.entries[1].state = EntryState::Testing;
    snapshot.queue.runs.push(QueueRun {
        tasks: vec![TaskId(7)],
        base: "abc".into(),
        started_at: at.into(),
        millis: 1500,
        outcome: RunOutcome::Passed,
    });
    snapshot.output = "running 2 tests\ntest parse ... ok\n".into();
    insta::assert_snapshot!("merge_queue_view", stable_screen(&mut h));
}

/// A task's diff marks a change that governs the team in the file list and says why above its
/// content, as the review queue does.
#[test]
fn the_review_diff_marks_a_git_hook_and_says_why() {
    let dir = repo_with_review();
    let root = dir.path();
    let ws = Workspace::new(root);
    ws.tasks().mark_merged(TaskId(1), &USER, "test").unwrap();
    std::fs::create_dir_all(root.join(".worktrees/alice/.githooks")).unwrap();
    submit(root, "Add a hook", ".githooks/pre-commit", "#!/bin/sh\n");
    let mut h = Harness::new(root);
    h.press(&["ctrl-r", "enter"]);
    let screen = stable_screen(&mut h);
    assert!(screen.contains("⚠ .githooks/pre-commit"), "{screen}");
    assert!(
        screen.contains("⚠ .githooks/pre-commit (git hooks): governs the team, never merged"),
        "{screen}"
    );
}

#[test]
fn a_reviews_age_grows_with_the_screens_clock_and_stop_team_works_from_its_diff() {
    let dir = repo_with_review();
    let mut h = Harness::new(dir.path());
    h.press(&["ctrl-r"]);
    let task = Workspace::new(dir.path()).tasks().read(TaskId(1)).unwrap();
    let entered = humantime::parse_rfc3339_weak(&task.updated_at).unwrap();
    h.feed(crew_tui::event::Event::Tick(
        entered + std::time::Duration::from_secs(300),
    ));
    let screen = crew_tui_test_support::screen_text(&mut h.state, 120, 32);
    assert!(screen.contains("5m ago"), "{screen}");
    h.press(&["enter"]);
    assert!(h.state.diff.is_some());
    h.press(&["Q"]);
    assert!(h.status().contains("no team daemon"), "{}", h.status());
}

#[test]
fn a_review_shows_what_merging_also_brings_and_why_another_cannot_be_shown() {
    let dir = repo_with_review();
    // alice's next task on the same branch while task_1 still waits: merging it brings both.
    submit(dir.path(), "Add a lexer", "lexer.rs", "fn lex() {}\n");
    let mut h = Harness::new(dir.path());
    h.press(&["ctrl-r"]);
    assert_eq!(h.state.reviews.len(), 2, "{}", h.status());
    assert_eq!(h.state.reviews[1].files, ["lexer.rs"]);
    assert_eq!(h.state.reviews[1].also_brings, ["parser.rs"]);
    // What the review list says of a task whose commits the team's remote does not have.
    h.state.reviews[0].unavailable = Some("the remote lacks 0123abcd".into());
    let screen = stable_screen_of_height(&mut h, 44);
    assert!(
        screen.contains("merging also brings parser.rs,") && screen.contains("lacks 0123abcd"),
        "{screen}"
    );
    insta::assert_snapshot!("review_also_brings_and_unavailable", screen);
}
