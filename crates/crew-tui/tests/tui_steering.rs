//! Steering the team from the screen, in-process with key events against a real workspace:
//! editing a task's dependencies, assigning it, asking a teammate to shut down, and unfolding
//! the lead's tool calls. Restarting a dead teammate starts a real `crew worker`, so that test
//! is the root package's (`tests/tui_steering.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_agent::transcript::Row;
use crew_store::MessageKind;
use crew_store::{AgentState, AgentStatus, NewTask, Status, TaskId, Workspace};
use crew_tui::Pane;
use crew_tui::data::Change;
use crew_tui::event::Event;
use crew_tui_test_support::{Harness, inbox, workspace};
use ratatui::crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

fn add(ws: &Workspace, subject: &str, blocked_by: &[TaskId]) -> TaskId {
    ws.tasks()
        .create(NewTask {
            subject: subject.into(),
            blocked_by: blocked_by.to_vec(),
            ..NewTask::default()
        })
        .unwrap()
        .id
}

fn select_task(h: &mut Harness, id: TaskId) {
    let at = h
        .state
        .workspace
        .task_rows
        .iter()
        .position(|r| h.state.workspace.tasks[r.index].id == id)
        .unwrap();
    h.state.selected.insert(Pane::Tasks, at);
}

/// Empties the prompt's text box (it opens with the current value).
fn clear_field(h: &mut Harness) {
    for _ in 0..40 {
        h.press(&["backspace"]);
    }
}

#[test]
fn edit_a_tasks_dependencies_and_a_cycle_is_refused_with_nothing_changed() {
    let dir = workspace();
    let ws = Workspace::new(dir.path());
    let base = add(&ws, "base", &[]);
    let api = add(&ws, "api", &[]);
    let docs = add(&ws, "docs", &[api]);
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "3"]);
    select_task(&mut h, docs);
    h.press(&["e"]);
    clear_field(&mut h);
    h.type_text(&format!("{base}, {api}"));
    h.press(&["enter"]);
    let id = docs;
    assert_eq!(
        ws.tasks().read(id).unwrap().blocked_by,
        [base, api],
        "{}",
        h.status()
    );
    assert_eq!(h.status(), format!("{docs} waits for {base}, {api}"));

    // The prompt opens with what is there; api waiting for docs would close a loop.
    h.reload();
    select_task(&mut h, api);
    h.press(&["e"]);
    h.type_text(&docs.to_string());
    h.press(&["enter"]);
    assert_eq!(
        h.status(),
        format!("blockedBy would make a cycle: {api} -> {docs} -> {api}")
    );
    let api_id = api;
    assert!(ws.tasks().read(api_id).unwrap().blocked_by.is_empty());

    // Emptied: waits for nothing.
    h.reload();
    select_task(&mut h, docs);
    h.press(&["e"]);
    clear_field(&mut h);
    h.press(&["enter"]);
    assert!(ws.tasks().read(id).unwrap().blocked_by.is_empty());
    assert_eq!(h.status(), format!("{docs} waits for nothing"));
}

#[test]
fn assign_a_task_reassign_it_from_its_owner_and_put_it_back_in_the_pool() {
    let dir = workspace();
    let ws = Workspace::new(dir.path());
    let task = add(&ws, "parser", &[]);
    let id = task;
    let mut h = Harness::new(dir.path());
    h.press(&["esc", "3"]);
    select_task(&mut h, task);
    h.press(&["a"]);
    h.type_text("bob");
    h.press(&["enter"]);
    let t = ws.tasks().read(id).unwrap();
    assert_eq!(
        (t.status, t.owner.as_deref()),
        (Status::Pending, Some("bob"))
    );
    assert_eq!(h.status(), format!("{task} assigned to bob"));

    // Bob is on it; the person moves it to alice. The prompt opens with the owner's name.
    ws.tasks()
        .claim(
            id,
            crew_store::Claimant {
                name: &"bob".parse().unwrap(),
                role: Some("implementer"),
            },
        )
        .unwrap();
    h.reload();
    select_task(&mut h, task);
    h.press(&["a"]);
    clear_field(&mut h);
    h.type_text("alice");
    h.press(&["enter"]);
    let t = ws.tasks().read(id).unwrap();
    assert_eq!(
        (t.status, t.owner.as_deref()),
        (Status::Pending, Some("alice"))
    );
    assert!(
        t.notes
            .last()
            .unwrap()
            .ends_with("reassigned from bob to alice by user")
    );

    // Not a teammate: refused by name, nothing changes.
    h.reload();
    select_task(&mut h, task);
    h.press(&["a"]);
    clear_field(&mut h);
    h.type_text("lead");
    h.press(&["enter"]);
    assert_eq!(
        h.status(),
        "unknown teammate \"lead\"; the team is: alice, bob, carol"
    );
    assert_eq!(ws.tasks().read(id).unwrap().owner.as_deref(), Some("alice"));

    // Released: back in the pool, claimable by anyone.
    h.reload();
    select_task(&mut h, task);
    h.press(&["r"]);
    let t = ws.tasks().read(id).unwrap();
    assert_eq!((t.status, t.owner), (Status::Pending, None));
    assert_eq!(h.status(), format!("{task} is back in the pool"));
    h.reload();
    select_task(&mut h, task);
    h.press(&["r"]);
    assert_eq!(h.status(), format!("{task} is not claimed or assigned"));
}

