//! Fixed workspaces and a key-driven harness for the screen's tests (crew-tui's and the root's).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // in a fixture a failure is the report

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crew_agent::transcript::Row;
use crew_config::{TeamConfig, init_template};
use crew_store::{AgentState, AgentStatus};
use crew_store::{Entry, Message, Status, Task};
use crew_tui::data::{Change, Loader};
use crew_tui::effects;
use crew_tui::event::{Effect, Event};
use crew_tui::uiconfig::UiConfig;
use crew_tui::{AppState, Keymap, Theme, render, update};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};

pub fn now() -> SystemTime {
    humantime::parse_rfc3339("2026-01-01T00:10:00Z").unwrap()
}

pub fn state_at(root: &Path) -> AppState {
    let theme = Theme::load_from("default", None).0;
    let keymap = Keymap::load_from("default", None).0;
    AppState::new(root.to_path_buf(), theme, keymap, now())
}

pub fn msg(ts: &str, from: &str, to: &str, kind: &str, text: &str, extra: Value) -> Message {
    let mut m: Message = serde_json::from_value(json!({
        "id": format!("msg_{from}_{ts}"), "ts": ts, "from": from, "to": to, "type": kind, "text": text,
    }))
    .unwrap();
    if let Value::Object(map) = extra {
        for (k, v) in map {
            match k.as_str() {
                "request_id" => m.request_id = v.as_str().map(Into::into),
                "approve" => m.approve = v.as_bool(),
                _ => {
                    m.extra.insert(k, v);
                }
            }
        }
    }
    m
}

fn task(id: u64, subject: &str, status: Status, owner: Option<&str>, blocked_by: &[u64]) -> Task {
    serde_json::from_value(json!({
        "id": format!("task_{id}"), "subject": subject, "description": format!("Do: {subject}.\nCarefully."),
        "status": status, "owner": owner,
        "blockedBy": blocked_by.iter().map(|b| format!("task_{b}")).collect::<Vec<_>>(),
        "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:05:00Z",
    }))
    .unwrap()
}

fn entries(messages: Vec<Message>) -> Vec<Entry> {
    messages
        .into_iter()
        .enumerate()
        .map(|(i, message)| Entry::Message {
            offset: i as u64 * 100,
            message,
        })
        .collect()
}

fn agent(name: &str, state: AgentState, task: Option<&str>, tokens: u64) -> Change {
    let name: crew_store::AgentName = name.parse().unwrap();
    let mut status = AgentStatus::new(&name, state);
    status.pid = 100;
    status.task = task.map(|id| id.parse().unwrap());
    status.turns = 3;
    status.tokens = tokens;
    // The lead's provider reports a cost; the teammates' do not.
    status.cost_micros = (name == "lead").then_some(1_234_567);
    Change::Agent(name, Some(status))
}

/// The fixed workspace every snapshot shows.
pub fn fixture_changes() -> Vec<Change> {
    let config = TeamConfig::parse(
        Path::new("crew.toml"),
        &init_template("web", "main", &Default::default()),
    )
    .unwrap();
    let tasks = vec![
        task(1, "Sketch the API", Status::Completed, Some("alice"), &[]),
        task(
            2,
            "Implement the parser",
            Status::InProgress,
            Some("alice"),
            &[1],
        ),
        task(3, "Write docs", Status::Pending, None, &[1]),
        task(
            4,
            "Review the parser",
            Status::Pending,
            Some("carol"),
            &[2, 3],
        ),
        task(5, "Flaky test", Status::Failed, Some("bob"), &[]),
    ];
    let permission = msg(
        "2026-01-01T00:08:00Z",
        "alice",
        "user",
        "permission_request",
        "run the test suite",
        json!({"request_id": "req_perm1", "tool": "bash", "input": {"command": "cargo test --all"}, "workspace": "/repo/web/.worktrees/alice"}),
    );
    let plan = msg(
        "2026-01-01T00:09:30Z",
        "bob",
        "lead",
        "plan_approval_request",
        "1. split parser\n2. add tests",
        json!({"request_id": "req_plan1"}),
    );
    let shutdown = msg(
        "2026-01-01T00:01:00Z",
        "lead",
        "carol",
        "shutdown_request",
        "wrap up",
        json!({"request_id": "req_shut1"}),
    );
    let shutdown_ok = msg(
        "2026-01-01T00:02:00Z",
        "carol",
        "lead",
        "shutdown_response",
        "done",
        json!({"request_id": "req_shut1", "approve": true}),
    );
    let mut lead_box = entries(vec![
        msg(
            "2026-01-01T00:00:30Z",
            "user",
            "lead",
            "message",
            "Please add a parser",
            json!({}),
        ),
        shutdown_ok,
        plan,
        msg(
            "2026-01-01T00:09:40Z",
            "alice",
            "lead",
            "weird_kind",
            "?",
            json!({"colour": "blue"}),
        ),
    ]);
    lead_box.push(Entry::Broken {
        offset: 900,
        raw: "{not json".into(),
        error: ".mailboxes/lead.jsonl: byte 900: expected value at line 1 column 2".into(),
    });
    vec![
        Change::Config(Ok((Box::new(config), UiConfig::default()))),
        Change::AllTasks(tasks, vec![]),
        Change::Inbox {
            name: "lead".parse().unwrap(),
            entries: lead_box,
            reset: false,
        },
        Change::Inbox {
            name: "user".parse().unwrap(),
            entries: entries(vec![permission]),
            reset: false,
        },
        Change::Inbox {
            name: "carol".parse().unwrap(),
            entries: entries(vec![shutdown]),
            reset: false,
        },
        agent("lead", AgentState::Work, None, 12_000),
        agent("alice", AgentState::Waiting, Some("task_2"), 3_400),
        agent("bob", AgentState::Idle, None, 800),
        Change::Transcript {
            name: "lead".parse().unwrap(),
            lines: vec![
                Row::plain("user: Please add a parser"),
                Row::plain("assistant: Planning three tasks."),
                Row {
                    text: r#"→ create_task {"subject":"Sketch the API"}"#.into(),
                    detail: Some("{\n  \"subject\": \"Sketch the API\"\n}".into()),
                },
                Row {
                    text: "← create_task: task_1 Sketch the API".into(),
                    detail: Some("task_1 Sketch the API\nstatus: pending".into()),
                },
            ],
            reset: false,
            tail: 0,
        },
        Change::Transcript {
            name: "alice".parse().unwrap(),
            lines: vec![
                Row::plain("tool: read src/lib.rs"),
                Row::plain("assistant: asking to run tests"),
            ],
            reset: false,
            tail: 0,
        },
    ]
}

