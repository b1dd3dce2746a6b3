//! `crew-bench render`: the screen on a big workspace (TestBackend, 200×60): frame times (also
//! while every teammate streams), peak memory, file change → frame latency through the real
//! watcher and loader, start → first frame.

use std::fmt::Write as _;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

use crew_agent::AgentEvent;
use crew_agent::transcript::TranscriptLine;
use crew_store::{
    AgentName, AgentState, AgentStatus, Message, MessageKind, TaskId, USER, Workspace,
};
use crew_tui::runtime::{Options, initial_state, spawn_loader};
use crew_tui::{Event, Pane, render, update};

use crate::stats::{percentile, round3};

const WIDTH: u16 = 200;
const HEIGHT: u16 = 60;
const FRAMES: usize = 300;
const PROBES: usize = 40;
/// Tool calls in each agent's transcript: 3 rows each, more than the 1,000 rows the screen keeps.
const TRANSCRIPT_STEPS: usize = 400;

pub fn run(teammates: usize, tasks: usize, messages: usize, as_json: bool) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("creating a scratch folder")?;
    let root = dir.path();
    populate(root, teammates, tasks, messages)?;
    let options = Options::default();

    // Start → first frame: load everything, draw once.
    let started = Instant::now();
    let mut state = initial_state(root, &options, SystemTime::now());
    let mut loader = crew_tui::data::Loader::new(root);
    update(&mut state, Event::Data(loader.load_all()));
    state.size = (WIDTH, HEIGHT);
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT))?;
    terminal.draw(|f| render(&state, f))?;
    let first_frame_ms = started.elapsed().as_secs_f64() * 1000.0;

    // Frame times while moving around every pane.
    let keys = [
        KeyCode::Tab,
        KeyCode::Down,
        KeyCode::Down,
        KeyCode::PageDown,
        KeyCode::Up,
    ];
    let mut frame_ms = Vec::with_capacity(FRAMES);
    for i in 0..FRAMES {
        let code = keys[i % keys.len()];
        update(
            &mut state,
            Event::Key(KeyEvent::new(code, KeyModifiers::NONE)),
        );
        let t = Instant::now();
        terminal.draw(|f| render(&state, f))?;
        frame_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    // Every teammate streaming at once: a text delta appended to each one's transcript, what
    // changed read by the loader, then the frame (the screen's work per frame while they stream).
    let mut streaming_ms = Vec::with_capacity(FRAMES);
    let names: Vec<String> = (0..teammates).map(|i| format!("mate{i}")).collect();
    let paths: Vec<std::path::PathBuf> = names
        .iter()
        .map(|n| root.join(".crew/transcripts").join(n).join("bench.jsonl"))
        .collect();
    state.focus = Pane::Teammates;
    for i in 0..FRAMES {
        for path in &paths {
            let line = TranscriptLine {
                ts: "2026-01-01T00:00:00Z".into(),
                turn: 2,
                event: AgentEvent::MessageDelta {
                    text: format!("word{i} "),
                },
            };
            let mut file = fs::OpenOptions::new().append(true).open(path)?;
            writeln!(file, "{}", serde_json::to_string(&line)?)?;
        }
        let t = Instant::now();
        update(&mut state, Event::Data(loader.changed(&paths)));
        terminal.draw(|f| render(&state, f))?;
        streaming_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    drop(state);

    // File change → the frame that shows it, through the watcher and loader the screen uses.
    let (tx, rx) = channel();
    let _watcher = spawn_loader(root, tx)?;
    let mut live = initial_state(root, &options, SystemTime::now());
    live.size = (WIDTH, HEIGHT);
    live.focus = Pane::Mailboxes;
    if let Ok(Event::Data(all)) = rx.recv_timeout(Duration::from_secs(60)) {
        update(&mut live, Event::Data(all));
    }
    let boxes = Workspace::new(root).mailboxes();
    let lead = AgentName::parse("lead")?;
    let mut change_ms = Vec::with_capacity(PROBES);
    for k in 0..PROBES {
        let probe = format!("probe-{k}");
        let t = Instant::now();
        boxes.append(&message(k, &USER, &lead, MessageKind::Message, &probe))?;
        loop {
            let event = rx
                .recv_timeout(Duration::from_secs(10))
                .with_context(|| format!("{probe} never arrived"))?;
            update(&mut live, event);
            terminal.draw(|f| render(&live, f))?;
            if screen_text(terminal.backend()).contains(&probe) {
                break;
            }
        }
        change_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }

    frame_ms.sort_by(f64::total_cmp);
    streaming_ms.sort_by(f64::total_cmp);
    change_ms.sort_by(f64::total_cmp);
    let peak_mb = peak_memory_kb().map(|kb| round3(kb as f64 / 1024.0));
    let report = json!({
        "teammates": teammates,
        "tasks": tasks,
        "messages": messages,
        "size": format!("{WIDTH}x{HEIGHT}"),
        "first_frame_ms": round3(first_frame_ms),
        "frame_ms": {
            "p50": round3(percentile(&frame_ms, 0.50)),
            "p99": round3(percentile(&frame_ms, 0.99)),
        },
        "streaming_frame_ms": {
            "p50": round3(percentile(&streaming_ms, 0.50)),
            "p99": round3(percentile(&streaming_ms, 0.99)),
        },
        "change_to_frame_ms": {
            "p50": round3(percentile(&change_ms, 0.50)),
            "p99": round3(percentile(&change_ms, 0.99)),
        },
        "peak_memory_mb": peak_mb,
    });
    if as_json {
        println!("{report}");
    } else {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}

fn message(k: usize, from: &AgentName, to: &AgentName, kind: MessageKind, text: &str) -> Message {
    Message {
        id: format!("msg_{k}"),
        ts: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        from: from.clone(),
        to: to.clone(),
        kind,
        text: Some(text.into()),
        request_id: None,
        approve: None,
        extra: Default::default(),
    }
}

/// Writes the workspace straight to disk (no locks or fsyncs: the store is not what is measured).
fn populate(root: &Path, teammates: usize, tasks: usize, messages: usize) -> anyhow::Result<()> {
    let mut toml = String::from("[team]\nname = \"bench\"\n\n[lead]\nname = \"lead\"\n");
    let names: Vec<AgentName> = (0..teammates)
        .map(|i| AgentName::parse(&format!("mate{i}")))
        .collect::<Result<_, _>>()?;
    let lead = AgentName::parse("lead")?;
    for name in &names {
        write!(
            toml,
            "\n[[teammate]]\nname = \"{name}\"\nrole = \"implementer\"\n"
        )?;
    }
    fs::write(root.join("crew.toml"), toml)?;
    let ws = Workspace::new(root);
    fs::create_dir_all(ws.tasks_dir())?;
    for i in 1..=tasks {
        let status = if i < tasks / 3 {
            "completed"
        } else {
            "pending"
        };
        let blocked: Vec<String> = (i > 1)
            .then(|| format!("task_{}", i / 2))
            .into_iter()
            .collect();
        let task = json!({
            "id": format!("task_{i}"), "subject": format!("task number {i}"), "description": "bench",
            "status": status, "owner": null, "blockedBy": blocked,
            "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z",
        });
        fs::write(
            ws.tasks_dir().join(format!("task_{i}.json")),
            task.to_string(),
        )?;
    }
    fs::create_dir_all(ws.mailboxes_dir())?;
    let inboxes: Vec<AgentName> = std::iter::once(lead.clone())
        .chain(names.iter().cloned())
        .collect();
    let mut files = inboxes
        .iter()
        .map(|n| {
            Ok(BufWriter::new(fs::File::create(
                ws.mailboxes_dir().join(format!("{n}.jsonl")),
            )?))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    for k in 0..messages {
        let to = k % inboxes.len();
        let mut m = message(
            k,
            &lead,
            &inboxes[to],
            MessageKind::StatusUpdate,
            &format!("update {k}"),
        );
        // Every 500th message is a request waiting for the person.
        if k % 500 == 0 {
            m.kind = MessageKind::PermissionRequest;
            m.request_id = Some(format!("req_{k}").into());
            m.extra.insert("tool".into(), json!("bash"));
            m.extra
                .insert("input".into(), json!({"command": format!("make step{k}")}));
        }
        serde_json::to_writer(&mut files[to], &m)?;
        files[to].write_all(b"\n")?;
    }
    for mut f in files {
        f.flush()?;
    }
    let agents = ws.crew_dir().join("agents");
    fs::create_dir_all(&agents)?;
    for name in &names {
        let mut status = AgentStatus::new(name, AgentState::Work);
        status.task = Some(TaskId(1));
        (status.turns, status.tokens) = (1, 1000);
        fs::write(
            agents.join(format!("{name}.json")),
            serde_json::to_string(&status)?,
        )?;
    }
    for name in &inboxes {
        transcript(root, name)?;
    }
    Ok(())
}

/// A long session per agent: more than the screen keeps, each tool call with a 2 KB output.
fn transcript(root: &Path, name: &str) -> anyhow::Result<()> {
    let dir = root.join(".crew/transcripts").join(name);
    fs::create_dir_all(&dir)?;
    let mut out = BufWriter::new(fs::File::create(dir.join("bench.jsonl"))?);
    let output: String = (0..40)
        .map(|l| format!("test module_{l}::case ... ok (line of output {l})\n"))
        .collect();
    for step in 0..TRANSCRIPT_STEPS {
        let id = format!("call_{step}");
        let events = [
            AgentEvent::MessageDelta {
                text: format!("Step {step}: running the tests."),
            },
            AgentEvent::ToolUse {
                id: id.clone(),
                name: "bash".into(),
                input: json!({"command": format!("cargo test -p step{step}")}),
                early: false,
            },
            AgentEvent::ToolResult {
                id,
                name: "bash".into(),
                content: output.clone(),
                is_error: false,
                rewritten_input: None,
                spilled: None,
                decision: None,
                notes: Vec::new(),
            },
        ];
        for event in events {
            let line = TranscriptLine {
                ts: "2026-01-01T00:00:00Z".into(),
                turn: 1,
                event,
            };
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(())
}

fn screen_text(backend: &TestBackend) -> String {
    backend
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect()
}

/// Peak resident memory (VmHWM) in kB, on Linux.
fn peak_memory_kb() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
