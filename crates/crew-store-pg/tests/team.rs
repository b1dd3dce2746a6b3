//! The published team: read back whole, republished in place, its `[limits]` holding new tasks.

use crew_store::{Limits, NewTask, Refusal, Roster};
use crew_store_pg::PgStoreError;

use crate::common::{name, store};

#[tokio::test]
async fn the_published_team_reads_back_and_its_limits_hold_new_tasks() {
    let Some((_cluster, store)) = store(2).await else {
        return;
    };
    assert!(store.team().await.unwrap().is_none());
    let long = "x".repeat(40);
    store
        .create_task(NewTask {
            subject: long.clone(),
            ..NewTask::default()
        })
        .await
        .unwrap();
    let limits = Limits {
        subject_chars: 20,
        ..Limits::default()
    };
    let roster = Roster::new([name("lead"), name("alice")]);
    let toml = "[team]\nname = \"t\"\n";
    let published = store.publish_team(toml, &roster, limits).await.unwrap();
    assert_eq!(
        (published.toml.as_str(), &published.roster, published.limits),
        (toml, &roster, limits)
    );
    let refused = store
        .create_task(NewTask {
            subject: long,
            ..NewTask::default()
        })
        .await;
    assert!(
        matches!(
            refused,
            Err(PgStoreError::Refused(Refusal::TooLarge { limit: 20, .. }))
        ),
        "{refused:?}"
    );
    // Published again: replaced, one team.
    let wider = Roster::new([name("lead"), name("alice"), name("bob")]);
    store
        .publish_team(toml, &wider, Limits::default())
        .await
        .unwrap();
    assert_eq!(store.team().await.unwrap().unwrap().roster, wider);
}
