//! Inboxes: concurrent appends with a reader following them lose nothing and keep each
//! sender's order; requests get their state derived, one answer, from the right answerer.

use std::collections::HashMap;
use std::time::Duration;

use crew_protocol::{MessageKind, USER};
use crew_store::{Draft, Refusal, RequestState};
use crew_store_pg::{PgStore, PgStoreError};

use crate::common::{name, store};

const SENDERS: usize = 8;
const EACH: usize = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_reach_a_following_reader_all_once_in_each_senders_order() {
    let Some((_cluster, store)) = store(12).await else {
        return;
    };
    let lead = name("lead");
    let senders: Vec<_> = (0..SENDERS)
        .map(|k| {
            let (store, lead) = (store.clone(), lead.clone());
            tokio::spawn(async move {
                for i in 0..EACH {
                    store
                        .send(Draft {
                            text: Some(i.to_string()),
                            ..Draft::new(name(&format!("w{k}")), lead.clone())
                        })
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    // The reader follows while they append, moving its cursor batch by batch.
    let mut got: Vec<(String, usize, String)> = Vec::new();
    while got.len() < SENDERS * EACH {
        let batch = store.unread(&lead, &lead, 64).await.unwrap();
        if let Some((last, _)) = batch.last() {
            store.mark_read(&lead, &lead, *last).await.unwrap();
        } else {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        for (_, m) in batch {
            got.push((m.from.to_string(), m.text.unwrap().parse().unwrap(), m.id));
        }
    }
    for s in senders {
        s.await.unwrap();
    }
    assert!(store.unread(&lead, &lead, 64).await.unwrap().is_empty());
    let mut next: HashMap<&str, usize> = HashMap::new();
    for (from, i, _) in &got {
        let expected = next.entry(from).or_default();
        assert_eq!(i, expected, "{from}'s messages out of order or doubled");
        *expected += 1;
    }
    assert!(next.values().all(|n| *n == EACH), "{next:?}");
    // Another reader has its own cursor: it starts from the beginning.
    let other = store.unread(&name("auditor"), &lead, 10_000).await.unwrap();
    assert_eq!(other.len(), SENDERS * EACH);
    assert_eq!(store.inbox(&lead).await.unwrap().len(), SENDERS * EACH);
}

async fn ask(store: &PgStore, kind: MessageKind, extra: serde_json::Value) -> String {
    let sent = store
        .send(Draft {
            kind,
            request: true,
            text: Some("may I?".into()),
            extra: extra.as_object().cloned().unwrap_or_default(),
            ..Draft::new(name("w1"), name("lead"))
        })
        .await
        .unwrap();
    sent.request_id.unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_is_answered_once_by_whom_it_may_be_and_expires_unanswered() {
    let Some((_cluster, store)) = store(8).await else {
        return;
    };
    let timeout = Duration::from_secs(600);
    let permission = ask(
        &store,
        MessageKind::PermissionRequest,
        serde_json::json!({}),
    )
    .await;
    let state = |id: String| {
        let store = store.clone();
        async move {
            let all = store.requests(timeout).await.unwrap();
            all.into_iter()
                .find(|r| r.request_id == id.as_str())
                .unwrap()
                .state
        }
    };
    assert_eq!(state(permission.clone()).await, RequestState::Pending);
    // A permission request is the person's to answer, not its addressee's.
    let err = store
        .respond(&permission, &name("lead"), true, None, timeout)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PgStoreError::Refused(Refusal::NotAddressee { .. })),
        "{err}"
    );

    // Four answers at once: the database keeps one.
    let answers: Vec<_> = (0..4)
        .map(|k| {
            let (store, id) = (store.clone(), permission.clone());
            tokio::spawn(async move {
                store
                    .respond(&id, &USER, k % 2 == 0, Some(format!("answer {k}")), timeout)
                    .await
            })
        })
        .collect();
    let mut accepted = Vec::new();
    for a in answers {
        match a.await.unwrap() {
            Ok(m) => accepted.push(m),
            Err(PgStoreError::Refused(Refusal::AlreadyAnswered { .. })) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(accepted.len(), 1, "{accepted:?}");
    let answer = &accepted[0];
    assert_eq!((answer.to.as_str(), answer.is_response()), ("w1", true));
    let expected = if answer.approve == Some(true) {
        RequestState::Approved
    } else {
        RequestState::Rejected
    };
    assert_eq!(state(permission.clone()).await, expected);
    // The answer is in the asker's inbox.
    let inbox = store.inbox(&name("w1")).await.unwrap();
    assert_eq!(inbox.len(), 1);

    // A request of its own timeout, unanswered past it, is expired and cannot be answered.
    let quick = ask(
        &store,
        MessageKind::PlanApprovalRequest,
        serde_json::json!({"timeout_secs": 0}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(state(quick.clone()).await, RequestState::Expired);
    let err = store
        .respond(&quick, &name("lead"), true, None, timeout)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PgStoreError::Refused(Refusal::Expired { .. })),
        "{err}"
    );
    let err = store
        .respond("req_nope", &USER, true, None, timeout)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PgStoreError::Refused(Refusal::UnknownRequest(_))),
        "{err}"
    );
}