pub fn fixture_state() -> AppState {
    let mut state = state_at(Path::new("/repo/web"));
    update(&mut state, Event::Data(fixture_changes()));
    state
}

/// The screen as plain text, one line per row.
pub fn screen_text(state: &mut AppState, width: u16, height: u16) -> String {
    let backend = draw(state, width, height);
    let buffer = backend.buffer();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn draw(state: &mut AppState, width: u16, height: u16) -> TestBackend {
    state.size = (width, height);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| render(state, f)).unwrap();
    terminal.backend().clone()
}

/// A key from the keymap grammar's simple spellings: "a", "A", "enter", "ctrl-s", "tab".
pub fn key(spec: &str) -> KeyEvent {
    let (mods, name) = match spec.strip_prefix("ctrl-") {
        Some(rest) => (KeyModifiers::CONTROL, rest),
        None => match spec.strip_prefix("alt-") {
            Some(rest) => (KeyModifiers::ALT, rest),
            None => (KeyModifiers::NONE, spec),
        },
    };
    let code = match name {
        "enter" => KeyCode::Enter,
        "esc" => KeyCode::Esc,
        "tab" => KeyCode::Tab,
        "down" => KeyCode::Down,
        "up" => KeyCode::Up,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "space" => KeyCode::Char(' '),
        "backspace" => KeyCode::Backspace,
        other => KeyCode::Char(other.chars().next().unwrap()),
    };
    let shift = matches!(code, KeyCode::Char(c) if c.is_uppercase());
    KeyEvent::new(
        code,
        if shift {
            mods | KeyModifiers::SHIFT
        } else {
            mods
        },
    )
}

/// A real workspace driven by key events, effects run synchronously as the runtime would.
pub struct Harness {
    pub root: PathBuf,
    pub state: AppState,
    pub effects: Vec<Effect>,
    loader: Loader,
    /// Carries effects out as the runtime's threads do (crew.toml read once, again on change).
    runner: effects::Effects,
}

impl Harness {
    pub fn new(root: &Path) -> Harness {
        let mut h = Harness {
            root: root.to_path_buf(),
            state: state_at(root),
            effects: Vec::new(),
            loader: Loader::new(root),
            runner: effects::Effects::new(root),
        };
        h.state.size = (120, 40);
        h.reload();
        h
    }

    /// Reads the workspace again, as a file-system event would make the loader do.
    pub fn reload(&mut self) {
        self.loader = Loader::new(&self.root);
        let changes = self.loader.load_all();
        self.state.workspace = Default::default();
        self.feed(Event::Data(changes));
    }

    /// Feeds what the files at `rel_paths` now say, as a file-system event would.
    pub fn changed(&mut self, rel_paths: &[&str]) {
        let paths: Vec<PathBuf> = rel_paths.iter().map(|p| self.root.join(p)).collect();
        let changes = self.loader.changed(&paths);
        self.effects.clear();
        self.feed(Event::Data(changes));
    }

    pub fn feed(&mut self, event: Event) {
        let effects = update(&mut self.state, event);
        for effect in effects {
            self.effects.push(effect.clone());
            if let Some(next) = self.runner.execute(effect) {
                self.feed(next);
            }
        }
    }

    pub fn press(&mut self, keys: &[&str]) {
        for k in keys {
            self.feed(Event::Key(key(k)));
        }
    }

    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            let code = if c == ' ' {
                KeyCode::Char(' ')
            } else {
                KeyCode::Char(c)
            };
            let mods = if c.is_uppercase() {
                KeyModifiers::SHIFT
            } else {
                KeyModifiers::NONE
            };
            self.feed(Event::Key(KeyEvent::new(code, mods)));
        }
    }

    pub fn status(&self) -> String {
        self.state
            .status
            .as_ref()
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    }
}

/// A folder with the `crew init` team (lead, alice, bob, carol) and nothing else.
pub fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("crew.toml"),
        init_template("web", "main", &Default::default()),
    )
    .unwrap();
    dir
}

/// Every message in `name`'s inbox, oldest first.
pub fn inbox(root: &Path, name: &str) -> Vec<Message> {
    crew_store::Workspace::new(root)
        .mailboxes()
        .read_from(&name.parse().unwrap(), 0)
        .unwrap()
        .entries
        .into_iter()
        .filter_map(|e| match e {
            Entry::Message { message, .. } => Some(message),
            Entry::Broken { .. } => None,
        })
        .collect()
}
