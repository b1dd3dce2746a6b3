//! The store's conformance suite: the same test bodies, generic over crew-store's `TeamStore`,
//! run against both backends. `NAME::file` runs the body on a `FileStore` in a scratch folder,
//! `NAME::postgres` on a `PgStore` on a fresh cluster (it skips, saying why, without the server
//! binaries). A body that passes on one and fails on the other is a difference in meaning.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crew_protocol::{AgentName, MessageKind, TaskId, USER};
use crew_store::{
    Actor, AgentState, AgentStatus, BackendError, Claimant, Draft, FileStore, MemoryDraft,
    MemoryScope, MemoryType, NewTask, Refusal, RequestState, ReviewerVerdict, Roster, Status, Task,
    TaskCommits, TaskPatch, TeamStore, Workspace,
};
use crew_store_pg::PgStore;
use crew_test_support::postgres::PgCluster;

use crate::common::name;

/// Longer than any test: no lease lapses mid-test.
const LONG: Duration = Duration::from_secs(600);
const CLAIMERS: usize = 6;

/// The same team on both: on PostgreSQL as the person publishes it.
fn roster() -> Roster {
    let team = ["lead", "alice", "bob"]
        .into_iter()
        .map(str::to_string)
        .chain((0..CLAIMERS).map(|k| format!("w{k}")))
        .map(|n| name(&n));
    Roster::new(team)
}

fn file_store() -> (tempfile::TempDir, FileStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(Workspace::new(dir.path()), roster());
    (dir, store)
}

async fn pg_store() -> Option<(PgCluster, PgStore)> {
    let (cluster, store) = crate::common::store(16).await?;
    store
        .publish_team("[team]\n", &roster(), crew_store::Limits::default())
        .await
        .unwrap();
    Some((cluster, store.with_lease(LONG)))
}

/// Each body as two tests, `BODY::file` and `BODY::postgres`.
macro_rules! conformance {
    ($($body:ident),* $(,)?) => {$(
        mod $body {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn file() {
                let (_dir, store) = super::file_store();
                super::$body(store).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                let Some((_cluster, store)) = super::pg_store().await else {
                    return;
                };
                super::$body(store).await;
            }
        }
    )*};
}

conformance!(
    a_new_tasks_fields_are_checked_and_kept_alike,
    racing_claimers_never_claim_a_task_twice,
    a_blocked_task_is_claimed_only_once_every_blocker_is_completed,
    racing_claimers_never_claim_a_task_before_its_blockers_complete,
    complete_and_fail_keep_their_outcome_and_result_and_refuse_a_second_finish,
    a_task_in_review_keeps_its_commits_and_holds_its_dependents,
    each_senders_messages_reach_the_inbox_in_order_and_none_is_lost,
    unread_leaves_the_cursor_and_mark_read_moves_it_forward_only,
    a_request_goes_pending_then_approved_rejected_or_expired_and_is_answered_once,
    a_key_this_process_read_is_stored_redacted,
    an_agents_latest_status_replaces_the_one_before_and_reads_back_whole,
    a_review_keeps_the_verdict_and_ends_merged_sent_back_or_discarded,
    a_message_to_or_from_a_name_not_on_the_team_is_refused_naming_the_team,
    a_message_over_the_teams_limit_is_refused_naming_the_setting_and_stores_nothing,
    a_claim_by_id_takes_a_ready_task_and_refuses_an_owned_blocked_or_unfitting_one,
    release_gives_the_owners_task_back_and_refuses_anyone_else,
    release_orphaned_frees_a_gone_agents_claimed_and_assigned_tasks_with_a_note,
    assign_hands_a_task_out_and_back_with_a_note_and_only_the_lead_or_person_may,
    update_edits_within_the_rules_and_refuses_an_unknown_blocker_or_a_cycle,
    a_task_with_nothing_to_review_completes_and_its_usage_adds_up,
    a_memory_is_kept_per_scope_read_own_first_replaced_by_name_and_forgotten,
    a_memory_beyond_the_teams_limits_is_refused_and_a_full_scope_takes_no_new_one,
    racing_writers_never_fill_the_teams_memory_past_its_limit,
    a_conversation_grows_is_kept_anew_from_a_position_and_names_the_agents_latest,
);

fn refusal<E: BackendError>(result: Result<impl std::fmt::Debug, E>) -> Refusal {
    match result {
        Err(e) => e
            .refusal()
            .cloned()
            .unwrap_or_else(|| panic!("not a refusal: {e}")),
        Ok(v) => panic!("not refused: {v:?}"),
    }
}

fn nothing_left<E: BackendError>(e: &E) -> bool {
    matches!(e.refusal(), Some(Refusal::NothingClaimable { .. }))
}

fn claimant(who: &AgentName) -> Claimant<'_> {
    Claimant {
        name: who,
        role: None,
    }
}

/// A teammate that does not write: it completes its own tasks.
fn reader(who: &AgentName) -> Actor<'_> {
    Actor::Teammate {
        name: who,
        writes: false,
    }
}

async fn add<S: TeamStore>(store: &S, subject: &str, blocked_by: Vec<TaskId>) -> TaskId {
    store
        .create_task(NewTask {
            subject: subject.into(),
            blocked_by,
            ..NewTask::default()
        })
        .await
        .unwrap()
        .id
}

/// A task only a reviewer may take.
async fn add_for_reviewers<S: TeamStore>(store: &S) -> TaskId {
    let new = NewTask {
        subject: "review it".into(),
        role: Some("reviewer".into()),
        ..NewTask::default()
    };
    store.create_task(new).await.unwrap().id
}

async fn claim<S: TeamStore>(store: &S, who: &AgentName) -> Result<TaskId, S::Error> {
    store.claim_next(claimant(who)).await.map(|t| t.id)
}

/// A new task's subject is kept trimmed and must be one line and not empty, its description
/// within the limits, its role a name; what passes is read back as it was given.
async fn a_new_tasks_fields_are_checked_and_kept_alike<S: TeamStore>(store: S) {
    let create = |subject: &str, description: String, role: Option<&str>| {
        store.create_task(NewTask {
            subject: subject.into(),
            description,
            role: role.map(str::to_string),
            blocked_by: vec![],
        })
    };
    let made = create("  spaced out \t", "why".into(), Some("reviewer"))
        .await
        .unwrap();
    let read = store.task(made.id).await.unwrap();
    for task in [&made, &read] {
        assert_eq!(
            (
                task.subject.as_str(),
                task.description.as_str(),
                task.role.as_deref(),
                task.status,
                task.owner.as_ref()
            ),
            ("spaced out", "why", Some("reviewer"), Status::Pending, None)
        );
    }
    let empty = create("   ", String::new(), None).await;
    assert!(
        empty.as_ref().is_err_and(|e| e.refusal().is_none()),
        "{empty:?}"
    );
    assert!(matches!(
        refusal(create("two\nlines", String::new(), None).await),
        Refusal::NotOneLine { .. }
    ));
    assert!(matches!(
        refusal(create("big", "x".repeat(64 * 1024 + 1), None).await),
        Refusal::TooLarge { .. }
    ));
    let role = create("odd role", String::new(), Some("Not A Name")).await;
    assert!(role.is_err(), "{role:?}");
    assert_eq!(store.tasks().await.unwrap().len(), 1, "only the good one");
}

