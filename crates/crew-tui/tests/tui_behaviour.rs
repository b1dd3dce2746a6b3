//! The screen driven by key events in-process against a real workspace: every answer lands in
//! the store exactly as the protocol expects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::fs;
use std::path::Path;

use crew_git::Worktrees;
use crew_store::{AgentState, Draft, Message, MessageKind, NewTask, RequestId, Roster, Workspace};
use crew_test_support::wait::poll;
use crew_tui::event::Event;
use crew_tui::{Effect, Pane};
use crew_tui_test_support::{Harness, inbox, workspace};
use git2::{IndexAddOption, Repository, RepositoryInitOptions, Signature};
use serde_json::json;

fn roster() -> Roster {
    Roster::new(["lead", "alice", "bob", "carol"].map(|n| n.parse().unwrap()))
}

/// alice asks the person to run `command` in her worktree; returns the request id.
fn ask(root: &Path, command: &str) -> RequestId {
    ask_for(root, "bash", json!({ "command": command }))
}

/// alice asks the person to use `tool` with `input` in her worktree; returns the request id.
fn ask_for(root: &Path, tool: &str, input: serde_json::Value) -> RequestId {
    let mut extra = serde_json::Map::new();
    extra.insert("tool".into(), json!(tool));
    extra.insert("input".into(), input);
    extra.insert(
        "workspace".into(),
        json!(root.join(".worktrees/alice").display().to_string()),
    );
    let sent = Workspace::new(root)
        .mailboxes()
        .send(
            &roster(),
            Draft {
                from: "alice".parse().unwrap(),
                to: "user".parse().unwrap(),
                kind: MessageKind::PermissionRequest,
                text: Some(format!("alice asks to use {tool}")),
                request: true,
                extra,
            },
        )
        .unwrap();
    sent.request_id.unwrap()
}

fn answer_in_alices_inbox(root: &Path, request_id: &str) -> Message {
    let answers: Vec<Message> = inbox(root, "alice")
        .into_iter()
        .filter(|m| m.request_id.as_deref() == Some(request_id))
        .collect();
    assert_eq!(answers.len(), 1, "exactly one answer: {answers:?}");
    assert_eq!(answers[0].kind, MessageKind::PermissionResponse);
    assert_eq!(answers[0].from, "user");
    answers[0].clone()
}

#[test]
fn approve_answers_with_the_same_request_id() {
    let dir = workspace();
    let id = ask(dir.path(), "cargo test");
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "5", "a"]);
    assert_eq!(answer_in_alices_inbox(dir.path(), &id).approve, Some(true));
    assert!(h.status().contains("approved"), "{}", h.status());
    h.reload();
    assert!(h.state.workspace.pending().is_empty());
}

/// A crew.toml broken while the screen is open is a warning, not a wall: answers go on with the
/// last good configuration.
#[test]
fn a_broken_crew_toml_does_not_block_an_approval() {
    let dir = workspace();
    let id = ask(dir.path(), "cargo test");
    let mut h = Harness::new(dir.path());
    fs::write(dir.path().join("crew.toml"), "[team\nname = ").unwrap();
    h.changed(&["crew.toml"]);
    assert!(h.state.workspace.config_error.is_some());
    h.press(&["esc", "5", "a"]);
    assert_eq!(answer_in_alices_inbox(dir.path(), &id).approve, Some(true));
    assert!(h.status().contains("approved"), "{}", h.status());
}

#[test]
fn an_edit_request_is_shown_as_the_diff_it_would_make_then_approved() {
    let dir = workspace();
    let wt = dir.path().join(".worktrees/alice");
    fs::create_dir_all(&wt).unwrap();
    fs::write(wt.join("lib.sh"), "add() { echo $(($1 + $2)); }\n").unwrap();
    let id = ask_for(
        dir.path(),
        "edit",
        json!({"path": "lib.sh", "old_string": "$1 + $2", "new_string": "$1 - $2"}),
    );
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "5"]);
    let screen = crew_tui_test_support::screen_text(&mut h.state, 120, 40);
    assert!(screen.contains("in .worktrees/alice"), "{screen}");
    assert!(screen.contains("changes lib.sh  +1 -1"), "{screen}");
    assert!(screen.contains("-add() { echo $(($1 + $2)); }"), "{screen}");
    assert!(screen.contains("+add() { echo $(($1 - $2)); }"), "{screen}");
    h.press(&["a"]);
    assert_eq!(answer_in_alices_inbox(dir.path(), &id).approve, Some(true));
}

