//! The worker lifecycle with a fake `Work` (the agent is tested on its own): claims, inbox
//! priority, shutdown refused while busy and accepted after, idle shutdown, file-event wake-ups.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crew_test_support::wait::poll;

use crew_store::MessageKind;
use crew_store::requests::RequestState;
use crew_store::{
    Actor, AgentName, AgentState, AgentStatus, Claimant, Draft, NewTask, RequestId, Roster, Status,
    TaskId, Workspace,
};
use crew_team::run::status::StatusHandle;
use crew_team::run::worker::{ExitReason, Worker, WorkerSettings};
use crew_team::work::{Job, JobOutcome, Work};

fn settings(name: &str, idle_timeout: Duration) -> WorkerSettings {
    WorkerSettings {
        name: self::name(name),
        role: Some("implementer".into()),
        lead: self::name("lead"),
        claims: true,
        // Long polls: anything quicker than this in a test was woken by a file event.
        idle_poll: Duration::from_secs(30),
        idle_timeout: Some(idle_timeout),
        heartbeat: Duration::from_millis(200),
        request_timeout: Duration::from_secs(300),
        team_budget: Default::default(),
        budget: Default::default(),
    }
}

fn name(raw: &str) -> AgentName {
    raw.parse().unwrap()
}

fn roster() -> Roster {
    Roster::new(["lead", "alice", "bob"].map(name))
}

/// Records jobs; blocks each one until the test lets it go (when `gate` is set).
struct Fake {
    seen: Arc<Mutex<Vec<String>>>,
    gate: Option<Receiver<()>>,
    started: Option<Sender<String>>,
}

impl Work for Fake {
    fn run(
        &mut self,
        job: &Job,
        _status: &StatusHandle,
        _cancel: &tokio_util::sync::CancellationToken,
    ) -> JobOutcome {
        let label = match job {
            Job::Task(t) => t.id.to_string(),
            Job::Message(m) => format!("{}:{}", m.from, m.text.clone().unwrap_or_default()),
        };
        if let Some(tx) = &self.started {
            let _ = tx.send(label.clone());
        }
        if let Some(gate) = &self.gate {
            let _ = gate.recv();
        }
        self.seen.lock().unwrap().push(label.clone());
        JobOutcome {
            success: true,
            summary: format!("did {label}"),
            turns: 1,
            tokens: 10,
            cost_micros: Some(250),
            cache: crew_store::CacheTokens {
                read: 40,
                written: 8,
            },
            interrupted: false,
            commits: None,
        }
    }
}

/// A worker that shuts down after a minute idle (no test waits that long).
fn worker_for(ws: &Workspace, name: &str) -> Worker {
    Worker::new(
        ws.clone(),
        roster(),
        settings(name, Duration::from_secs(60)),
    )
    .unwrap()
}

fn add_tasks(ws: &Workspace, subjects: &[&str]) {
    for subject in subjects {
        ws.tasks()
            .create(NewTask {
                subject: subject.to_string(),
                ..NewTask::default()
            })
            .unwrap();
    }
}

/// A fake whose jobs each wait for a send on the returned gate; it reports each job it starts.
fn gated() -> (Sender<()>, Receiver<String>, Fake) {
    let (gate_tx, gate_rx) = channel();
    let (started_tx, started_rx) = channel();
    let fake = Fake {
        seen: Arc::default(),
        gate: Some(gate_rx),
        started: Some(started_tx),
    };
    (gate_tx, started_rx, fake)
}

fn send(
    ws: &Workspace,
    from: &str,
    to: &str,
    kind: &str,
    text: &str,
    request: bool,
) -> Option<RequestId> {
    ws.mailboxes()
        .send(
            &roster(),
            Draft {
                kind: kind.into(),
                text: Some(text.into()),
                request,
                ..Draft::new(name(from), name(to))
            },
        )
        .unwrap()
        .request_id
}