/// Claimers racing for the same tasks (tokio tasks on four threads, each claim a separate
/// operation on the store) claim every task exactly once, and the store names the claimer
/// that got it as its owner.
async fn racing_claimers_never_claim_a_task_twice<S: TeamStore + Clone + 'static>(store: S) {
    const TASKS: usize = 60;
    for i in 0..TASKS {
        add(&store, &format!("task {i}"), vec![]).await;
    }
    let runs: Vec<_> = (0..CLAIMERS)
        .map(|k| {
            let store = store.clone();
            tokio::spawn(async move {
                let who = name(&format!("w{k}"));
                let mut mine = Vec::new();
                loop {
                    match store.claim_next(claimant(&who)).await {
                        Ok(task) => {
                            assert_eq!(
                                (task.status, task.owner.as_ref()),
                                (Status::InProgress, Some(&who))
                            );
                            mine.push(task.id);
                        }
                        Err(e) if nothing_left(&e) => return (who, mine),
                        Err(e) => panic!("{who}: {e}"),
                    }
                }
            })
        })
        .collect();
    let mut claimer_of: HashMap<TaskId, Vec<AgentName>> = HashMap::new();
    for run in runs {
        let (who, ids) = run.await.unwrap();
        for id in ids {
            claimer_of.entry(id).or_default().push(who.clone());
        }
    }
    let all = store.tasks().await.unwrap();
    assert_eq!(all.len(), TASKS);
    for task in all {
        let claimers = claimer_of.remove(&task.id).unwrap_or_default();
        assert_eq!(claimers.len(), 1, "{} claimed by {claimers:?}", task.id);
        assert_eq!(task.owner.as_ref(), Some(&claimers[0]));
    }
}

/// A task waits until every blocker is completed: one completed of two is not enough, a
/// failed one never is. Blockers are kept once each; an unknown one is refused.
async fn a_blocked_task_is_claimed_only_once_every_blocker_is_completed<S: TeamStore>(store: S) {
    let a = add(&store, "a", vec![]).await;
    let b = add(&store, "b", vec![]).await;
    let doomed = add(&store, "doomed", vec![]).await;
    let after_both = add(&store, "after a and b", vec![a, b, a]).await;
    let after_doomed = add(&store, "after doomed", vec![doomed]).await;
    assert_eq!(
        store.task(after_both).await.unwrap().blocked_by,
        vec![a, b],
        "each blocker once"
    );
    let unknown = store
        .create_task(NewTask {
            subject: "after nothing".into(),
            blocked_by: vec![TaskId(999)],
            ..NewTask::default()
        })
        .await;
    assert!(matches!(
        refusal(unknown),
        Refusal::UnknownBlocker {
            unknown: TaskId(999),
            ..
        }
    ));

    let [w0, w1, w2, w3] = ["w0", "w1", "w2", "w3"].map(name);
    // Oldest ready first; the blocked ones are passed over.
    assert_eq!(claim(&store, &w0).await.unwrap(), a);
    assert_eq!(claim(&store, &w1).await.unwrap(), b);
    assert_eq!(claim(&store, &w2).await.unwrap(), doomed);
    assert!(nothing_left(&claim(&store, &w3).await.unwrap_err()));

    store.complete(a, reader(&w0), None).await.unwrap();
    assert!(nothing_left(&claim(&store, &w3).await.unwrap_err()));
    store
        .fail(doomed, &w2, "cannot be done".into())
        .await
        .unwrap();
    assert!(nothing_left(&claim(&store, &w3).await.unwrap_err()));

    store.complete(b, reader(&w1), None).await.unwrap();
    let next = store.claim_next(claimant(&w3)).await.unwrap();
    assert_eq!(
        (next.id, next.status, next.owner.as_ref()),
        (after_both, Status::InProgress, Some(&w3))
    );
    // `after doomed` waits for ever: its blocker failed.
    assert!(nothing_left(&claim(&store, &w0).await.unwrap_err()));
    assert_eq!(
        store.task(after_doomed).await.unwrap().status,
        Status::Pending
    );
}

/// Chains of tasks, each blocked by the one before, and claimers racing through them, each
/// completing what it claims. A claim is logged after it returns, a completion before it
/// starts: a claim that came before its blocker's completion began would show in the log.
async fn racing_claimers_never_claim_a_task_before_its_blockers_complete<
    S: TeamStore + Clone + 'static,
>(
    store: S,
) {
    let mut blocker_of: HashMap<TaskId, TaskId> = HashMap::new();
    for chain in 0..4 {
        let mut previous: Option<TaskId> = None;
        for step in 0..6 {
            let blockers = previous.into_iter().collect();
            let id = add(&store, &format!("chain {chain} step {step}"), blockers).await;
            if let Some(p) = previous {
                blocker_of.insert(id, p);
            }
            previous = Some(id);
        }
    }
    // (completing, id): false when claimed, true when its completion begins.
    let log: Arc<Mutex<Vec<(bool, TaskId)>>> = Arc::default();
    let runs: Vec<_> = (0..4)
        .map(|k| {
            let (store, log) = (store.clone(), log.clone());
            tokio::spawn(async move {
                let who = name(&format!("w{k}"));
                loop {
                    match store.claim_next(claimant(&who)).await {
                        Ok(task) => {
                            log.lock().unwrap().push((false, task.id));
                            log.lock().unwrap().push((true, task.id));
                            store.complete(task.id, reader(&who), None).await.unwrap();
                        }
                        Err(e) if nothing_left(&e) => {
                            let tasks = store.tasks().await.unwrap();
                            if tasks.iter().all(|t| t.status == Status::Completed) {
                                return;
                            }
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        Err(e) => panic!("{who}: {e}"),
                    }
                }
            })
        })
        .collect();
    for run in runs {
        run.await.unwrap();
    }
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 2 * 24, "every task claimed once and completed");
    for (at, (completing, id)) in log.iter().enumerate() {
        if let (false, Some(blocker)) = (completing, blocker_of.get(id)) {
            let began = log[..at].iter().any(|(c, b)| *c && b == blocker);
            assert!(began, "{id} claimed before its blocker {blocker} completed");
        }
    }
}

/// Only the owner finishes its in-progress task, once: a second completion or failure is
/// refused as not in progress. A failure keeps its reason as the result; a writing
/// teammate's own completion is refused (review completes it) and leaves the task as it was.
async fn complete_and_fail_keep_their_outcome_and_result_and_refuse_a_second_finish<
    S: TeamStore,