#[test]
fn deny_answers_no() {
    let dir = workspace();
    let id = ask(dir.path(), "rm -rf target");
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "5", "d"]);
    assert!(
        inbox(dir.path(), "alice").is_empty(),
        "the note comes first"
    );
    h.press(&["enter"]);
    assert_eq!(answer_in_alices_inbox(dir.path(), &id).approve, Some(false));
}

#[test]
fn a_denial_carries_the_persons_note_to_the_agent() {
    let dir = workspace();
    let id = ask(dir.path(), "rm -rf target");
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "5", "d"]);
    h.type_text("keep target, run cargo clean");
    h.press(&["enter"]);
    let answer = answer_in_alices_inbox(dir.path(), &id);
    assert_eq!(answer.approve, Some(false));
    assert_eq!(answer.text.as_deref(), Some("keep target, run cargo clean"));
}

#[test]
fn always_asks_first_then_writes_the_rule_keeping_comments_and_approves() {
    let dir = workspace();
    let id = ask(dir.path(), "cargo test --all");
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "5", "A"]);
    assert!(
        inbox(dir.path(), "alice").is_empty(),
        "nothing before confirmation"
    );
    h.press(&["n"]);
    assert!(inbox(dir.path(), "alice").is_empty(), "cancelled");
    h.press(&["A", "y"]);
    assert_eq!(answer_in_alices_inbox(dir.path(), &id).approve, Some(true));
    let text = fs::read_to_string(dir.path().join("crew.toml")).unwrap();
    assert!(text.contains("\"bash(cargo test --all)\""), "{text}");
    assert!(text.contains("# Deny beats everything (hooks included)"));
    assert!(text.contains("# bypass mode also needs --dangerously-bypass"));
    let (team, _) = crew_tui::uiconfig::load(dir.path()).unwrap();
    assert!(
        team.permissions
            .allow
            .contains(&"bash(cargo test --all)".to_string())
    );
}

#[test]
fn a_new_request_rings_the_bell_and_runs_the_notify_command() {
    let dir = workspace();
    let mut text = fs::read_to_string(dir.path().join("crew.toml")).unwrap();
    text.push_str("\n[ui]\nnotify_command = \"echo $CREW_REQUEST_ID >> notified.txt\"\n");
    fs::write(dir.path().join("crew.toml"), text).unwrap();
    let mut h = Harness::new(dir.path());
    assert!(h.effects.is_empty(), "the first load rings nothing");
    let id = ask(dir.path(), "make");
    h.changed(&[".mailboxes/user.jsonl"]);
    assert!(h.effects.iter().any(|e| matches!(e, Effect::Bell)));
    let notified = dir.path().join("notified.txt");
    poll("notify_command to run", || {
        fs::read_to_string(&notified)
            .is_ok_and(|t| t.contains(id.as_str()))
            .then_some(())
    });
}

#[test]
fn send_a_message_to_a_teammate_and_to_the_lead() {
    let dir = workspace();
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "2", "down", "m"]);
    h.type_text("please rebase");
    h.press(&["enter"]);
    let bob = inbox(dir.path(), "bob");
    assert_eq!(bob.len(), 1);
    assert_eq!(
        (bob[0].from.as_str(), bob[0].kind.as_str()),
        ("user", "message")
    );
    assert_eq!(bob[0].text.as_deref(), Some("please rebase"));

    h.press(&["1"]);
    h.type_text("first line");
    h.press(&["alt-enter"]);
    h.type_text("second q line");
    h.press(&["enter"]);
    let lead = inbox(dir.path(), "lead");
    assert_eq!(lead[0].text.as_deref(), Some("first line\nsecond q line"));
    assert!(!h.state.quit, "typing q in the text box does not quit");
    h.press(&["ctrl-p"]);
    assert_eq!(h.state.input.lines(), ["first line", "second q line"]);
}