#[test]
fn claims_a_task_finishes_it_and_tells_the_lead_then_shuts_down_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    add_tasks(&ws, &["write it"]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let worker = worker_for(&ws, "alice");
    let stop = AtomicBool::new(false);
    let ws2 = ws.clone();
    let exit = std::thread::scope(|s| {
        let handle = s.spawn(|| {
            let mut fake = Fake {
                seen: seen.clone(),
                gate: None,
                started: None,
            };
            worker.run(&mut fake, &stop)
        });
        poll("the task to complete", || {
            let t = ws2.tasks().read(TaskId(1)).unwrap();
            (t.status == Status::Completed).then_some(())
        });
        let req = send(&ws2, "lead", "alice", "shutdown_request", "bye?", true).unwrap();
        let exit = handle.join().unwrap().unwrap();
        assert_eq!(exit, ExitReason::ShutdownApproved { request_id: req });
        exit
    });
    assert!(matches!(exit, ExitReason::ShutdownApproved { .. }));
    let task = ws.tasks().read(TaskId(1)).unwrap();
    assert_eq!(task.owner.as_deref(), Some("alice"));
    assert_eq!(task.result.as_deref(), Some("did task_1"));
    let lead = ws.mailboxes().read_from(&name("lead"), 0).unwrap();
    let texts: Vec<String> = lead
        .entries
        .iter()
        .filter_map(|e| match e {
            crew_store::Entry::Message { message, .. } => Some(format!(
                "{} {}",
                message.kind,
                message.text.clone().unwrap_or_default()
            )),
            _ => None,
        })
        .collect();
    assert!(
        texts.contains(&"status_update task_1 done: did task_1".to_string()),
        "{texts:?}"
    );
    let status = ws.agents().read(&name("alice")).unwrap().unwrap();
    assert_eq!(status.state, AgentState::Shutdown);
    assert_eq!(status.turns, 1);
    assert_eq!(status.tokens, 10);
    assert_eq!(status.cost_micros, Some(250));
    assert_eq!(
        (status.cache.read, status.cache.written),
        (40, 8),
        "cache tokens are kept per agent"
    );
}

#[test]
fn shutdown_is_refused_while_holding_a_task_and_accepted_after() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    add_tasks(&ws, &["slow"]);
    let (gate_tx, started_rx, mut fake) = gated();
    let worker = worker_for(&ws, "bob");
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handle = s.spawn(|| worker.run(&mut fake, &stop));
        assert_eq!(
            started_rx.recv_timeout(Duration::from_secs(10)).unwrap(),
            "task_1"
        );
        let status = ws.agents().read(&name("bob")).unwrap().unwrap();
        assert_eq!(status.state, AgentState::Work);
        assert_eq!(status.task, Some(TaskId(1)));

        let busy = send(&ws, "lead", "bob", "shutdown_request", "stop?", true).unwrap();
        let refused = poll("the refusal", || {
            let r = ws.mailboxes().requests(Duration::from_secs(300)).unwrap();
            r.into_iter()
                .find(|r| r.request_id == busy && r.state == RequestState::Rejected)
        });
        assert_eq!(
            refused.note.as_deref(),
            Some("busy with task_1; ask again when it is done")
        );

        gate_tx.send(()).unwrap();
        poll("the task to complete", || {
            (ws.tasks().read(TaskId(1)).unwrap().status == Status::Completed).then_some(())
        });
        let again = send(&ws, "lead", "bob", "shutdown_request", "now?", true).unwrap();
        let exit = handle.join().unwrap().unwrap();
        assert_eq!(
            exit,
            ExitReason::ShutdownApproved {
                request_id: again.clone()
            }
        );
        let all = ws.mailboxes().requests(Duration::from_secs(300)).unwrap();
        assert_eq!(
            all.iter().find(|r| r.request_id == again).unwrap().state,
            RequestState::Approved
        );
    });
}

