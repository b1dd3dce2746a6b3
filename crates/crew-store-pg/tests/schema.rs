//! Migrations: applied once, recorded, and a newer schema refused with both versions named.

use crew_store_pg::{PgStoreError, SCHEMA_VERSION};

use crate::common::store;

#[tokio::test(flavor = "multi_thread")]
async fn migrate_applies_once_and_refuses_a_newer_schema() {
    let Some((_cluster, store)) = store(2).await else {
        return;
    };
    // `store()` migrated from nothing; a second run finds the current version, changes nothing.
    assert_eq!(store.migrate().await.unwrap(), SCHEMA_VERSION);
    let client = store.client().await.unwrap();
    assert_eq!(
        crew_store_pg::schema::version(&client).await.unwrap(),
        SCHEMA_VERSION
    );

    let newer = SCHEMA_VERSION + 98;
    client
        .execute("UPDATE crew_schema SET version = $1", &[&newer])
        .await
        .unwrap();
    let err = store.migrate().await.unwrap_err();
    assert!(
        matches!(err, PgStoreError::SchemaTooNew { found, known } if found == newer && known == SCHEMA_VERSION),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&newer.to_string()) && text.contains(&SCHEMA_VERSION.to_string()),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hosts_migrating_at_once_migrate_once() {
    let Some((cluster, _store)) = crate::common::store(2).await else {
        return;
    };
    // A second database of the same cluster, migrated by 4 "hosts" at once.
    let admin = crew_store_pg::PgStore::connect(&cluster.url(), 1).unwrap();
    admin
        .client()
        .await
        .unwrap()
        .batch_execute("CREATE DATABASE fresh")
        .await
        .unwrap();
    let url = cluster.url().replace("/postgres", "/fresh");
    let runs = (0..4).map(|_| {
        let url = url.clone();
        tokio::spawn(async move {
            let store = crew_store_pg::PgStore::connect(&url, 1).unwrap();
            store.migrate().await.unwrap()
        })
    });
    let mut found: Vec<i32> = Vec::new();
    for run in runs {
        found.push(run.await.unwrap());
    }
    found.sort_unstable();
    assert_eq!(
        found,
        vec![0, SCHEMA_VERSION, SCHEMA_VERSION, SCHEMA_VERSION]
    );
}

/// A person upgrading a store whose agents already have roles: what the new versions add
/// (memories, schema 9; conversations, schema 10) is granted to those roles by the migration
/// itself, so no agent is locked out until someone re-runs `crew store add-agent`.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_made_before_an_upgrade_uses_what_the_upgrade_adds() {
    use crew_store::{MemoryDraft, MemoryScope, MemoryType};
    use crew_store_pg::{AgentRights, PgStore};

    let Some((cluster, person)) = store(2).await else {
        return;
    };
    let alice = crate::common::name("alice");
    let rights = AgentRights {
        writes: true,
        leads: false,
    };
    let role = person.add_agent(&alice, rights, None).await.unwrap();
    // The store as it stood at version 8, with alice's role made then.
    person
        .client()
        .await
        .unwrap()
        .batch_execute(
            "DROP TABLE memories, conversations, conversation_latest;
             DROP FUNCTION crew_check_memory, crew_check_conversation;
             DROP INDEX tasks_unowned;
             UPDATE crew_schema SET version = 8;",
        )
        .await
        .unwrap();
    assert_eq!(person.migrate().await.unwrap(), 8);

    let agent = PgStore::connect(&cluster.url_as(&role.role), 2).unwrap();
    let draft = MemoryDraft {
        name: "build".into(),
        kind: MemoryType::Project,
        description: "how the build runs".into(),
        body: "cargo build".into(),
        scope: MemoryScope::Agent,
    };
    agent.write_memory(&alice, &draft).await.unwrap();
    let turn = serde_json::json!({"role": "user", "content": "go"});
    agent
        .keep_conversation(&alice, "task_1", 0, std::slice::from_ref(&turn))
        .await
        .unwrap();
    assert_eq!(agent.conversation(&alice, "task_1").await.unwrap(), [turn]);
}
