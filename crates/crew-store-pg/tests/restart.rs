//! Chaos: the server restarts while claimers claim and finish tasks and senders append; every
//! operation reconnects with backoff, and afterwards no task was claimed twice, none is left
//! undone, no message is lost or doubled, each sender's order kept.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crew_protocol::TaskId;
use crew_store::{Claimant, Draft, NewTask, Refusal, Status};
use crew_store_pg::PgStoreError;
use crew_test_support::wait::{BUDGET, eventually};

use crate::common::{name, store};

const TASKS: usize = 300;
const CLAIMERS: usize = 6;
const SENDERS: usize = 4;
const EACH: usize = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_restart_mid_run_loses_and_doubles_nothing() {
    let Some((cluster, store)) = store(16).await else {
        return;
    };
    for i in 0..TASKS {
        store
            .create_task(NewTask {
                subject: format!("task {i}"),
                ..NewTask::default()
            })
            .await
            .unwrap();
    }
    let progress = Arc::new(AtomicUsize::new(0));
    let claimers: Vec<_> = (0..CLAIMERS)
        .map(|k| {
            let (store, progress) = (store.clone(), progress.clone());
            tokio::spawn(async move {
                let who = name(&format!("w{k}"));
                let mut mine = Vec::new();
                loop {
                    match store
                        .claim_next(
                            Claimant {
                                name: &who,
                                role: None,
                            },
                            BUDGET,
                        )
                        .await
                    {
                        Ok(task) => {
                            store.complete(task.id, &who, None).await.unwrap();
                            mine.push(task.id);
                            progress.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(2)).await;
                        }
                        Err(PgStoreError::Refused(Refusal::NothingClaimable { .. })) => {
                            return (who, mine);
                        }
                        Err(e) => panic!("{who}: {e}"),
                    }
                }
            })
        })
        .collect();
    let senders: Vec<_> = (0..SENDERS)
        .map(|k| {
            let (store, progress) = (store.clone(), progress.clone());
            tokio::spawn(async move {
                for i in 0..EACH {
                    store
                        .send(Draft {
                            text: Some(i.to_string()),
                            ..Draft::new(name(&format!("s{k}")), name("lead"))
                        })
                        .await
                        .unwrap();
                    progress.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
            })
        })
        .collect();

    // Mid-run: some work done, most still to do.
    eventually(
        "some claims and messages before the restart",
        BUDGET,
        || (progress.load(Ordering::Relaxed) >= 40).then_some(()),
    );
    let before = progress.load(Ordering::Relaxed);
    cluster.restart();
    let total = TASKS + SENDERS * EACH;
    assert!(
        before < total,
        "the run ended before the restart: make it longer"
    );

    let mut by_task: HashMap<TaskId, Vec<String>> = HashMap::new();
    for c in claimers {
        let (who, mine) = c.await.unwrap();
        for id in mine {
            by_task.entry(id).or_default().push(who.to_string());
        }
    }
    for s in senders {
        s.await.unwrap();
    }
    let tasks = store.tasks().await.unwrap();
    assert_eq!(tasks.len(), TASKS);
    for t in &tasks {
        let claimers = by_task.get(&t.id).cloned().unwrap_or_default();
        assert_eq!(claimers.len(), 1, "{} claimed by {claimers:?}", t.id);
        assert_eq!(t.status, Status::Completed);
        assert_eq!(
            t.owner.as_ref().map(|o| o.to_string()).as_ref(),
            claimers.first()
        );
    }
    let inbox = store.inbox(&name("lead")).await.unwrap();
    let ids: HashSet<&str> = inbox.iter().map(|m| m.id.as_str()).collect();
    assert_eq!((inbox.len(), ids.len()), (SENDERS * EACH, SENDERS * EACH));
    let mut next: HashMap<String, usize> = HashMap::new();
    for m in &inbox {
        let expected = next.entry(m.from.to_string()).or_default();
        assert_eq!(
            m.text.as_deref(),
            Some(expected.to_string().as_str()),
            "{}",
            m.from
        );
        *expected += 1;
    }
    assert!(
        cluster.log_text().contains("database system is shut down"),
        "the server did not restart:\n{}",
        cluster.log_text()
    );
}