#[test]
fn add_a_task_with_a_dependency_and_release_a_claimed_one() {
    let dir = workspace();
    let ws = Workspace::new(dir.path());
    let first = ws
        .tasks()
        .create(NewTask {
            subject: "base".into(),
            ..NewTask::default()
        })
        .unwrap();
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "3", "n"]);
    h.type_text("on top");
    h.press(&["tab"]);
    h.type_text("needs the base");
    h.press(&["tab"]);
    h.type_text(&first.id.to_string());
    h.press(&["enter"]);
    let tasks = ws.tasks().load_all().unwrap().tasks;
    assert_eq!(tasks.len(), 2, "{}", h.status());
    assert_eq!(tasks[1].subject, "on top");
    assert_eq!(tasks[1].description, "needs the base");
    assert_eq!(tasks[1].blocked_by, vec![first.id]);

    h.reload();
    let row = h
        .state
        .workspace
        .task_rows
        .iter()
        .find(|r| h.state.workspace.tasks[r.index].id == tasks[1].id)
        .unwrap();
    assert_eq!(row.blocked_by, vec![first.id]);
    assert!(!row.claimable);

    let id = first.id;
    ws.tasks()
        .claim(
            id,
            crew_store::Claimant {
                name: &"alice".parse().unwrap(),
                role: Some("implementer"),
            },
        )
        .unwrap();
    h.reload();
    h.state.selected.insert(Pane::Tasks, 0);
    h.press(&["r"]);
    let task = ws.tasks().read(id).unwrap();
    assert_eq!(task.owner, None, "{}", h.status());
}

fn commit_all(repo: &Repository, message: &str) {
    let mut index = repo.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("t", "t@example.com").unwrap();
    let parents: Vec<_> = repo
        .head()
        .ok()
        .and_then(|h| h.peel_to_commit().ok())
        .into_iter()
        .collect();
    let parents: Vec<_> = parents.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .unwrap();
}