>(
    store: S,
) {
    let done = add(&store, "to complete", vec![]).await;
    let broken = add(&store, "to fail", vec![]).await;
    let written = add(&store, "a writer's", vec![]).await;
    let untouched = add(&store, "nobody's", vec![]).await;
    let (w0, w1) = (name("w0"), name("w1"));
    assert_eq!(claim(&store, &w0).await.unwrap(), done);

    assert!(matches!(
        refusal(store.complete(done, reader(&w1), None).await),
        Refusal::NotOwner { .. }
    ));
    assert!(matches!(
        refusal(store.complete(untouched, reader(&w0), None).await),
        Refusal::NotInProgress { .. }
    ));
    let completed = store
        .complete(done, reader(&w0), Some("done".into()))
        .await
        .unwrap();
    assert_eq!(
        (completed.status, completed.result.as_deref()),
        (Status::Completed, Some("done"))
    );
    assert!(matches!(
        refusal(
            store
                .complete(done, reader(&w0), Some("again".into()))
                .await
        ),
        Refusal::NotInProgress { .. }
    ));
    assert!(matches!(
        refusal(store.fail(done, &w0, "too late".into()).await),
        Refusal::NotInProgress { .. }
    ));

    assert_eq!(claim(&store, &w0).await.unwrap(), broken);
    let failed = store.fail(broken, &w0, "broke".into()).await.unwrap();
    assert_eq!(
        (failed.status, failed.result.as_deref()),
        (Status::Failed, Some("broke"))
    );
    assert!(matches!(
        refusal(store.fail(broken, &w0, "again".into()).await),
        Refusal::NotInProgress { .. }
    ));

    assert_eq!(claim(&store, &w1).await.unwrap(), written);
    let writer = Actor::Teammate {
        name: &w1,
        writes: true,
    };
    assert!(matches!(
        refusal(store.complete(written, writer, Some("mine".into())).await),
        Refusal::NeedsReview { .. }
    ));
    let still = store.task(written).await.unwrap();
    assert_eq!(
        (still.status, still.owner.as_ref(), still.result),
        (Status::InProgress, Some(&w1), None)
    );

    // What was written is what is read back, whole list and one by one.
    let all = store.tasks().await.unwrap();
    let outcomes: Vec<(TaskId, Status, Option<&str>)> = all
        .iter()
        .map(|t| (t.id, t.status, t.result.as_deref()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (done, Status::Completed, Some("done")),
            (broken, Status::Failed, Some("broke")),
            (written, Status::InProgress, None),
            (untouched, Status::Pending, None),
        ]
    );
    let missing = store.task(TaskId(999)).await.unwrap_err();
    assert_eq!(missing.no_such_task(), Some(TaskId(999)), "{missing}");
}

/// A task submitted for review keeps its owner, result and commits, is claimable by no one,
/// and holds its dependents (review is not completion); only an in-progress task is
/// submitted, by its owner.
async fn a_task_in_review_keeps_its_commits_and_holds_its_dependents<S: TeamStore>(store: S) {
    let code = add(&store, "code", vec![]).await;
    let docs = add(&store, "docs", vec![code]).await;
    let (w0, w1) = (name("w0"), name("w1"));
    assert_eq!(claim(&store, &w0).await.unwrap(), code);
    let commits = TaskCommits {
        branch: "crew/w0".into(),
        start: "a0".repeat(20),
        head: "b1".repeat(20),
    };
    assert!(matches!(
        refusal(
            store
                .submit_for_review(code, &w1, "not mine".into(), commits.clone())
                .await
        ),
        Refusal::NotOwner { .. }
    ));
    assert!(matches!(
        refusal(
            store
                .submit_for_review(docs, &w0, "not started".into(), commits.clone())
                .await
        ),
        Refusal::NotInProgress { .. }
    ));
    let submitted = store
        .submit_for_review(code, &w0, "did it".into(), commits.clone())
        .await
        .unwrap();
    let read = store.task(code).await.unwrap();
    for task in [&submitted, &read] {
        assert_eq!(
            (
                task.status,
                task.owner.as_ref(),
                task.result.as_deref(),
                task.commits.as_deref()
            ),
            (Status::Review, Some(&w0), Some("did it"), Some(&commits))
        );
    }
    // Neither the task in review nor what waits for its merge is claimable.
    assert!(nothing_left(&claim(&store, &w1).await.unwrap_err()));
    assert!(nothing_left(&claim(&store, &w0).await.unwrap_err()));
    assert!(matches!(
        refusal(
            store
                .submit_for_review(code, &w0, "again".into(), commits)
                .await
        ),
        Refusal::NotInProgress { .. }
    ));
    assert!(matches!(
        refusal(store.complete(code, reader(&w0), None).await),
        Refusal::NotInProgress { .. }
    ));
    assert_eq!(store.task(docs).await.unwrap().status, Status::Pending);
}

/// Senders appending at once: the inbox holds every message once, each sender's in the order
/// it sent them, each read back as it was returned when sent. A kind crew does not know is
/// kept raw; an empty kind is a plain message; a kind that is no name is refused.
async fn each_senders_messages_reach_the_inbox_in_order_and_none_is_lost<
    S: TeamStore + Clone + 'static,
>(
    store: S,
) {
    const SENDERS: usize = 4;
    const EACH: usize = 40;
    let lead = name("lead");
    let runs: Vec<_> = (0..SENDERS)
        .map(|k| {
            let (store, lead) = (store.clone(), lead.clone());
            tokio::spawn(async move {
                let mut sent = Vec::new();
                for i in 0..EACH {
                    let draft = Draft {
                        text: Some(i.to_string()),
                        ..Draft::new(name(&format!("w{k}")), lead.clone())
                    };
                    sent.push(store.send(draft).await.unwrap());
                }
                sent
            })
        })
        .collect();
    let mut sent = HashMap::new();
    for run in runs {
        for m in run.await.unwrap() {
            sent.insert(m.id.clone(), m);
        }
    }
    store
        .send(Draft {
            text: Some("not for the lead".into()),
            ..Draft::new(USER, name("alice"))
        })
        .await
        .unwrap();

    let inbox = store.inbox(&lead).await.unwrap();
    assert_eq!(inbox.len(), SENDERS * EACH);
    let ids: HashSet<&str> = inbox.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), SENDERS * EACH, "a message doubled");
    let mut next: HashMap<&str, usize> = HashMap::new();
    for m in &inbox {
        assert_eq!(Some(m), sent.get(&m.id), "read back as sent");
        let expected = next.entry(m.from.as_str()).or_default();
        assert_eq!(m.text, Some(expected.to_string()), "{}'s order", m.from);
        *expected += 1;
    }

    let bob = name("bob");
    let odd = store
        .send(Draft {
            kind: MessageKind::Other("weird_kind".into()),
            ..Draft::new(USER, bob.clone())
        })
        .await
        .unwrap();
    let plain = store
        .send(Draft {
            kind: MessageKind::Other(String::new()),
            ..Draft::new(USER, bob.clone())
        })
        .await
        .unwrap();
    let bad = store
        .send(Draft {
            kind: MessageKind::Other("Not a name!".into()),
            ..Draft::new(USER, bob.clone())
        })
        .await;
    assert!(bad.is_err(), "{bad:?}");
    let kinds: Vec<MessageKind> = store
        .inbox(&bob)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.kind)
        .collect();
    assert_eq!(kinds, [odd.kind, plain.kind]);
    assert_eq!(kinds[0].as_str(), "weird_kind");
    assert_eq!(kinds[1], MessageKind::Message);
}