#[test]
fn a_task_reassigned_while_its_worker_is_on_it_is_reported_not_recorded_and_the_worker_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    add_tasks(&ws, &["first", "second"]);
    let (gate_tx, started_rx, mut fake) = gated();
    let worker = worker_for(&ws, "alice");
    let stop = AtomicBool::new(false);
    let bob_name = name("bob");
    let bob = Claimant {
        name: &bob_name,
        role: Some("implementer"),
    };
    std::thread::scope(|s| {
        let handle = s.spawn(|| worker.run(&mut fake, &stop));
        let wait = Duration::from_secs(10);
        assert_eq!(started_rx.recv_timeout(wait).unwrap(), "task_1");
        let moved = ws
            .tasks()
            .assign(TaskId(1), Some(bob), Actor::Person)
            .unwrap();
        assert_eq!(
            (moved.status, moved.owner.as_deref()),
            (Status::Pending, Some("bob"))
        );
        assert!(moved.notes[0].ends_with("reassigned from alice to bob by user"));
        gate_tx.send(()).unwrap();
        // Alice's finish is refused, she says so, and takes the next task instead of dying.
        assert_eq!(started_rx.recv_timeout(wait).unwrap(), "task_2");
        gate_tx.send(()).unwrap();
        poll("task_2 to complete", || {
            (ws.tasks().read(TaskId(2)).unwrap().status == Status::Completed).then_some(())
        });
        let req = send(&ws, "lead", "alice", "shutdown_request", "bye?", true).unwrap();
        assert_eq!(
            handle.join().unwrap().unwrap(),
            ExitReason::ShutdownApproved { request_id: req }
        );
    });
    let told: Vec<String> = ws
        .mailboxes()
        .read_from(&name("lead"), 0)
        .unwrap()
        .entries
        .into_iter()
        .filter_map(|e| match e {
            crew_store::Entry::Message { message, .. } => message.text,
            _ => None,
        })
        .collect();
    assert!(
        told.iter().any(|t| t.starts_with(
            "task_1 done by alice, but not recorded (task_1 is pending; only an in_progress task can be completed)"
        )),
        "{told:?}"
    );
    // The task stays bob's: nobody else can take it, bob can.
    let tasks = ws.tasks();
    let alice_name = name("alice");
    let alice = Claimant {
        name: &alice_name,
        role: Some("implementer"),
    };
    assert!(tasks.claim(TaskId(1), alice).is_err());
    assert_eq!(tasks.claim_next(bob).unwrap().id, "task_1");
}

#[test]
fn shutdown_comes_first_then_the_leads_messages_then_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    send(&ws, "bob", "alice", "message", "from bob", false);
    send(&ws, "lead", "alice", "message", "from lead", false);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let worker = worker_for(&ws, "alice");
    let stop = AtomicBool::new(false);
    let (gate_tx, gate_rx) = channel();
    let (started_tx, started_rx) = channel();
    std::thread::scope(|s| {
        let handle = s.spawn(|| {
            let mut fake = Fake {
                seen: seen.clone(),
                gate: Some(gate_rx),
                started: Some(started_tx),
            };
            worker.run(&mut fake, &stop)
        });
        // While the first job runs, a later message and a shutdown request arrive together.
        let first = started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(first, "lead:from lead");
        send(&ws, "bob", "alice", "message", "late", false);
        send(&ws, "lead", "alice", "shutdown_request", "stop", true);
        gate_tx.send(()).unwrap();
        gate_tx.send(()).unwrap();
        handle.join().unwrap().unwrap();
    });
    assert_eq!(*seen.lock().unwrap(), ["lead:from lead", "bob:from bob"]);
    // The message behind the shutdown stays unread for a restart.
    let cursor = ws.mailboxes().cursor(&name("alice")).unwrap();
    let unread = ws.mailboxes().read_from(&name("alice"), cursor).unwrap();
    assert_eq!(
        unread.entries.len(),
        2,
        "the late message and the shutdown request"
    );
}

