//! Snapshots of the whole screen and of every pane, from a fixed workspace at a fixed "now".
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_git::proposed_change;
use crew_store::Entry;
use crew_tui::data::Change;
use crew_tui::event::Event;
use crew_tui::{Pane, update};
use crew_tui_test_support::{draw, fixture_state, key, msg};
use serde_json::json;

#[test]
fn whole_layout_at_120x40() {
    let mut state = fixture_state();
    insta::assert_snapshot!(draw(&mut state, 120, 40));
}

#[test]
fn whole_layout_at_80x24_shows_one_pane_with_tabs() {
    let mut state = fixture_state();
    insta::assert_snapshot!(draw(&mut state, 80, 24));
}

#[test]
fn every_pane_alone() {
    for pane in [
        Pane::Lead,
        Pane::Teammates,
        Pane::Tasks,
        Pane::Mailboxes,
        Pane::Approvals,
    ] {
        let mut state = fixture_state();
        state.focus = pane;
        insta::assert_snapshot!(format!("pane_{}", pane.title()), draw(&mut state, 100, 24));
    }
}

#[test]
fn task_detail_and_an_inbox_switch() {
    let mut state = fixture_state();
    state.focus = Pane::Tasks;
    for k in ["down", "down", "enter"] {
        update(&mut state, Event::Key(key(k)));
    }
    insta::assert_snapshot!("task_detail", draw(&mut state, 100, 24));
    let mut state = fixture_state();
    state.focus = Pane::Mailboxes;
    update(&mut state, Event::Key(key("right")));
    insta::assert_snapshot!("mailbox_alice", draw(&mut state, 100, 24));
}

#[test]
fn an_unfolded_tool_call_and_a_zoomed_teammate() {
    let mut state = fixture_state();
    assert_eq!(state.focus, Pane::Lead);
    update(&mut state, Event::Key(key("ctrl-o")));
    insta::assert_snapshot!("lead_call_unfolded", draw(&mut state, 100, 24));
    let mut state = fixture_state();
    state.focus = Pane::Teammates;
    update(&mut state, Event::Key(key("z")));
    insta::assert_snapshot!("teammate_zoomed", draw(&mut state, 120, 40));
}

#[test]
fn an_edit_request_shows_the_diff_it_would_make() {
    let mut state = fixture_state();
    let edit = msg(
        "2026-01-01T00:09:50Z",
        "bob",
        "user",
        "permission_request",
        "bob asks to use edit",
        json!({"request_id": "req_edit1", "tool": "edit",
            "input": {"path": "src/parser.rs", "old_string": "let n = 1;", "new_string": "let n = 2;"},
            "workspace": "/repo/web/.worktrees/bob", "reason": "ask mode asks before edits"}),
    );
    update(
        &mut state,
        Event::Data(vec![Change::Inbox {
            name: "user".parse().unwrap(),
            entries: vec![Entry::Message {
                offset: 500,
                message: edit,
            }],
            reset: false,
        }]),
    );
    let before = "fn parse() {\n    let n = 1;\n    n\n}\n";
    let after = before.replace("let n = 1;", "let n = 2;");
    let diff = proposed_change("src/parser.rs", Some(before), &after).unwrap();
    update(
        &mut state,
        Event::Proposal {
            request_id: "req_edit1".into(),
            diff: Ok(Box::new(diff)),
        },
    );
    state.focus = Pane::Approvals;
    // The edit is the newest of the three pending requests.
    for _ in 0..2 {
        update(&mut state, Event::Key(key("down")));
    }
    insta::assert_snapshot!("approval_edit_diff", draw(&mut state, 100, 30));
}

#[test]
fn help_overlay_lists_the_active_keymap() {
    let mut state = fixture_state();
    state.focus = Pane::Tasks;
    update(&mut state, Event::Key(key("?")));
    insta::assert_snapshot!(draw(&mut state, 120, 40));
}

#[test]
fn too_small_shows_a_message() {
    let mut state = fixture_state();
    insta::assert_snapshot!(draw(&mut state, 50, 10));
}