/// `unread` hands out what follows the owner's cursor without moving it (at most `limit`);
/// `mark_read` moves it, never back; each inbox has its own.
async fn unread_leaves_the_cursor_and_mark_read_moves_it_forward_only<S: TeamStore>(store: S) {
    let (alice, bob, lead) = (name("alice"), name("bob"), name("lead"));
    let send = |to: &AgentName, text: &str| {
        store.send(Draft {
            text: Some(text.into()),
            ..Draft::new(lead.clone(), to.clone())
        })
    };
    let texts = |batch: &[(S::Position, crew_store::Message)]| -> Vec<String> {
        batch
            .iter()
            .map(|(_, m)| m.text.clone().unwrap_or_default())
            .collect()
    };
    for text in ["m0", "m1", "m2"] {
        send(&alice, text).await.unwrap();
    }
    let first = store.unread(&alice, 10).await.unwrap();
    assert_eq!(texts(&first), ["m0", "m1", "m2"]);
    assert_eq!(
        texts(&store.unread(&alice, 10).await.unwrap()),
        ["m0", "m1", "m2"],
        "unread moves nothing"
    );
    store.mark_read(&alice, first[1].0).await.unwrap();
    assert_eq!(texts(&store.unread(&alice, 10).await.unwrap()), ["m2"]);
    store.mark_read(&alice, first[0].0).await.unwrap();
    assert_eq!(
        texts(&store.unread(&alice, 10).await.unwrap()),
        ["m2"],
        "never back"
    );

    send(&bob, "for bob").await.unwrap();
    for text in ["m3", "m4"] {
        send(&alice, text).await.unwrap();
    }
    let two = store.unread(&alice, 2).await.unwrap();
    assert_eq!(texts(&two), ["m2", "m3"]);
    store.mark_read(&alice, two[1].0).await.unwrap();
    let rest = store.unread(&alice, 10).await.unwrap();
    assert_eq!(texts(&rest), ["m4"]);
    store.mark_read(&alice, rest[0].0).await.unwrap();
    assert!(store.unread(&alice, 10).await.unwrap().is_empty());
    assert_eq!(store.inbox(&alice).await.unwrap().len(), 5, "all kept");
    assert_eq!(texts(&store.unread(&bob, 10).await.unwrap()), ["for bob"]);
}

async fn ask<S: TeamStore>(store: &S, kind: MessageKind, timeout_secs: Option<u64>) -> String {
    let extra = match timeout_secs {
        Some(secs) => serde_json::json!({ "timeout_secs": secs }),
        None => serde_json::json!({}),
    };
    let sent = store
        .send(Draft {
            kind,
            request: true,
            text: Some("may I?".into()),
            extra: extra.as_object().cloned().unwrap_or_default(),
            ..Draft::new(name("w0"), name("lead"))
        })
        .await
        .unwrap();
    assert!(sent.is_request());
    sent.request_id.unwrap().to_string()
}

/// A request is pending until answered, then approved or rejected, for good: a second answer
/// is refused. A permission request is the person's to answer; another its addressee's too.
/// Unanswered past its timeout it is expired and can no longer be answered.
async fn a_request_goes_pending_then_approved_rejected_or_expired_and_is_answered_once<
    S: TeamStore,
>(
    store: S,
) {
    const TIMEOUT: Duration = Duration::from_secs(600);
    let state = |id: String| {
        let store = &store;
        async move {
            let all = store.requests(TIMEOUT).await.unwrap();
            let found = all.into_iter().find(|r| r.request_id == id.as_str());
            found.unwrap()
        }
    };
    let (lead, w0) = (name("lead"), name("w0"));
    let permission = ask(&store, MessageKind::PermissionRequest, None).await;
    let plan = ask(&store, MessageKind::PlanApprovalRequest, None).await;
    assert_eq!(state(permission.clone()).await.state, RequestState::Pending);
    assert!(matches!(
        refusal(store.respond(&permission, &lead, true, None, TIMEOUT).await),
        Refusal::NotAddressee { .. }
    ));
    let yes = store
        .respond(&permission, &USER, true, Some("go".into()), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(
        (&yes.to, yes.approve, &yes.kind),
        (&w0, Some(true), &MessageKind::PermissionResponse)
    );
    let approved = state(permission.clone()).await;
    assert_eq!(
        (
            approved.state,
            approved.answered_by,
            approved.note.as_deref()
        ),
        (RequestState::Approved, Some(USER), Some("go"))
    );
    assert!(matches!(
        refusal(
            store
                .respond(&permission, &USER, false, None, TIMEOUT)
                .await
        ),
        Refusal::AlreadyAnswered { .. }
    ));

    store
        .respond(&plan, &lead, false, Some("smaller steps".into()), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(state(plan.clone()).await.state, RequestState::Rejected);
    // Both answers reached the asker, in the order given.
    let answers: Vec<Option<bool>> = store
        .inbox(&w0)
        .await
        .unwrap()
        .iter()
        .map(|m| m.approve)
        .collect();
    assert_eq!(answers, [Some(true), Some(false)]);

    let quick = ask(&store, MessageKind::PlanApprovalRequest, Some(0)).await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(state(quick.clone()).await.state, RequestState::Expired);
    assert!(matches!(
        refusal(store.respond(&quick, &lead, true, None, TIMEOUT).await),
        Refusal::Expired { .. }
    ));
    assert_eq!(state(quick).await.state, RequestState::Expired);
    assert!(matches!(
        refusal(store.respond("req_nope", &USER, true, None, TIMEOUT).await),
        Refusal::UnknownRequest(_)
    ));
    let all = store.requests(TIMEOUT).await.unwrap();
    assert_eq!(all.len(), 3, "answers are not requests");
}

/// A key this process read (`secrets::register`) never reaches the store: not in a task's
/// subject, description or result, not in a message's text or typed fields.
async fn a_key_this_process_read_is_stored_redacted<S: TeamStore>(store: S) {
    const KEY: &str = "sk-conformance-0123456789abcdef";
    crew_store::secrets::register(KEY);
    let id = store
        .create_task(NewTask {
            subject: format!("use {KEY}"),
            description: format!("the key is {KEY}"),
            ..NewTask::default()
        })
        .await
        .unwrap()
        .id;
    let w0 = name("w0");
    assert_eq!(claim(&store, &w0).await.unwrap(), id);
    store.fail(id, &w0, format!("leaked {KEY}")).await.unwrap();
    let task = store.task(id).await.unwrap();
    assert_eq!(
        (
            task.subject.as_str(),
            task.description.as_str(),
            task.result.as_deref()
        ),
        (
            "use [redacted]",
            "the key is [redacted]",
            Some("leaked [redacted]")
        )
    );

    let alice = name("alice");
    let extra = serde_json::json!({"input": {"command": format!("echo {KEY}")}});
    store
        .send(Draft {
            text: Some(format!("here: {KEY}")),
            extra: extra.as_object().cloned().unwrap_or_default(),
            ..Draft::new(USER, alice.clone())
        })
        .await
        .unwrap();
    let inbox = store.inbox(&alice).await.unwrap();
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].text.as_deref(), Some("here: [redacted]"));
    assert_eq!(inbox[0].extra["input"]["command"], "echo [redacted]");

    // A memory goes into its readers' later prompts: kept redacted too.
    let draft = MemoryDraft {
        name: "deploy".into(),
        kind: MemoryType::Reference,
        description: format!("deploy with {KEY}"),
        body: format!("export TOKEN={KEY}"),
        scope: MemoryScope::Team,
    };
    store.write_memory(&alice, &draft).await.unwrap();
    let kept = store.memory(&alice, None, "deploy").await.unwrap();
    assert_eq!(
        (kept.description.as_str(), kept.body.as_str()),
        ("deploy with [redacted]", "export TOKEN=[redacted]")
    );
}

