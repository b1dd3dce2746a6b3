//! The mailbox prompter: a permission request goes to the lead's inbox, the person answers,
//! the asker wakes on the file event. Approve, reject, timeout, and the whole path through
//! the agent loop.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;
use std::time::Duration;

use crew_agent::{AgentEvent, EventSink, MailboxPrompter};
use crew_store::MessageKind;
use crew_store::{AgentName, Mailboxes, RequestInfo, Roster, USER, Workspace};
use crew_test_support::agent::{Build, Repo, assert_completed, drain, scenario};
use crew_test_support::tools::policy;
use crew_test_support::wait::{BUDGET, eventually_async};
use crew_tools::permissions::PermissionMode;
use crew_tools::{PermissionAnswer, PermissionAsk, Pipeline, Prompter, Subject, ToolRegistry};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

fn name(raw: &str) -> AgentName {
    raw.parse().unwrap()
}

fn roster() -> Roster {
    Roster::new(["lead", "alice"].map(name))
}

/// Alice asks through the lead's inbox.
fn alices_prompter(boxes: &Mailboxes) -> MailboxPrompter {
    MailboxPrompter::new(
        boxes.clone(),
        roster(),
        name("alice"),
        name("lead"),
        DEFAULT_TIMEOUT,
    )
}

fn ask(repo: &Repo) -> PermissionAsk {
    PermissionAsk {
        tool: "bash".into(),
        input: json!({"command": "cargo publish"}),
        subject: Subject::Command("cargo publish".into()),
        reason: "ask mode asks before exec tools run".into(),
        workspace: repo.root.clone(),
        purpose: None,
    }
}

/// Waits for alice's pending permission request to appear in the lead's inbox.
async fn pending_request(boxes: &Mailboxes) -> RequestInfo {
    let mut found = None;
    let seen = eventually_async(BUDGET, || {
        found = boxes
            .requests(DEFAULT_TIMEOUT)
            .unwrap()
            .into_iter()
            .find(|r| r.kind == MessageKind::PermissionRequest && r.from == "alice");
        found.is_some()
    })
    .await;
    assert!(seen, "no permission request arrived");
    found.unwrap()
}

/// Answers as the person from another thread.
async fn answer(boxes: &Mailboxes, approve: bool, note: Option<&str>) -> RequestInfo {
    let request = pending_request(boxes).await;
    let (boxes, id, note) = (
        boxes.clone(),
        request.request_id.clone(),
        note.map(String::from),
    );
    std::thread::spawn(move || {
        boxes
            .respond(&roster(), &id, &USER, approve, note, DEFAULT_TIMEOUT)
            .unwrap();
    })
    .join()
    .unwrap();
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_request_allows_and_carries_everything_a_person_needs() {
    let repo = Repo::new();
    let boxes = Workspace::new(&repo.root).mailboxes();
    let (sink, mut rx) = EventSink::channel();
    let prompter = alices_prompter(&boxes).with_events(sink);
    let cursor_before = boxes.cursor(&name("alice")).unwrap();
    let (got, request) = tokio::join!(prompter.ask(ask(&repo)), answer(&boxes, true, None));
    assert_eq!(got, PermissionAnswer::Allow);
    let sent = &request.request;
    assert_eq!((sent.from.as_str(), sent.to.as_str()), ("alice", "lead"));
    assert_eq!(sent.extra["tool"], "bash");
    assert_eq!(sent.extra["input"], json!({"command": "cargo publish"}));
    assert_eq!(
        sent.extra["subject"],
        json!({"type": "command", "value": "cargo publish"})
    );
    assert_eq!(sent.extra["reason"], "ask mode asks before exec tools run");
    assert_eq!(sent.extra["workspace"], json!(repo.root));
    assert_eq!(sent.extra["timeout_secs"], 600);
    assert!(matches!(
        drain(&mut rx).as_slice(),
        [AgentEvent::PermissionWaiting { request_id, to }]
            if *request_id == request.request_id && to == "lead"
    ));
    assert_eq!(
        boxes.cursor(&name("alice")).unwrap(),
        cursor_before,
        "the agent's cursor is not moved"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_request_denies_with_the_persons_note() {
    let repo = Repo::new();
    let boxes = Workspace::new(&repo.root).mailboxes();
    let prompter = alices_prompter(&boxes);
    let (got, _) = tokio::join!(
        prompter.ask(ask(&repo)),
        answer(&boxes, false, Some("not on a Friday"))
    );
    assert_eq!(got, PermissionAnswer::Deny("not on a Friday".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_in_time_is_a_denial() {
    let repo = Repo::new();
    let boxes = Workspace::new(&repo.root).mailboxes();
    let prompter = MailboxPrompter::new(
        boxes.clone(),
        roster(),
        name("alice"),
        name("lead"),
        Duration::from_secs(1),
    );
    let got = prompter.ask(ask(&repo)).await;
    let PermissionAnswer::Deny(reason) = got else {
        panic!("a timeout must deny, got {got:?}");
    };
    assert!(reason.contains("no answer"), "{reason}");
    let requests = boxes.requests(DEFAULT_TIMEOUT).unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].timeout_secs, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_loop_an_ask_waits_for_the_person_and_the_tool_then_runs() {
    let repo = Repo::new();
    let boxes = Workspace::new(&repo.root).mailboxes();
    let prompter = alices_prompter(&boxes);
    let pipeline = Pipeline::new(
        ToolRegistry::core_tools().unwrap(),
        policy(PermissionMode::Ask, &[], &[], &[]),
    )
    .with_prompter(Arc::new(prompter));
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_tools"))
        .pipeline(pipeline)
        .agent(&repo);
    let (result, _) = tokio::join!(
        agent.run_turn("say original".into(), CancellationToken::new()),
        answer(&boxes, true, None)
    );
    assert_completed(&result);
    assert!(result.permission_denials.is_empty());
    let (_, content, is_error) = agent.history()[2].tool_results()[0];
    assert!(!is_error && content.contains("original"), "{content}");
    let permission: Vec<String> = drain(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::PermissionAsked { tool, .. } => Some(format!("asked {tool}")),
            AgentEvent::PermissionAnswered { tool, allowed, .. } => {
                Some(format!("answered {tool} {allowed}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(permission, ["asked bash", "answered bash true"]);
}