fn lead_rows(h: &mut Harness) {
    let rows = vec![
        Row::plain("user: build it"),
        Row {
            text: "→ bash {\"command\":\"cargo test\"}".into(),
            detail: Some("{\n  \"command\": \"cargo test\"\n}".into()),
        },
        Row {
            text: "← bash: running 3 tests⏎test a ... ok".into(),
            detail: Some(format!(
                "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\n{}END",
                "long output ".repeat(10)
            )),
        },
        Row::plain("assistant: all green"),
    ];
    h.feed(Event::Data(vec![Change::Transcript {
        name: "lead".parse().unwrap(),
        lines: rows,
        reset: false,
        tail: 0,
    }]));
}

fn lead_text(h: &mut Harness) -> String {
    h.state.zoom = true;
    crew_tui_test_support::screen_text(&mut h.state, 60, 20)
}

#[test]
fn the_leads_tool_calls_are_folded_and_unfold_one_at_a_time() {
    let dir = workspace();
    let mut h = Harness::new(dir.path());
    lead_rows(&mut h);
    assert_eq!(h.state.focus, Pane::Lead);
    let folded = lead_text(&mut h);
    assert!(
        folded.contains("▸ → bash {\"command\":\"cargo test\"}"),
        "{folded}"
    );
    assert!(folded.contains("▸ ← bash: running 3 tests⏎test a ... ok"));
    assert!(!folded.contains("test c ... ok"));

    // Unfolding picks the newest call first: its whole output shows under it.
    h.press(&["ctrl-o"]);
    let open = lead_text(&mut h);
    assert!(open.contains("▾ ← bash: running 3 tests"), "{open}");
    assert!(open.contains("    test c ... ok"), "{open}");
    // A long line wraps instead of being cut, and with everything fitting nothing scrolls.
    assert!(open.contains("put END"), "{open}");
    assert!(open.contains("user: build it"), "{open}");
    assert!(!open.contains("\"command\": \"cargo test\""));

    // The previous call, then fold the output again.
    h.press(&["ctrl-up", "ctrl-o"]);
    let both = lead_text(&mut h);
    assert!(both.contains("▾ → bash"), "{both}");
    assert!(both.contains("      \"command\": \"cargo test\""), "{both}");
    h.press(&["ctrl-down", "ctrl-o"]);
    let input_only = lead_text(&mut h);
    assert!(input_only.contains("▸ ← bash"), "{input_only}");
    assert!(!input_only.contains("test c ... ok"));
    // Typing still goes to the text box: no letter was taken by the folding keys.
    assert_eq!(h.state.input.lines().join(""), "");
}

#[test]
fn wide_characters_wrap_by_columns_so_nothing_is_cut_off() {
    let dir = workspace();
    let mut h = Harness::new(dir.path());
    // 30 CJK characters are 60 columns: more than the 58 inside a 60-column pane.
    let reply = "任务已经完成并且所有测试都通过了请检查工作树中的差异然后合并";
    h.feed(Event::Data(vec![Change::Transcript {
        name: "lead".parse().unwrap(),
        lines: vec![Row::plain(format!("assistant: {reply}"))],
        reset: false,
        tail: 0,
    }]));
    let screen = lead_text(&mut h);
    let shown: String = screen
        .lines()
        .flat_map(|l| l.chars())
        .filter(|c| reply.contains(*c))
        .collect();
    assert_eq!(shown, reply, "{screen}");
}