async fn an_agents_latest_status_replaces_the_one_before_and_reads_back_whole<S: TeamStore>(
    store: S,
) {
    let (alice, bob) = (name("alice"), name("bob"));
    assert!(store.agent_status(&alice).await.unwrap().is_none());
    let mut working = AgentStatus::new(&alice, AgentState::Work);
    working.task = Some(TaskId(3));
    working.tokens = 1234;
    working.cost_micros = Some(56);
    working.note = Some("on task_3: ünïcode, \"quotes\"".into());
    store.write_status(&working).await.unwrap();
    store
        .write_status(&AgentStatus::new(&bob, AgentState::Idle))
        .await
        .unwrap();
    assert_eq!(
        store.agent_status(&alice).await.unwrap(),
        Some(working.clone())
    );
    // The next word replaces it, and leaves the other agent's alone.
    let mut done = working.clone();
    done.state = AgentState::Shutdown;
    done.task = None;
    done.note = Some("shutdown approved (req_1)".into());
    store.write_status(&done).await.unwrap();
    assert_eq!(store.agent_status(&alice).await.unwrap(), Some(done));
    assert_eq!(
        store.agent_status(&bob).await.unwrap().map(|s| s.state),
        Some(AgentState::Idle)
    );
}

/// A task's commits start where it first started on a branch; in review it takes a
/// reviewer's verdict; the person then merges it (completed, its dependents claimable), sends
/// it back (pending, to the same teammate, first start kept) or discards it (failed, with the
/// reason). Each ends the review: a second ending, or a verdict outside review, is refused.
async fn a_review_keeps_the_verdict_and_ends_merged_sent_back_or_discarded<S: TeamStore>(store: S) {
    let merged = add(&store, "merged", vec![]).await;
    let after = add(&store, "after the merge", vec![merged]).await;
    let back = add(&store, "sent back", vec![]).await;
    let dropped = add(&store, "discarded", vec![]).await;
    let (w0, w1) = (name("w0"), name("w1"));
    let (start, head) = ("a0".repeat(20), "b1".repeat(20));
    let verdict = ReviewerVerdict {
        by: name("bob"),
        verdict: "pass".into(),
        head: head.clone(),
        report: "tests pass on the merged code".into(),
    };
    for id in [merged, back, dropped] {
        assert_eq!(claim(&store, &w0).await.unwrap(), id);
        let started = store.record_start(id, "crew/w0", &start).await.unwrap();
        assert_eq!(started.commits.as_ref().unwrap().start, start);
        // Starting again on the same branch keeps the first start.
        let again = store.record_start(id, "crew/w0", &head).await.unwrap();
        assert_eq!(again.commits.as_ref().unwrap().start, start);
        assert!(matches!(
            refusal(store.record_verdict(id, verdict.clone()).await),
            Refusal::NotInReview { .. }
        ));
        let commits = TaskCommits {
            branch: "crew/w0".into(),
            start: start.clone(),
            head: head.clone(),
        };
        store
            .submit_for_review(id, &w0, format!("did {id}"), commits)
            .await
            .unwrap();
    }
    let judged = store.record_verdict(merged, verdict.clone()).await.unwrap();
    assert_eq!(judged.review.as_deref(), Some(&verdict));
    assert_eq!(
        store.task(merged).await.unwrap().review.as_deref(),
        Some(&verdict)
    );

    let done = store
        .mark_merged(merged, &USER, "fast-forward")
        .await
        .unwrap();
    assert_eq!(done.status, Status::Completed);
    assert!(
        done.notes
            .last()
            .unwrap()
            .ends_with(": merged by user (fast-forward)")
    );
    assert!(matches!(
        refusal(store.mark_merged(merged, &USER, "again").await),
        Refusal::NotInReview { .. }
    ));
    assert_eq!(claim(&store, &w1).await.unwrap(), after);

    let returned = store.send_back(back, &USER, "add a test").await.unwrap();
    assert_eq!(
        (returned.status, returned.owner.as_ref()),
        (Status::Pending, Some(&w0))
    );
    assert!(
        returned
            .notes
            .last()
            .unwrap()
            .ends_with(": sent back by user: add a test")
    );
    // Assigned to w0: another claimer does not get it, w0 does, and its start is kept.
    assert!(nothing_left(&claim(&store, &w1).await.unwrap_err()));
    assert_eq!(claim(&store, &w0).await.unwrap(), back);
    let restarted = store.record_start(back, "crew/w0", &head).await.unwrap();
    assert_eq!(restarted.commits.as_ref().unwrap().start, start);
    // On another branch (the task changed hands) it starts afresh.
    let moved = store.record_start(back, "crew/w1", &head).await.unwrap();
    assert_eq!(
        (
            moved.commits.as_ref().unwrap().branch.as_str(),
            moved.commits.as_ref().unwrap().start.as_str()
        ),
        ("crew/w1", head.as_str())
    );

    let failed = store
        .discard_review(dropped, &USER, "wrong approach")
        .await
        .unwrap();
    assert_eq!(
        (failed.status, failed.result.as_deref()),
        (Status::Failed, Some("discarded by user: wrong approach"))
    );
    assert!(matches!(
        refusal(store.send_back(dropped, &USER, "too late").await),
        Refusal::NotInReview { .. }
    ));
}

