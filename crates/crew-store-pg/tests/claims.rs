//! Claims: never a double claim (tokio tasks and separate processes racing), never a blocked
//! task or one of another role, and leases that pass when the heartbeat stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crew_protocol::TaskId;
use crew_store::{Claimant, NewTask, Refusal, Status};
use crew_store_pg::{PgStore, PgStoreError};

use crate::common::{name, store};

const LONG: Duration = Duration::from_secs(600);

fn nothing_left(e: &PgStoreError) -> bool {
    matches!(e, PgStoreError::Refused(Refusal::NothingClaimable { .. }))
}

async fn add(
    store: &PgStore,
    subject: &str,
    blocked_by: Vec<TaskId>,
    role: Option<&str>,
) -> TaskId {
    store
        .create_task(NewTask {
            subject: subject.into(),
            description: String::new(),
            blocked_by,
            role: role.map(str::to_string),
        })
        .await
        .unwrap()
        .id
}

/// Claims until nothing is left; the ids it got.
async fn claim_all(store: &PgStore, who: &str) -> Vec<TaskId> {
    let who = name(who);
    let mut mine = Vec::new();
    loop {
        match store
            .claim_next(
                Claimant {
                    name: &who,
                    role: None,
                },
                LONG,
            )
            .await
        {
            Ok(task) => {
                assert_eq!(task.owner.as_ref(), Some(&who));
                assert_eq!(task.status, Status::InProgress);
                mine.push(task.id);
            }
            Err(e) if nothing_left(&e) => return mine,
            Err(e) => panic!("{who}: {e}"),
        }
    }
}