#[test]
fn clicking_a_folded_call_unfolds_it_and_clicking_again_folds_it() {
    let dir = workspace();
    let mut h = Harness::new(dir.path());
    lead_rows(&mut h);
    let screen = lead_text(&mut h);
    let row = screen
        .lines()
        .position(|l| l.contains("▸ ← bash"))
        .expect("the folded result is on screen");
    let row = u16::try_from(row).unwrap();
    let click = |h: &mut Harness| {
        h.feed(Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 4,
            row,
            modifiers: KeyModifiers::NONE,
        }))
    };
    click(&mut h);
    let open = lead_text(&mut h);
    assert!(open.contains("▾ ← bash"), "{open}");
    assert!(open.contains("    test c ... ok"), "{open}");
    // A click on a line that is not a call changes nothing.
    h.feed(Event::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 4,
        row: row + 1,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(lead_text(&mut h), open);
    click(&mut h);
    assert!(lead_text(&mut h).contains("▸ ← bash"));
}

#[test]
fn a_zoomed_teammates_call_unfolds_with_a_click_too() {
    let dir = workspace();
    let mut h = Harness::new(dir.path());
    h.feed(Event::Data(vec![Change::Transcript {
        name: "alice".parse().unwrap(),
        lines: vec![
            Row::plain("assistant: checking"),
            Row {
                text: "← bash: 2 passed".into(),
                detail: Some("ok - one\nok - two\n2 passed".into()),
            },
        ],
        reset: false,
        tail: 0,
    }]));
    h.press(&["esc", "z"]);
    assert_eq!(h.state.focus, Pane::Teammates);
    let screen = crew_tui_test_support::screen_text(&mut h.state, 60, 20);
    let row = u16::try_from(screen.lines().position(|l| l.contains("▸ ← bash")).unwrap()).unwrap();
    h.feed(Event::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 6,
        row,
        modifiers: KeyModifiers::NONE,
    }));
    let open = crew_tui_test_support::screen_text(&mut h.state, 60, 20);
    assert!(open.contains("▾ ← bash: 2 passed"), "{open}");
    assert!(open.contains("    ok - two"), "{open}");
}

#[test]
fn ctrl_c_interrupts_the_focused_agent_without_quitting_and_twice_offers_to_release_its_task() {
    let dir = workspace();
    let ws = Workspace::new(dir.path());
    let id = add(&ws, "slow", &[]);
    let claimant = crew_store::Claimant {
        name: &"alice".parse().unwrap(),
        role: None,
    };
    ws.tasks().claim(id, claimant).unwrap();
    for (name, task) in [("alice", Some(id)), ("lead", None)] {
        let mut working = AgentStatus::new(&name.parse().unwrap(), AgentState::Work);
        working.pid = std::process::id();
        working.task = task;
        ws.agents().write(&working).unwrap();
    }
    let mut h = Harness::new(dir.path());

    // The lead pane: the interrupt goes to the lead's inbox; crew goes on.
    h.press(&["esc", "1", "ctrl-c"]);
    assert!(!h.state.quit);
    let told = inbox(dir.path(), "lead");
    assert_eq!(
        (told[0].from.as_str(), told[0].kind.as_str()),
        ("user", "interrupt")
    );

    h.press(&["esc", "2", "ctrl-c"]);
    assert!(!h.state.quit);
    assert_eq!(
        h.status(),
        "interrupting alice; it keeps its task and waits for your message"
    );
    let told = inbox(dir.path(), "alice");
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].kind, MessageKind::Interrupt);
    // Pressed again at once: not a second interrupt, an offer to release the task.
    h.press(&["ctrl-c"]);
    assert!(h.state.overlay.is_some(), "asks before releasing");
    assert_eq!(inbox(dir.path(), "alice").len(), 1);
    h.press(&["y"]);
    let task = ws.tasks().read(id).unwrap();
    assert_eq!((task.status, task.owner), (Status::Pending, None));
    assert_eq!(h.status(), format!("{id} is back in the pool"));
}

#[test]
fn the_header_shows_spend_against_the_team_budget() {
    let dir = workspace();
    let toml = dir.path().join("crew.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str("\n[budget]\nmax_turns = 10\nmax_usd = 2.0\n");
    std::fs::write(&toml, text).unwrap();
    let ws = Workspace::new(dir.path());
    let mut busy = AgentStatus::new(&"alice".parse().unwrap(), AgentState::Work);
    busy.pid = std::process::id();
    busy.turns = 3;
    busy.cost_micros = Some(400_000);
    ws.agents().write(&busy).unwrap();
    let mut h = Harness::new(dir.path());
    let screen = crew_tui_test_support::screen_text(&mut h.state, 200, 30);
    assert!(
        screen.contains("budget 3/10 calls · $0.40/$2.00"),
        "{screen}"
    );
}