/// A misspelt name is a refusal that names which side and the valid names, never a new inbox;
/// the person is always on the team.
async fn a_message_to_or_from_a_name_not_on_the_team_is_refused_naming_the_team<S: TeamStore>(
    store: S,
) {
    let (lead, ghost, alice) = (name("lead"), name("alcie"), name("alice"));
    for (draft, side) in [
        (Draft::new(lead.clone(), ghost.clone()), "recipient"),
        (Draft::new(ghost.clone(), lead.clone()), "sender"),
    ] {
        match refusal(store.send(draft).await) {
            Refusal::UnknownAgent { role, name, valid } => {
                assert_eq!((role, name.as_str()), (side, "alcie"));
                assert!(valid.contains(&alice) && valid.contains(&USER), "{valid:?}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(store.inbox(&ghost).await.unwrap().is_empty());
    store.send(Draft::new(USER, lead.clone())).await.unwrap();
    store.send(Draft::new(lead.clone(), USER)).await.unwrap();
    assert_eq!(store.inbox(&lead).await.unwrap().len(), 1);
}

async fn a_message_over_the_teams_limit_is_refused_naming_the_setting_and_stores_nothing<
    S: TeamStore,
>(
    store: S,
) {
    let (alice, lead) = (name("alice"), name("lead"));
    let limit = crew_store::Limits::default().message_bytes;
    let draft = |bytes: usize| Draft {
        text: Some("x".repeat(bytes)),
        ..Draft::new(alice.clone(), lead.clone())
    };
    match refusal(store.send(draft(limit + 1)).await) {
        Refusal::TooLarge {
            setting,
            size,
            limit: said,
            ..
        } => assert_eq!((setting, size, said), ("message_bytes", limit + 1, limit)),
        other => panic!("{other:?}"),
    }
    assert!(store.inbox(&lead).await.unwrap().is_empty());
    store.send(draft(limit)).await.unwrap();
    assert_eq!(store.inbox(&lead).await.unwrap().len(), 1);
}

async fn a_claim_by_id_takes_a_ready_task_and_refuses_an_owned_blocked_or_unfitting_one<
    S: TeamStore,
>(
    store: S,
) {
    let (alice, bob) = (name("alice"), name("bob"));
    let first = add(&store, "schema", vec![]).await;
    let second = add(&store, "api", vec![first]).await;
    let review = add_for_reviewers(&store).await;
    match refusal(store.claim(second, claimant(&alice)).await) {
        Refusal::Blocked { id, by } => assert_eq!((id, by), (second, vec![first])),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        refusal(store.claim(review, claimant(&alice)).await),
        Refusal::RoleMismatch { .. }
    ));
    let got = store.claim(first, claimant(&alice)).await.unwrap();
    assert_eq!(
        (got.status, got.owner.as_ref()),
        (Status::InProgress, Some(&alice))
    );
    match refusal(store.claim(first, claimant(&bob)).await) {
        Refusal::AlreadyClaimed { id, owner } => assert_eq!((id, owner), (first, alice.clone())),
        other => panic!("{other:?}"),
    }
    store.complete(first, reader(&alice), None).await.unwrap();
    let got = store.claim(second, claimant(&bob)).await.unwrap();
    assert_eq!(got.owner.as_ref(), Some(&bob));
    let missing = store.claim(TaskId(99), claimant(&bob)).await.unwrap_err();
    assert_eq!(missing.no_such_task(), Some(TaskId(99)));
}

async fn release_gives_the_owners_task_back_and_refuses_anyone_else<S: TeamStore>(store: S) {
    let (alice, bob) = (name("alice"), name("bob"));
    let id = add(&store, "schema", vec![]).await;
    store.claim(id, claimant(&alice)).await.unwrap();
    assert!(matches!(
        refusal(store.release(id, &bob).await),
        Refusal::NotOwner { .. }
    ));
    let back = store.release(id, &alice).await.unwrap();
    assert_eq!((back.status, back.owner), (Status::Pending, None));
    assert!(matches!(
        refusal(store.release(id, &alice).await),
        Refusal::NotInProgress { .. }
    ));
    // Back in the queue: anyone may take it.
    assert_eq!(claim(&store, &bob).await.unwrap(), id);
}

async fn release_orphaned_frees_a_gone_agents_claimed_and_assigned_tasks_with_a_note<
    S: TeamStore,
>(
    store: S,
) {
    let (alice, bob) = (name("alice"), name("bob"));
    let claimed = add(&store, "claimed", vec![]).await;
    let assigned = add(&store, "assigned", vec![]).await;
    let bobs = add(&store, "bob's", vec![]).await;
    store.claim(claimed, claimant(&alice)).await.unwrap();
    store
        .assign(assigned, Some(claimant(&alice)), Actor::Person)
        .await
        .unwrap();
    store.claim(bobs, claimant(&bob)).await.unwrap();
    let freed = store
        .release_orphaned(&alice, "released: alice shut down (stopped)")
        .await
        .unwrap();
    assert_eq!(
        freed.iter().map(|t| t.id).collect::<Vec<_>>(),
        [claimed, assigned]
    );
    for task in &freed {
        assert_eq!((task.status, task.owner.as_ref()), (Status::Pending, None));
        let note = task.notes.last().unwrap();
        assert!(
            note.ends_with(": released: alice shut down (stopped)"),
            "{note}"
        );
    }
    assert_eq!(store.task(bobs).await.unwrap().owner.as_ref(), Some(&bob));
    assert!(
        store
            .release_orphaned(&alice, "again")
            .await
            .unwrap()
            .is_empty()
    );
}

async fn assign_hands_a_task_out_and_back_with_a_note_and_only_the_lead_or_person_may<
    S: TeamStore,
>(
    store: S,
) {
    let (alice, bob, lead) = (name("alice"), name("bob"), name("lead"));
    let id = add(&store, "schema", vec![]).await;
    match refusal(store.assign(id, Some(claimant(&bob)), reader(&alice)).await) {
        Refusal::NotAllowed { field, .. } => assert_eq!(field, "owner"),
        other => panic!("{other:?}"),
    }
    let given = store
        .assign(id, Some(claimant(&bob)), Actor::Lead(&lead))
        .await
        .unwrap();
    assert_eq!(
        (given.status, given.owner.as_ref()),
        (Status::Pending, Some(&bob))
    );
    assert!(
        given
            .notes
            .last()
            .unwrap()
            .ends_with(": assigned to bob by lead"),
        "{:?}",
        given.notes
    );
    // Only bob may take it now.
    assert!(nothing_left(&claim(&store, &alice).await.unwrap_err()));
    // The same again changes nothing.
    let same = store
        .assign(id, Some(claimant(&bob)), Actor::Lead(&lead))
        .await
        .unwrap();
    assert_eq!(same.notes.len(), given.notes.len());
    let back = store.assign(id, None, Actor::Person).await.unwrap();
    assert_eq!(back.owner, None);
    assert!(
        back.notes
            .last()
            .unwrap()
            .ends_with(": taken back from bob by user")
    );
    let review = add_for_reviewers(&store).await;
    assert!(matches!(
        refusal(
            store
                .assign(review, Some(claimant(&alice)), Actor::Person)
                .await
        ),
        Refusal::RoleMismatch { .. }
    ));
    store.claim(id, claimant(&alice)).await.unwrap();
    store.complete(id, reader(&alice), None).await.unwrap();
    assert!(matches!(
        refusal(store.assign(id, Some(claimant(&bob)), Actor::Person).await),
        Refusal::AlreadyCompleted { .. }
    ));
}

async fn update_edits_within_the_rules_and_refuses_an_unknown_blocker_or_a_cycle<S: TeamStore>(
    store: S,
) {
    let (alice, bob, lead) = (name("alice"), name("bob"), name("lead"));
    let first = add(&store, "schema", vec![]).await;
    let second = add(&store, "api", vec![]).await;
    let blockers = |ids: Vec<TaskId>| TaskPatch {
        blocked_by: Some(ids),
        ..TaskPatch::default()
    };
    let edited = store
        .update(second, blockers(vec![first, first]), Actor::Lead(&lead))
        .await
        .unwrap();
    assert_eq!(edited.blocked_by, [first]);
    assert!(matches!(
        refusal(
            store
                .update(first, blockers(vec![second]), Actor::Lead(&lead))
                .await
        ),
        Refusal::WouldCycle { .. }
    ));
    match refusal(
        store
            .update(first, blockers(vec![TaskId(99)]), Actor::Person)
            .await,
    ) {
        Refusal::UnknownBlocker { id, unknown } => assert_eq!((id, unknown), (first, TaskId(99))),
        other => panic!("{other:?}"),
    }
    let subject = TaskPatch {
        subject: Some("  schema v2 ".into()),
        ..TaskPatch::default()
    };
    match refusal(store.update(first, subject.clone(), reader(&alice)).await) {
        Refusal::NotAllowed { field, .. } => assert_eq!(field, "subject"),
        other => panic!("{other:?}"),
    }
    let renamed = store.update(first, subject, Actor::Person).await.unwrap();
    assert_eq!(renamed.subject, "schema v2");
    // A teammate edits the description of its own task only.
    store.claim(first, claimant(&alice)).await.unwrap();
    let notes = TaskPatch {
        description: Some("my notes".into()),
        ..TaskPatch::default()
    };
    let mine = store
        .update(first, notes.clone(), reader(&alice))
        .await
        .unwrap();
    assert_eq!(mine.description, "my notes");
    match refusal(store.update(first, notes, reader(&bob)).await) {
        Refusal::NotAllowed { field, .. } => assert_eq!(field, "description"),
        other => panic!("{other:?}"),
    }
    // Fewer blockers: claimable at once.
    store
        .update(second, blockers(vec![]), Actor::Lead(&lead))
        .await
        .unwrap();
    assert_eq!(claim(&store, &bob).await.unwrap(), second);
}

async fn a_task_with_nothing_to_review_completes_and_its_usage_adds_up<S: TeamStore>(store: S) {
    let alice = name("alice");
    let id = add(&store, "check the docs", vec![]).await;
    store.claim(id, claimant(&alice)).await.unwrap();
    let usage = |t: Task| t.usage.map(|u| (u.tokens, u.cost_micros));
    assert_eq!(
        usage(store.add_usage(id, 100, Some(5)).await.unwrap()),
        Some((100, Some(5)))
    );
    assert_eq!(
        usage(store.add_usage(id, 50, Some(7)).await.unwrap()),
        Some((150, Some(12)))
    );
    // A job without a known price: the task's cost is unknown from then on.
    assert_eq!(
        usage(store.add_usage(id, 10, None).await.unwrap()),
        Some((160, None))
    );
    assert_eq!(
        usage(store.add_usage(id, 1, Some(1)).await.unwrap()),
        Some((161, None))
    );
    store
        .record_start(id, "crew/alice", &"a".repeat(40))
        .await
        .unwrap();
    let done = store
        .complete_with_nothing_to_review(id, &alice, Some("nothing to change".into()))
        .await
        .unwrap();
    assert_eq!(done.status, Status::Completed);
    assert_eq!(done.result.as_deref(), Some("nothing to change"));
    assert_eq!(usage(store.task(id).await.unwrap()), Some((161, None)));
    assert!(matches!(
        refusal(
            store
                .complete_with_nothing_to_review(id, &alice, None)
                .await
        ),
        Refusal::NotInProgress { .. }
    ));
}

fn memory(name: &str, scope: MemoryScope, body: &str) -> MemoryDraft {
    MemoryDraft {
        name: name.to_string(),
        kind: MemoryType::Feedback,
        description: format!("  when {name} matters  "),
        body: body.to_string(),
        scope,
    }
}

async fn a_memory_is_kept_per_scope_read_own_first_replaced_by_name_and_forgotten<S: TeamStore>(
    store: S,
) {
    let (alice, bob) = (name("alice"), name("bob"));
    let (own, team) = (MemoryScope::Agent, MemoryScope::Team);
    assert!(
        !store
            .write_memory(&alice, &memory("style", own, "v1"))
            .await
            .unwrap()
    );
    assert!(
        store
            .write_memory(&alice, &memory("style", own, "v2\n\n"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .write_memory(&alice, &memory("alpha", own, "a"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .write_memory(&alice, &memory("style", team, "shared"))
            .await
            .unwrap()
    );

    // Her own first; the team's when asked for, and for a teammate without one of its own.
    let mine = store.memory(&alice, None, "style").await.unwrap();
    assert_eq!(
        (
            mine.body.as_str(),
            mine.scope,
            mine.description.as_str(),
            mine.kind
        ),
        ("v2", own, "when style matters", MemoryType::Feedback)
    );
    assert!(mine.modified > std::time::SystemTime::UNIX_EPOCH);
    let shared = store.memory(&alice, Some(team), "style").await.unwrap();
    assert_eq!((shared.body.as_str(), shared.scope), ("shared", team));
    assert_eq!(
        store.memory(&bob, None, "style").await.unwrap().body,
        "shared"
    );
    assert!(store.memories(&bob, own).await.unwrap().is_empty());
    let names = |m: Vec<crew_store::Memory>| m.into_iter().map(|m| m.name).collect::<Vec<_>>();
    assert_eq!(
        names(store.memories(&alice, own).await.unwrap()),
        ["alpha", "style"]
    );
    assert_eq!(names(store.memories(&bob, team).await.unwrap()), ["style"]);

    store.forget_memory(&alice, own, "style").await.unwrap();
    assert_eq!(
        store.memory(&alice, None, "style").await.unwrap().body,
        "shared"
    );
    match refusal(store.forget_memory(&alice, own, "style").await) {
        Refusal::NoSuchMemory { name, scope } => {
            assert_eq!((name.as_str(), scope.as_str()), ("style", "alice's memory"))
        }
        other => panic!("{other:?}"),
    }
    match refusal(store.memory(&bob, None, "nope").await) {
        Refusal::NoSuchMemory { scope, .. } => {
            assert_eq!(scope, "bob's memory or the team's")
        }
        other => panic!("{other:?}"),
    }
}

async fn a_memory_beyond_the_teams_limits_is_refused_and_a_full_scope_takes_no_new_one<
    S: TeamStore,
>(
    store: S,
) {
    let alice = name("alice");
    let limits = crew_store::Limits::default();
    let own = MemoryScope::Agent;
    let described = |description: &str| MemoryDraft {
        description: description.to_string(),
        ..memory("note", own, "b")
    };
    for (description, what) in [
        ("two\nlines", "more than one line".to_string()),
        ("   ", "empty".to_string()),
        (
            &"d".repeat(limits.subject_chars + 1),
            format!("{} characters", limits.subject_chars + 1),
        ),
    ] {
        match refusal(store.write_memory(&alice, &described(description)).await) {
            Refusal::MemoryDescription { what: said, limit } => {
                assert_eq!((said, limit), (what, limits.subject_chars))
            }
            other => panic!("{other:?}"),
        }
    }
    let big = memory("big", own, &"x".repeat(limits.memory_bytes + 1));
    match refusal(store.write_memory(&alice, &big).await) {
        Refusal::TooLarge { setting, .. } => assert_eq!(setting, "memory_bytes"),
        other => panic!("{other:?}"),
    }
    assert!(
        store
            .write_memory(&alice, &memory("Bad Name", own, "b"))
            .await
            .is_err()
    );
    match refusal(
        store
            .write_memory(&name("mallory"), &memory("m", own, "b"))
            .await,
    ) {
        Refusal::UnknownAgent { name, .. } => assert_eq!(name, "mallory"),
        other => panic!("{other:?}"),
    }
    assert!(store.memories(&alice, own).await.unwrap().is_empty());

    for k in 0..limits.memories_per_scope {
        let draft = memory(&format!("m{k}"), own, "b");
        store.write_memory(&alice, &draft).await.unwrap();
    }
    match refusal(
        store
            .write_memory(&alice, &memory("one-more", own, "b"))
            .await,
    ) {
        Refusal::MemoriesFull { scope, count } => {
            assert_eq!(
                (scope.as_str(), count),
                ("alice's memory", limits.memories_per_scope)
            )
        }
        other => panic!("{other:?}"),
    }
    // A full scope still takes a new version of one it holds, and the team's is its own.
    assert!(
        store
            .write_memory(&alice, &memory("m0", own, "again"))
            .await
            .unwrap()
    );
    let team = memory("one-more", MemoryScope::Team, "b");
    assert!(!store.write_memory(&alice, &team).await.unwrap());
    assert_eq!(
        store.memories(&alice, own).await.unwrap().len(),
        limits.memories_per_scope
    );
}

/// Teammates on several hosts adding to the team's memory at once: exactly
/// `memories_per_scope` are kept, every other one refused as full, none lost or kept twice.
async fn racing_writers_never_fill_the_teams_memory_past_its_limit<
    S: TeamStore + Clone + 'static,
>(
    store: S,
) {
    let limit = crew_store::Limits::default().memories_per_scope;
    let each = limit / CLAIMERS + 10;
    let runs: Vec<_> = (0..CLAIMERS)
        .map(|k| {
            let store = store.clone();
            tokio::spawn(async move {
                let who = name(&format!("w{k}"));
                let mut kept = Vec::new();
                for i in 0..each {
                    let draft = memory(&format!("w{k}-{i}"), MemoryScope::Team, "b");
                    match store.write_memory(&who, &draft).await {
                        Ok(replaced) => {
                            assert!(!replaced);
                            kept.push(draft.name);
                        }
                        Err(e) => match e.refusal() {
                            Some(Refusal::MemoriesFull { .. }) => {}
                            _ => panic!("{who}: {e}"),
                        },
                    }
                }
                kept
            })
        })
        .collect();
    let mut kept = Vec::new();
    for run in runs {
        kept.extend(run.await.unwrap());
    }
    kept.sort();
    assert_eq!(kept.len(), limit);
    let stored: Vec<String> = store
        .memories(&name("lead"), MemoryScope::Team)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(stored, kept);
}

/// A message of the agent loop, as the store keeps it (JSON).
fn said(text: &str) -> serde_json::Value {
    serde_json::json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

async fn a_conversation_grows_is_kept_anew_from_a_position_and_names_the_agents_latest<
    S: TeamStore,
>(
    store: S,
) {
    let (alice, bob) = (name("alice"), name("bob"));
    assert!(
        store
            .conversation(&alice, "task_1")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.latest_conversation(&alice).await.unwrap(), None);

    store
        .keep_conversation(&alice, "task_1", 0, &[said("go"), said("one")])
        .await
        .unwrap();
    let two = [said("two")];
    store
        .keep_conversation(&alice, "task_1", 2, &two)
        .await
        .unwrap();
    // Kept again (a retry after a lost reply): the same history, nothing doubled.
    store
        .keep_conversation(&alice, "task_1", 2, &two)
        .await
        .unwrap();
    assert_eq!(
        store.conversation(&alice, "task_1").await.unwrap(),
        [said("go"), said("one"), said("two")]
    );
    assert_eq!(
        store.latest_conversation(&alice).await.unwrap().as_deref(),
        Some("task_1")
    );

    // Compacted: kept anew from position 1.
    store
        .keep_conversation(&alice, "task_1", 1, &[said("summary")])
        .await
        .unwrap();
    assert_eq!(
        store.conversation(&alice, "task_1").await.unwrap(),
        [said("go"), said("summary")]
    );
    // Past its end is refused, naming what it holds, and changes nothing.
    assert_eq!(
        refusal(store.keep_conversation(&alice, "task_1", 5, &two).await),
        Refusal::ConversationGap {
            agent: alice.clone(),
            key: "task_1".into(),
            held: 2,
            at: 5
        }
    );
    assert_eq!(store.conversation(&alice, "task_1").await.unwrap().len(), 2);

    // Another key becomes the latest; the first is kept; another agent's are its own.
    store
        .keep_conversation(&alice, "lead", 0, &[said("hi")])
        .await
        .unwrap();
    assert_eq!(
        store.latest_conversation(&alice).await.unwrap().as_deref(),
        Some("lead")
    );
    assert_eq!(store.conversation(&alice, "task_1").await.unwrap().len(), 2);
    assert!(store.conversation(&bob, "task_1").await.unwrap().is_empty());
    assert_eq!(store.latest_conversation(&bob).await.unwrap(), None);

    // A key that is not a name (a path on files) is refused.
    assert!(
        store
            .keep_conversation(&alice, "../lead", 0, &two)
            .await
            .is_err()
    );

    // A key this process read is kept redacted.
    const KEY: &str = "sk-conversation-0123456789abcdef";
    crew_store::secrets::register(KEY);
    store
        .keep_conversation(&alice, "task_2", 0, &[said(&format!("the key is {KEY}"))])
        .await
        .unwrap();
    assert_eq!(
        store.conversation(&alice, "task_2").await.unwrap(),
        [said("the key is [redacted]")]
    );
}
