//! Wake-ups through LISTEN/NOTIFY: a waiter sleeps until a task may be claimable or a message
//! arrived, and a listener that lost its server comes back and says so.

use std::time::Duration;

use crew_store::{Draft, NewTask};
use crew_store_pg::wakeups::Wake;
use crew_store_pg::{PgStore, Wakeups};
use crew_test_support::wait::BUDGET;

use crate::common::{name, store};

/// Waits for the next wake-up other than `Connected` (the first one, and any reconnect).
async fn next(wakeups: &mut Wakeups) -> Wake {
    loop {
        match wakeups.wait(BUDGET).await {
            Some(Wake::Connected) => {}
            Some(wake) => return wake,
            None => panic!("no wake-up within {BUDGET:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiter_wakes_for_a_new_task_a_finished_one_and_a_message() {
    let Some((cluster, store)) = store(2).await else {
        return;
    };
    let mut wakeups = Wakeups::listen(&store).await.unwrap();
    let task = store
        .create_task(NewTask {
            subject: "wake".into(),
            ..NewTask::default()
        })
        .await
        .unwrap();
    assert_eq!(next(&mut wakeups).await, Wake::Tasks);
    let w1 = name("w1");
    let claimed = store
        .claim_next(
            crew_store::Claimant {
                name: &w1,
                role: None,
            },
            BUDGET,
        )
        .await
        .unwrap();
    store.complete(claimed.id, &w1, None).await.unwrap();
    assert_eq!(next(&mut wakeups).await, Wake::Tasks);
    store
        .send(Draft::new(w1.clone(), name("lead")))
        .await
        .unwrap();
    assert_eq!(next(&mut wakeups).await, Wake::Inbox("lead".into()));
    assert_eq!(task.id, claimed.id);

    // The server restarts: the listener reconnects, says so, and wakes for work again.
    cluster.restart();
    loop {
        match wakeups.wait(BUDGET).await {
            Some(Wake::Connected) => break,
            Some(_) => {}
            None => panic!("the listener did not reconnect:\n{}", cluster.log_text()),
        }
    }
    store
        .create_task(NewTask {
            subject: "after the restart".into(),
            ..NewTask::default()
        })
        .await
        .unwrap();
    assert_eq!(next(&mut wakeups).await, Wake::Tasks);
    // Nothing else pending: a wait with nothing to say times out.
    assert_eq!(wakeups.wait(Duration::from_millis(50)).await, None);
}

/// The wake-up for a message or a finished task is sent after its writing transaction (not
/// inside it, where it would serialise every writer's commit): it must still come only once
/// the rows are there, so a reader that reads at once finds what woke it. A sender in another
/// task sends one at a time while the reader reads on the wake-up alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_reader_woken_at_once_finds_the_message_or_the_finished_task_that_woke_it() {
    let Some((cluster, store)) = store(4).await else {
        return;
    };
    let mut wakeups = Wakeups::listen(&store).await.unwrap();
    let sender = PgStore::connect(&cluster.url(), 2).unwrap();
    let (lead, w1) = (name("lead"), name("w1"));
    let (ack, mut acked) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (go, mut gone) = tokio::sync::mpsc::unbounded_channel::<()>();
    let rounds = 40;
    let sending = tokio::spawn({
        let (lead, w1) = (lead.clone(), w1.clone());
        async move {
            for i in 0..rounds {
                gone.recv().await.unwrap();
                sender
                    .send(Draft {
                        text: Some(format!("m{i}")),
                        ..Draft::new(w1.clone(), lead.clone())
                    })
                    .await
                    .unwrap();
                acked.recv().await.unwrap();
            }
            for i in 0..rounds {
                gone.recv().await.unwrap();
                let task = sender
                    .create_task(NewTask {
                        subject: format!("t{i}"),
                        ..NewTask::default()
                    })
                    .await
                    .unwrap();
                acked.recv().await.unwrap();
                let who = crew_store::Claimant {
                    name: &w1,
                    role: None,
                };
                let claimed = sender.claim_next(who, BUDGET).await.unwrap();
                assert_eq!(claimed.id, task.id);
                sender.complete(claimed.id, &w1, None).await.unwrap();
                acked.recv().await.unwrap();
            }
        }
    });
    for i in 0..rounds {
        go.send(()).unwrap();
        assert_eq!(next(&mut wakeups).await, Wake::Inbox("lead".into()));
        let unread = store.unread(&lead, &lead, 10).await.unwrap();
        let texts: Vec<_> = unread.iter().map(|(_, m)| m.text.clone()).collect();
        assert_eq!(texts, [Some(format!("m{i}"))], "round {i}");
        store.mark_read(&lead, &lead, unread[0].0).await.unwrap();
        ack.send(()).unwrap();
    }
    for i in 0..rounds {
        go.send(()).unwrap();
        assert_eq!(next(&mut wakeups).await, Wake::Tasks, "created {i}");
        ack.send(()).unwrap();
        // Woken by the completion: the task reads completed.
        assert_eq!(next(&mut wakeups).await, Wake::Tasks, "completed {i}");
        let done = store.tasks().await.unwrap();
        let last = done.last().unwrap();
        assert_eq!(
            (last.subject.as_str(), last.status),
            (format!("t{i}").as_str(), crew_store::Status::Completed),
            "completed {i}"
        );
        ack.send(()).unwrap();
    }
    sending.await.unwrap();
}

/// A process's waiters (a worker's lifecycle, its heartbeat, a permission prompt) share the
/// store's one listening connection, and each wakes for every notification.
#[tokio::test(flavor = "multi_thread")]
async fn the_waiters_of_one_store_share_one_listening_connection() {
    let Some((_cluster, store)) = store(2).await else {
        return;
    };
    let mut first = store.wakeups().await.unwrap();
    let mut second = store.clone().wakeups().await.unwrap();
    let listening = || async {
        let client = store.client().await.unwrap();
        let row = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'",
                &[],
            )
            .await
            .unwrap();
        row.get::<_, i64>(0)
    };
    assert_eq!(listening().await, 1, "one connection listens");
    store
        .send(Draft::new(name("w1"), name("lead")))
        .await
        .unwrap();
    assert_eq!(next(&mut first).await, Wake::Inbox("lead".into()));
    assert_eq!(next(&mut second).await, Wake::Inbox("lead".into()));
    drop(first);
    let mut third = store.wakeups().await.unwrap();
    store
        .send(Draft::new(name("w1"), name("bob")))
        .await
        .unwrap();
    assert_eq!(next(&mut second).await, Wake::Inbox("bob".into()));
    // A new waiter may first see what woke the others before it: it wakes for bob's too.
    let mut woke_for_bob = false;
    for _ in 0..2 {
        woke_for_bob |= next(&mut third).await == Wake::Inbox("bob".into());
        if woke_for_bob {
            break;
        }
    }
    assert!(woke_for_bob);
    assert_eq!(listening().await, 1);
}
