//! `crew store migrate | status` against a throwaway PostgreSQL server (skipped, saying why,
//! without the server binaries), and against a server that is not there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::Command;

use crew_protocol::{AgentName, USER};
use crew_store::{Draft, NewTask};
use crew_store_pg::{PgStore, SCHEMA_VERSION};

use crate::support::{Run, crew_exe};

fn crew(args: &[&str]) -> Run {
    Command::new(crew_exe()).args(args).output().unwrap().into()
}

fn ok(args: &[&str]) -> String {
    let run = crew(args);
    assert_eq!(run.code, 0, "crew {args:?}: {}", run.stderr);
    run.stdout
}

#[test]
fn migrate_brings_the_schema_to_this_crews_version_and_refuses_a_newer_one() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let fresh = ok(&["store", "status", &url]);
    assert!(
        fresh.starts_with("schema version: 0 (never migrated")
            && fresh.contains(&format!("this crew's schema version: {SCHEMA_VERSION}\n"))
            && fresh.contains("tasks: 0\nmessages: 0\n"),
        "{fresh}"
    );
    let migrated = ok(&["store", "migrate", &url]);
    assert_eq!(
        migrated,
        format!("schema version {SCHEMA_VERSION} (migrated from 0)\n")
    );
    let again = ok(&["store", "migrate", &url]);
    assert_eq!(
        again,
        format!("schema version {SCHEMA_VERSION}: already current\n")
    );

    // What the team wrote is counted.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 1).unwrap();
    runtime.block_on(async {
        store
            .create_task(NewTask {
                subject: "one".into(),
                ..NewTask::default()
            })
            .await
            .unwrap();
        for text in ["hello", "again"] {
            let lead = AgentName::parse("lead").unwrap();
            store
                .send(Draft {
                    text: Some(text.into()),
                    ..Draft::new(USER, lead)
                })
                .await
                .unwrap();
        }
    });
    assert_eq!(
        ok(&["store", "status", &url]),
        format!(
            "schema version: {SCHEMA_VERSION}\nthis crew's schema version: {SCHEMA_VERSION}\n\
             tasks: 1\nmessages: 2\n"
        )
    );

    // A store that a newer crew migrated: refused, both versions named; status still shows it.
    let newer = SCHEMA_VERSION + 7;
    runtime.block_on(async {
        let client = store.client().await.unwrap();
        client
            .execute("UPDATE crew_schema SET version = $1", &[&newer])
            .await
            .unwrap();
    });
    let refused = crew(&["store", "migrate", &url]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(&format!(
            "the store's schema is version {newer}, newer than version {SCHEMA_VERSION}"
        )) && !refused.stderr.contains("panicked"),
        "{}",
        refused.stderr
    );
    let shown = ok(&["store", "status", &url]);
    assert!(
        shown.starts_with(&format!(
            "schema version: {newer} (newer than this crew's: upgrade crew)\n"
        )),
        "{shown}"
    );
}

#[test]
fn an_unreachable_store_is_a_clear_error_naming_its_server() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://crew@127.0.0.1:{port}/team");
    for command in ["migrate", "status"] {
        let run = crew(&["store", command, &url]);
        assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.starts_with(&format!(
                "crew: cannot reach the store at 127.0.0.1:{port}: "
            )) && !run.stderr.contains("panicked"),
            "{}",
            run.stderr
        );
    }
}
