//! Wake-ups through LISTEN/NOTIFY: a waiter sleeps until a task may be claimable or a message
//! arrived, and a listener that lost its server comes back and says so.

use std::time::Duration;

use crew_store::{Draft, NewTask};
use crew_store_pg::Wakeups;
use crew_store_pg::wakeups::Wake;
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