#[test]
fn review_then_merge_from_the_diff_view() {
    let dir = workspace();
    let root = dir.path();
    let mut opts = RepositoryInitOptions::new();
    opts.initial_head("main");
    let repo = Repository::init_opts(root, &opts).unwrap();
    fs::write(
        root.join(".git/info/exclude"),
        ".tasks\n.mailboxes\n.worktrees\n.crew\n",
    )
    .unwrap();
    fs::write(root.join("lib.rs"), "fn a() {\n    let x = 1;\n}\n").unwrap();
    commit_all(&repo, "initial");
    let wts = Worktrees::open(root).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    fs::write(wt.path.join("lib.rs"), "fn a() {\n    let y = 1;\n}\n").unwrap();
    fs::write(wt.path.join("new.rs"), "fn b() {}\n").unwrap();

    let mut h = Harness::new(root);
    h.press(&["esc", "2", "d"]);
    let view = h.state.diff.as_ref().expect("diff view open");
    let files: Vec<_> = view.files().iter().map(|f| f.path.clone()).collect();
    assert_eq!(files, ["lib.rs", "new.rs"]);
    assert!(
        h.effects
            .iter()
            .any(|e| matches!(e, Effect::HighlightFile { file: 0, .. }))
    );
    h.press(&["]"]);
    assert_eq!(h.state.diff.as_ref().unwrap().file, 1);

    h.press(&["M"]);
    assert!(h.status().contains("merged alice"), "{}", h.status());
    let main = repo.find_branch("main", git2::BranchType::Local).unwrap();
    let tree = main.get().peel_to_tree().unwrap();
    assert!(
        tree.get_path(Path::new("new.rs")).is_ok(),
        "merged into main"
    );
    let view = h.state.diff.as_ref().unwrap();
    assert!(
        view.outcome
            .as_deref()
            .unwrap_or("")
            .contains("merged alice")
    );
    assert!(
        view.files().is_empty(),
        "the reloaded diff is empty after the merge"
    );

    h.press(&["b"]);
    h.type_text("also add tests");
    h.press(&["enter"]);
    let note = inbox(root, "alice");
    assert!(note[0].text.as_deref().unwrap().contains("also add tests"));

    h.press(&["X", "y"]);
    assert!(h.state.diff.is_none(), "{}", h.status());
    assert!(
        Worktrees::open(root)
            .unwrap()
            .list("main")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn mouse_click_focuses_and_resize_switches_to_tabs() {
    use ratatui::crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let dir = workspace();
    let mut h = Harness::new(dir.path());
    h.feed(Event::Resize(120, 40));
    let click = |column, row| {
        Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    h.feed(click(100, 5));
    assert_eq!(h.state.focus, Pane::Tasks);
    h.feed(click(100, 35));
    assert_eq!(h.state.focus, Pane::Approvals);
    h.feed(Event::Resize(80, 24));
    h.feed(click(2, 1));
    assert_eq!(h.state.focus, Pane::Lead, "the first tab");
}

#[test]
fn a_key_sequence_from_the_vim_keymap() {
    let dir = workspace();
    let mut h = Harness::new(dir.path());
    h.state.keymap = crew_tui::Keymap::load_from("vim", None).0;
    for n in 0..5 {
        Workspace::new(dir.path())
            .tasks()
            .create(NewTask {
                subject: format!("t{n}"),
                ..NewTask::default()
            })
            .unwrap();
    }
    h.reload();
    h.press(&["esc", "3", "G"]);
    assert_eq!(h.state.selected(Pane::Tasks), 4);
    h.press(&["g"]);
    assert_eq!(h.state.selected(Pane::Tasks), 4, "waits for the second g");
    h.press(&["g"]);
    assert_eq!(h.state.selected(Pane::Tasks), 0);
}

#[test]
fn changes_made_by_anyone_reach_the_screen_through_the_watcher() {
    let dir = workspace();
    let (tx, rx) = std::sync::mpsc::channel();
    let _watcher = crew_tui::runtime::spawn_loader(dir.path(), tx).unwrap();
    let mut state = crew_tui_test_support::state_at(dir.path());
    let pump = |state: &mut crew_tui::AppState, done: &dyn Fn(&crew_tui::AppState) -> bool| {
        poll("the change to reach the screen", || {
            while let Ok(event) = rx.try_recv() {
                crew_tui::update(state, event);
            }
            done(state).then_some(())
        });
    };
    pump(&mut state, &|s| s.workspace.loaded);
    Workspace::new(dir.path())
        .tasks()
        .create(NewTask {
            subject: "from elsewhere".into(),
            ..NewTask::default()
        })
        .unwrap();
    pump(&mut state, &|s| {
        s.workspace
            .tasks
            .iter()
            .any(|t| t.subject == "from elsewhere")
    });
    let id = ask(dir.path(), "ls");
    pump(&mut state, &|s| {
        s.workspace.pending().iter().any(|r| r.request_id == id)
    });
    assert_eq!(
        state.workspace.inboxes["user"].len(),
        1,
        "read incrementally, nothing twice"
    );
    fs::create_dir_all(dir.path().join(".crew/agents")).unwrap();
    fs::write(
        dir.path().join(".crew/agents/alice.json"),
        r#"{"name":"alice","state":"WAITING","pid":1,"task":null,"heartbeat":"2026-01-01T00:00:00Z","turns":1,"tokens":5}"#,
    )
    .unwrap();
    pump(&mut state, &|s| {
        s.agent("alice")
            .is_some_and(|a| a.state == AgentState::Waiting)
    });
}

/// A teammate's checklist, as its worker writes it into its status file, shows in its box:
/// done, in progress and pending, each with its mark.
#[test]
fn a_teammates_checklist_shows_in_its_box() {
    use crew_store::{AgentState, AgentStatus, AgentStatuses, TodoItem, TodoStatus};
    let dir = workspace();
    let mut status = AgentStatus::new(&"alice".parse().unwrap(), AgentState::Work);
    status.todos = [
        ("Read the parser", TodoStatus::Completed),
        ("Fix the off-by-one", TodoStatus::InProgress),
        ("Run the tests", TodoStatus::Pending),
    ]
    .map(|(content, status)| TodoItem {
        content: content.into(),
        status,
    })
    .to_vec();
    AgentStatuses::new(dir.path().join(".crew/agents"))
        .write(&status)
        .unwrap();
    let mut h = Harness::new(dir.path());
    h.state.focus = Pane::Teammates;
    let screen = crew_tui_test_support::screen_text(&mut h.state, 120, 40);
    for line in [
        "[x] Read the parser",
        "[~] Fix the off-by-one",
        "[ ] Run the tests",
    ] {
        assert!(screen.contains(line), "{line} missing:\n{screen}");
    }
}

#[test]
fn a_screen_attached_again_starts_outside_the_text_box_so_q_detaches() {
    let dir = workspace();
    // First attach: the text box has the focus, and `q` is a letter for the lead.
    let mut first = Harness::new(dir.path());
    assert_eq!(first.state.focus, Pane::Lead);
    first.press(&["q"]);
    assert!(!first.state.quit);
    assert_eq!(first.state.input.lines().join(""), "q");
    // Attached again (this person's last-seen marker is there): `q` detaches.
    let mut again = Harness::new(dir.path());
    again.state.since = Some(crew_tui::since::LastSeen {
        seen: "2026-01-01T00:00:00Z".into(),
    });
    again.reload();
    assert_eq!(again.state.focus, Pane::Teammates);
    assert!(
        again.status().contains("1 types to the lead, q detaches"),
        "{}",
        again.status()
    );
    again.press(&["q"]);
    assert!(again.state.quit, "q detached");
    assert!(again.state.input.lines().join("").is_empty());
}