fn sample_diff() -> crew_git::WorktreeDiff {
    use crew_git::{
        DiffLine, DiffTotals, EntryKind, FileDiff, FileStatus, Hunk, LineKind, WorktreeDiff,
    };
    let line = |kind, old: Option<u32>, new: Option<u32>, text: &str| DiffLine {
        kind,
        old_lineno: old,
        new_lineno: new,
        text: text.into(),
    };
    let file = FileDiff {
        path: "src/parse.rs".into(),
        old_path: None,
        status: FileStatus::Modified,
        kind: EntryKind::File,
        binary: false,
        additions: 2,
        deletions: 1,
        hunks: vec![Hunk {
            header: "@@ -1,3 +1,4 @@ fn parse".into(),
            old_start: 1,
            old_lines: 3,
            new_start: 1,
            new_lines: 4,
            lines: vec![
                line(
                    LineKind::Context,
                    Some(1),
                    Some(1),
                    "fn parse(input: &str) -> Ast {",
                ),
                line(LineKind::Del, Some(2), None, "    let x = 1;"),
                line(LineKind::Add, None, Some(2), "    let y = 1;"),
                line(LineKind::Add, None, Some(3), "    check(y);"),
                line(LineKind::Context, Some(3), Some(4), "}"),
            ],
        }],
    };
    let added = FileDiff {
        path: "README.md".into(),
        old_path: None,
        status: FileStatus::Added,
        kind: EntryKind::File,
        binary: false,
        additions: 1,
        deletions: 0,
        hunks: vec![],
    };
    WorktreeDiff {
        totals: DiffTotals {
            files: 2,
            additions: 3,
            deletions: 1,
        },
        files: vec![file, added],
    }
}

#[test]
fn diff_view_unified_and_side_by_side() {
    let mut state = fixture_state();
    state.focus = Pane::Teammates;
    let effects = update(&mut state, Event::Key(key("d")));
    assert!(
        matches!(&effects[..], [crew_tui::Effect::LoadDiff { name, task: None }] if name == "alice")
    );
    insta::assert_snapshot!("diff_loading", draw(&mut state, 100, 24));
    let effects = update(
        &mut state,
        Event::Diff {
            name: "alice".parse().unwrap(),
            task: None,
            result: Ok(sample_diff()),
        },
    );
    assert!(
        matches!(
            &effects[..],
            [crew_tui::Effect::HighlightFile { file: 0, .. }]
        ),
        "the shown file is highlighted off the input path"
    );
    insta::assert_snapshot!("diff_unified", draw(&mut state, 100, 24));
    update(&mut state, Event::Key(key("s")));
    insta::assert_snapshot!("diff_side_by_side", draw(&mut state, 100, 24));
}

#[test]
fn task_rows_in_a_narrow_pane_end_with_whole_ids_or_say_how_many_are_left_out() {
    let mut state = fixture_state();
    let screen = crew_tui_test_support::screen_text(&mut state, 120, 40);
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains('⇠')).collect();
    assert!(!rows.is_empty(), "{screen}");
    for row in rows {
        // The tasks pane is the right-hand column; its text ends at the border.
        let deps = row.rsplit('⇠').next().unwrap();
        let deps = deps.trim_end_matches(['│', '┃', ' ']).trim();
        for item in deps.split(", ").flat_map(|d| d.split(' ')) {
            let whole = item
                .strip_prefix("task_")
                .is_some_and(|n| n.parse::<u32>().is_ok());
            let more = item
                .strip_prefix("…+")
                .is_some_and(|n| n.parse::<u32>().is_ok());
            assert!(
                whole || more || item == "(blocked)" || item.is_empty(),
                "{item:?} in {row}"
            );
        }
    }
}