#[test]
fn an_idle_worker_tells_the_lead_and_shuts_down_and_wakes_on_new_tasks_before_that() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let worker = Worker::new(
        ws.clone(),
        roster(),
        settings("alice", Duration::from_secs(3)),
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let exit = std::thread::scope(|s| {
        let handle = s.spawn(|| {
            let mut fake = Fake {
                seen: seen.clone(),
                gate: None,
                started: None,
            };
            worker.run(&mut fake, &stop)
        });
        poll("the worker to go idle", || {
            ws.agents()
                .read(&name("alice"))
                .unwrap()
                .filter(|s| s.state == AgentState::Idle)
        });
        // With a 30 s poll, only a file event can wake it in time to claim this.
        add_tasks(&ws, &["new"]);
        poll("the new task to be claimed", || {
            (seen.lock().unwrap().len() == 1).then_some(())
        });
        handle.join().unwrap().unwrap()
    });
    assert_eq!(exit, ExitReason::IdleTimeout);
    let lead = ws.mailboxes().read_from(&name("lead"), 0).unwrap();
    let last = match lead.entries.last().unwrap() {
        crew_store::Entry::Message { message, .. } => message.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(last.kind, MessageKind::IdleNotification);
    // The text carries the measured idle time, which a stalled box stretches: check its shape
    // and that it is at least the timeout, not the exact figure.
    let text = last.text.unwrap();
    let secs: u64 = text
        .strip_prefix("alice has been idle for ")
        .and_then(|rest| rest.strip_suffix("s and is shutting down"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected idle notification {text:?}"));
    assert!(secs >= 3, "{text:?}");
    let status = ws.agents().read(&name("alice")).unwrap().unwrap();
    assert_eq!(status.state, AgentState::Shutdown);
    assert_eq!(status.note.as_deref(), Some("idle for 3s"));
}

#[test]
fn a_teammate_that_shuts_down_gives_back_the_tasks_assigned_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    let tasks = ws.tasks();
    tasks
        .create(NewTask {
            subject: "for a reviewer".into(),
            role: Some("reviewer".into()),
            ..NewTask::default()
        })
        .unwrap();
    tasks
        .create(NewTask {
            subject: "after the review".into(),
            blocked_by: vec![TaskId(1)],
            ..NewTask::default()
        })
        .unwrap();
    let alice_name = name("alice");
    let alice = Claimant {
        name: &alice_name,
        role: Some("implementer"),
    };
    tasks.assign(TaskId(2), Some(alice), Actor::Person).unwrap();
    // Nothing alice can do yet: she idles out.
    let worker = Worker::new(
        ws.clone(),
        roster(),
        settings("alice", Duration::from_millis(300)),
    )
    .unwrap();
    let mut fake = Fake {
        seen: Arc::default(),
        gate: None,
        started: None,
    };
    let exit = worker.run(&mut fake, &AtomicBool::new(false)).unwrap();
    assert_eq!(exit, ExitReason::IdleTimeout);
    let task = tasks.read(TaskId(2)).unwrap();
    assert_eq!((task.status, task.owner), (Status::Pending, None));
    assert!(
        task.notes
            .last()
            .unwrap()
            .contains("released: alice shut down (idle for 0s)"),
        "{:?}",
        task.notes
    );
}

#[test]
fn a_teammate_does_not_idle_out_while_the_lead_is_in_a_turn_or_its_task_may_come() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    // The lead, in this process, inside a long first turn.
    let mut lead = AgentStatus::new(&name("lead"), AgentState::Work);
    ws.agents().write(&lead).unwrap();
    let worker = Worker::new(
        ws.clone(),
        roster(),
        settings("alice", Duration::from_millis(300)),
    )
    .unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut fake = Fake {
        seen: seen.clone(),
        gate: None,
        started: None,
    };
    let handle = std::thread::spawn(move || worker.run(&mut fake, &AtomicBool::new(false)));
    // Three distinct heartbeats: well past the 300 ms idle timeout, and alice still waits.
    let beats_past_the_timeout = |lead_state: AgentState| {
        let mut beats = std::collections::HashSet::new();
        poll("alice's heartbeats", || {
            let status = ws.agents().read(&name("alice")).unwrap()?;
            assert_ne!(
                status.state,
                AgentState::Shutdown,
                "idled out while {lead_state:?}"
            );
            beats.insert(status.heartbeat);
            (beats.len() >= 3).then_some(())
        });
    };
    beats_past_the_timeout(AgentState::Work);
    // The lead plans: task_2 waits on task_1, a review bob works on; alice waits for it too.
    ws.tasks()
        .create(NewTask {
            subject: "bob's review".into(),
            role: Some("reviewer".into()),
            ..NewTask::default()
        })
        .unwrap();
    let bob_name = name("bob");
    let bob = Claimant {
        name: &bob_name,
        role: Some("reviewer"),
    };
    ws.tasks().claim(TaskId(1), bob).unwrap();
    ws.tasks()
        .create(NewTask {
            subject: "alice's part, after the review".into(),
            blocked_by: vec![TaskId(1)],
            ..NewTask::default()
        })
        .unwrap();
    lead.state = AgentState::Idle;
    ws.agents().write(&lead).unwrap();
    beats_past_the_timeout(AgentState::Idle);
    // bob is done: alice takes her task, then idles out with nothing more to come.
    ws.tasks()
        .complete(
            TaskId(1),
            Actor::Teammate {
                name: &bob_name,
                writes: false,
            },
            None,
        )
        .unwrap();
    let exit = handle.join().unwrap().unwrap();
    assert_eq!(exit, ExitReason::IdleTimeout);
    assert_eq!(*seen.lock().unwrap(), vec!["task_2".to_string()]);
}