/// Every task claimed by exactly one claimer, the one the store names as owner.
async fn assert_each_claimed_once(store: &PgStore, claims: &[(String, Vec<TaskId>)], tasks: usize) {
    let mut by_task: HashMap<TaskId, Vec<&str>> = HashMap::new();
    for (who, ids) in claims {
        for id in ids {
            by_task.entry(*id).or_default().push(who);
        }
    }
    let all = store.tasks().await.unwrap();
    assert_eq!(all.len(), tasks);
    for task in &all {
        let claimers = by_task.get(&task.id).cloned().unwrap_or_default();
        assert_eq!(claimers.len(), 1, "{} claimed by {claimers:?}", task.id);
        assert_eq!(task.owner.as_ref().map(|o| o.as_str()), Some(claimers[0]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_claimers_never_claim_a_task_twice() {
    let Some((_cluster, store)) = store(16).await else {
        return;
    };
    for i in 0..400 {
        add(&store, &format!("task {i}"), vec![], None).await;
    }
    let runs: Vec<_> = (0..16)
        .map(|k| {
            let store = store.clone();
            tokio::spawn(async move {
                let who = format!("w{k}");
                let ids = claim_all(&store, &who).await;
                (who, ids)
            })
        })
        .collect();
    let mut claims = Vec::new();
    for run in runs {
        claims.push(run.await.unwrap());
    }
    assert_each_claimed_once(&store, &claims, 400).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_takes_the_assigned_then_oldest_ready_task_of_a_fitting_role() {
    let Some((_cluster, store)) = store(2).await else {
        return;
    };
    let first = add(&store, "first", vec![], None).await;
    let after_first = add(&store, "after first", vec![first], None).await;
    let review = add(&store, "review", vec![], Some("reviewer")).await;
    let w1 = name("w1");
    let dev = Claimant {
        name: &w1,
        role: None,
    };
    assert_eq!(store.claim_next(dev, LONG).await.unwrap().id, first);
    // `after first` waits for its blocker; `review` is for reviewers only.
    let err = store.claim_next(dev, LONG).await.unwrap_err();
    assert!(nothing_left(&err), "{err}");
    let r = name("r");
    let reviewer = Claimant {
        name: &r,
        role: Some("reviewer"),
    };
    assert_eq!(store.claim_next(reviewer, LONG).await.unwrap().id, review);
    store
        .complete(first, &w1, Some("done".into()))
        .await
        .unwrap();
    let next = store.claim_next(dev, LONG).await.unwrap();
    assert_eq!((next.id, next.blocked_by), (after_first, vec![first]));
    // Only the owner finishes a task.
    let err = store.complete(review, &w1, None).await.unwrap_err();
    assert!(
        matches!(err, PgStoreError::Refused(Refusal::NotOwner { .. })),
        "{err}"
    );
    // A blocker that does not exist is refused at creation.
    let err = store
        .create_task(NewTask {
            subject: "x".into(),
            blocked_by: vec![TaskId(999)],
            ..NewTask::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, PgStoreError::Refused(Refusal::UnknownBlocker { .. })),
        "{err}"
    );
}

/// Chains of tasks, each blocked by the one before; racing claimers that finish what they
/// claim. Every claim must come after its blocker's completion began.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_claimers_never_claim_a_task_before_its_blockers_complete() {
    let Some((_cluster, store)) = store(8).await else {
        return;
    };
    let mut blocker_of: HashMap<TaskId, TaskId> = HashMap::new();
    for chain in 0..10 {
        let mut previous = None;
        for step in 0..10 {
            let id = add(
                &store,
                &format!("chain {chain} step {step}"),
                previous.into_iter().collect(),
                None,
            )
            .await;
            if let Some(p) = previous {
                blocker_of.insert(id, p);
            }
            previous = Some(id);
        }
    }
    // "completing N" is logged before the completion commits, "claimed N" after the claim
    // returns: a claim that saw its blocker unfinished would log before the blocker's line.
    let log: Arc<Mutex<Vec<(bool, TaskId)>>> = Arc::default();
    let runs: Vec<_> = (0..8)
        .map(|k| {
            let (store, log) = (store.clone(), log.clone());
            tokio::spawn(async move {
                let who = name(&format!("w{k}"));
                loop {
                    match store
                        .claim_next(
                            Claimant {
                                name: &who,
                                role: None,
                            },
                            LONG,
                        )
                        .await
                    {
                        Ok(task) => {
                            log.lock().unwrap().push((false, task.id));
                            log.lock().unwrap().push((true, task.id));
                            store.complete(task.id, &who, None).await.unwrap();
                        }
                        Err(e) if nothing_left(&e) => {
                            let tasks = store.tasks().await.unwrap();
                            if tasks.iter().all(|t| t.status == Status::Completed) {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for run in runs {
        run.await.unwrap();
    }
    let log = log.lock().unwrap().clone();
    for (at, (completing, id)) in log.iter().enumerate() {
        if *completing {
            continue;
        }
        if let Some(blocker) = blocker_of.get(id) {
            let began = log[..at].iter().any(|(c, b)| *c && b == blocker);
            assert!(began, "{id} claimed before its blocker {blocker} completed");
        }
    }
    assert!(
        store
            .tasks()
            .await
            .unwrap()
            .iter()
            .all(|t| t.status == Status::Completed)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_renewed_holds_and_a_lapsed_one_returns_the_task_to_the_queue() {
    let Some((_cluster, store)) = store(2).await else {
        return;
    };
    let id = add(&store, "leased", vec![], None).await;
    let (w1, w2) = (name("w1"), name("w2"));
    let one = Claimant {
        name: &w1,
        role: None,
    };
    let two = Claimant {
        name: &w2,
        role: None,
    };
    let short = Duration::from_millis(1);
    let pass = || tokio::time::sleep(Duration::from_millis(30));

    store.claim_next(one, short).await.unwrap();
    pass().await;
    // The heartbeat comes before anyone else claims: the lease is w1's again, for long.
    assert_eq!(store.heartbeat(&w1, LONG).await.unwrap(), 1);
    assert!(nothing_left(
        &store.claim_next(two, LONG).await.unwrap_err()
    ));

    // The heartbeats stop (a host cut off): once the lease passes, w2 gets the task.
    store.heartbeat(&w1, short).await.unwrap();
    pass().await;
    let taken = store.claim_next(two, LONG).await.unwrap();
    assert_eq!((taken.id, taken.owner.as_ref()), (id, Some(&w2)));
    assert!(
        taken
            .notes
            .iter()
            .any(|n| n.contains("lease of w1 expired")),
        "{:?}",
        taken.notes
    );
    // w1 comes back: it holds nothing, and cannot finish w2's task.
    assert_eq!(store.heartbeat(&w1, LONG).await.unwrap(), 0);
    let err = store.complete(id, &w1, None).await.unwrap_err();
    assert!(
        matches!(err, PgStoreError::Refused(Refusal::NotOwner { .. })),
        "{err}"
    );
    store.complete(id, &w2, None).await.unwrap();

    // `release_expired` puts a lapsed task back, unowned, for the screen to show.
    let other = add(&store, "released", vec![], None).await;
    store.claim_next(one, short).await.unwrap();
    pass().await;
    assert_eq!(store.release_expired().await.unwrap(), vec![other]);
    let back = store.task(other).await.unwrap();
    assert_eq!((back.status, back.owner), (Status::Pending, None));
}

/// Set by `separate_processes_never_claim_a_task_twice` for the copies of this binary it starts.
const CHILD_URL: &str = "CREW_PG_TEST_CLAIMER_URL";

/// In a child process only: claims until nothing is left, prints what it got.
#[tokio::test(flavor = "multi_thread")]
async fn child_claimer() {
    let Ok(url) = std::env::var(CHILD_URL) else {
        return;
    };
    let who = std::env::var("CREW_PG_TEST_CLAIMER_NAME").unwrap();
    let store = PgStore::connect(&url, 2).unwrap();
    let ids = claim_all(&store, &who).await;
    let ids: Vec<u64> = ids.iter().map(|id| id.0).collect();
    println!("CLAIMED {}", serde_json::to_string(&ids).unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn separate_processes_never_claim_a_task_twice() {
    let Some((cluster, store)) = store(2).await else {
        return;
    };
    for i in 0..300 {
        add(&store, &format!("task {i}"), vec![], None).await;
    }
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|k| {
            std::process::Command::new(&exe)
                .args([
                    "claims::child_claimer",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_URL, cluster.url())
                .env("CREW_PG_TEST_CLAIMER_NAME", format!("p{k}"))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut claims = Vec::new();
    for (k, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "child p{k} failed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.split_once("CLAIMED ").map(|(_, ids)| ids))
            .unwrap_or_else(|| panic!("p{k} printed no claims: {stdout}"));
        let ids: Vec<u64> = serde_json::from_str(line).unwrap();
        claims.push((format!("p{k}"), ids.into_iter().map(TaskId).collect()));
    }
    assert_each_claimed_once(&store, &claims, 300).await;
}

/// More callers than pooled connections, each refused (a finish of a task another holds, a
/// merge of a task not in review): the refusal reads the task on the connection the operation
/// already holds. Found by `crew-bench hosts`: a host of 16 workers on 8 connections hung for
/// good, each worker holding one connection and waiting for a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refusals_never_wait_for_a_second_connection_while_holding_one() {
    let Some((_cluster, store)) = store(1).await else {
        return;
    };
    let mut ids = Vec::new();
    for k in 0..8 {
        ids.push(add(&store, &format!("t{k}"), vec![], None).await);
        store
            .claim_next(
                Claimant {
                    name: &name("owner"),
                    role: None,
                },
                LONG,
            )
            .await
            .unwrap();
    }
    let refusals = ids.iter().map(|&id| {
        let store = store.clone();
        tokio::spawn(async move {
            let finish = store.complete(id, &name("other"), None).await;
            let merge = store.mark_merged(id, &name("user"), "ff").await;
            (finish, merge)
        })
    });
    let all = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(refusals))
        .await
        .expect("refusals hung: an operation waited for a second connection");
    for joined in all {
        let (finish, merge) = joined.unwrap();
        assert!(
            matches!(finish, Err(PgStoreError::Refused(Refusal::NotOwner { .. }))),
            "{finish:?}"
        );
        assert!(
            matches!(
                merge,
                Err(PgStoreError::Refused(Refusal::NotInReview { .. }))
            ),
            "{merge:?}"
        );
    }
}

/// A caller that finds every pooled connection held for good is told so after the pool's wait
/// (30 s), not left hanging: the fault is named, and nothing is retried.
#[tokio::test]
async fn an_exhausted_pool_is_an_error_naming_it_not_a_hang() {
    let Some((_cluster, store)) = store(1).await else {
        return;
    };
    let held = store.client().await.unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(120), store.tasks())
        .await
        .expect("hung on an exhausted pool");
    assert!(
        matches!(waited, Err(PgStoreError::PoolExhausted { secs: 30 })),
        "{waited:?}"
    );
    drop(held);
    assert!(store.tasks().await.unwrap().is_empty());
}