#[test]
fn the_header_says_how_commands_run() {
    use crew_tui::state::SandboxState;
    let header = |sandbox: SandboxState| {
        let mut state = fixture_state();
        state.sandbox = sandbox;
        crew_tui_test_support::screen_text(&mut state, 160, 30)
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    // Before the spending, which a narrow screen cuts first.
    let confined = header(SandboxState::Confined);
    assert!(
        confined.contains("│ approvals 2 │ sandboxed │ tokens"),
        "{confined}"
    );
    let off = header(SandboxState::Unconfined(
        "sandbox OFF (crew.toml: sandbox = \"off\")".into(),
    ));
    assert!(
        off.starts_with(" ⚠ sandbox OFF"),
        "the warning comes first: {off}"
    );
    assert!(!off.contains("sandboxed"), "{off}");
    assert!(!header(SandboxState::Unknown).contains("sandbox"));
}

#[test]
fn prompt_cache_tokens_show_per_agent_and_in_the_header() {
    let mut state = fixture_state();
    let mut alice = state.agent("alice").unwrap().clone();
    alice.cache = crew_store::CacheTokens {
        read: 12_000,
        written: 3_000,
    };
    update(
        &mut state,
        Event::Data(vec![Change::Agent("alice".parse().unwrap(), Some(alice))]),
    );
    // Wide enough for the teammate box's whole title.
    let text = crew_tui_test_support::screen_text(&mut state, 240, 40);
    assert!(text.contains("cache 12k read 3000 written"), "{text}");
    assert!(
        text.lines().next().unwrap().contains("(12k from cache)"),
        "{text}"
    );
}

/// A teammate's subagents show nested under it in its box: the running one with the tool it is
/// on, the finished ones with how they ended.
#[test]
fn subagents_nested_under_their_teammate() {
    use crew_store::AgentStatus;
    use crew_store::SubagentLine;
    let mut state = fixture_state();
    let mut alice: AgentStatus = state.agent("alice").unwrap().clone();
    let line =
        |id: &str, role: &str, description: &str, tool: Option<&str>, outcome: Option<&str>| {
            SubagentLine {
                id: id.into(),
                role: role.into(),
                description: description.into(),
                tool: tool.map(str::to_string),
                outcome: outcome.map(str::to_string),
            }
        };
    alice.subagents = vec![
        line(
            "sub1",
            "explore",
            "find the parser's entry points",
            Some("grep"),
            Some("completed"),
        ),
        line(
            "sub2",
            "verify",
            "check the off-by-one fix",
            Some("bash"),
            Some("completed, verdict pass"),
        ),
        line("sub3", "general", "update the docs", Some("edit"), None),
    ];
    update(
        &mut state,
        Event::Data(vec![Change::Agent("alice".parse().unwrap(), Some(alice))]),
    );
    state.focus = Pane::Teammates;
    insta::assert_snapshot!("teammate_subagents", draw(&mut state, 100, 24));
}

#[test]
fn at_80x24_the_header_cuts_the_folder_before_waiting_approvals_the_sandbox_or_simulator() {
    use crew_config::{InitModel, InitModels, TeamConfig, init_template};
    let mut state = fixture_state();
    state.sandbox = crew_tui::state::SandboxState::Confined;
    let text = crew_tui_test_support::screen_text(&mut state, 80, 24);
    let header = text.lines().next().unwrap_or_default().to_string();
    for shown in ["WAITING 1", "approvals 2", "sandboxed"] {
        assert!(header.contains(shown), "{shown}: {header}");
    }
    assert!(!header.contains("/repo/web"), "{header}");
    // A team the simulator plays: the header says so before anything else.
    let scripted = InitModel {
        provider: "scripted".into(),
        model: None,
        base_url: None,
    };
    let models = InitModels {
        lead: Some(scripted.clone()),
        teammates: Some(scripted),
    };
    let text = init_template("web", "main", &models);
    state.workspace.config =
        Some(TeamConfig::parse(std::path::Path::new("crew.toml"), &text).unwrap());
    let text = crew_tui_test_support::screen_text(&mut state, 80, 24);
    let header = text.lines().next().unwrap_or_default().to_string();
    assert!(header.starts_with(" SIMULATOR │ crew · web"), "{header}");
    for shown in ["WAITING 1", "approvals 2"] {
        assert!(header.contains(shown), "{shown}: {header}");
    }
    insta::assert_snapshot!(
        "header_at_80x24_simulated_and_sandboxed",
        draw(&mut state, 80, 24)
    );
}

#[test]
fn at_200_columns_the_teammates_pane_gets_the_most_room() {
    let mut state = fixture_state();
    let screen = crew_tui_test_support::screen_text(&mut state, 200, 50);
    let row: Vec<char> = screen.lines().nth(1).unwrap().chars().collect();
    let title: Vec<char> = "teammates".chars().collect();
    let at = row
        .windows(title.len())
        .position(|w| w == title.as_slice())
        .unwrap();
    let start = row[..at].iter().rposition(|c| "┌┏".contains(*c)).unwrap();
    let end = at + row[at..].iter().position(|c| "┐┓".contains(*c)).unwrap();
    assert_eq!(end - start + 1, 80, "{screen}");
}

#[test]
fn a_team_on_the_store_shows_each_teammates_host_and_a_lapsed_lease() {
    let mut state = fixture_state();
    state.store = Some("postgres://crew@db.example/web".into());
    let mut changes = Vec::new();
    for (name, host) in [("alice", "build-1"), ("bob", "laptop\u{1b}[2J")] {
        let name: crew_store::AgentName = name.parse().unwrap();
        let mut status = state.workspace.agents[&name].clone();
        status.host = Some(host.into());
        changes.push(Change::Agent(name, Some(status)));
    }
    let standing = [("alice", vec![]), ("bob", vec![crew_store::TaskId(5)])]
        .into_iter()
        .map(|(n, lapsed)| (n.parse().unwrap(), crew_tui::data::Standing { lapsed }))
        .collect();
    changes.push(Change::Standing(standing));
    update(&mut state, Event::Data(changes));
    insta::assert_snapshot!("store_team", draw(&mut state, 120, 40));
    // The host an agent wrote cannot drive the terminal.
    let text = crew_tui_test_support::screen_text(&mut state, 160, 40);
    assert!(text.contains(r"on laptop\u{1b}[2J"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
}
