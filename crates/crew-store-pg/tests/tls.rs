//! TLS to the store: taken when the server offers it, plain when it does not, and refused
//! when the URL requires it of a server without it. (Verifying the server against a CA,
//! which reads `PGSSLROOTCERT`, is proved through the `crew` binary: `crew: cli_store`.)

use crew_store_pg::{Connection, PgStore};

#[tokio::test]
async fn a_server_offering_tls_is_spoken_to_over_tls_by_every_connection() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    if cluster.enable_tls().is_none() {
        return;
    }
    let store = PgStore::connect(&cluster.url(), 2).unwrap();
    store.migrate().await.unwrap();
    // A test machine with its own ~/.postgresql/root.crt would verify instead.
    assert!(matches!(
        store.status().await.unwrap().connection,
        Connection::Encrypted | Connection::Verified(_)
    ));
    // The listener's connection too: the server sees no plain connection of ours.
    let mut wakeups = crew_store_pg::Wakeups::listen(&store).await.unwrap();
    let client = store.client().await.unwrap();
    let plain: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.client_addr IS NOT NULL AND NOT s.ssl",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let encrypted: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.client_addr IS NOT NULL AND s.ssl",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(plain, 0);
    assert!(encrypted >= 2, "{encrypted}");
    store
        .create_task(crew_store::NewTask {
            subject: "over TLS".into(),
            ..crew_store::NewTask::default()
        })
        .await
        .unwrap();
    assert!(
        wakeups
            .wait(std::time::Duration::from_secs(10))
            .await
            .is_some()
    );
}

#[tokio::test]
async fn a_server_without_tls_is_plain_unless_the_url_requires_tls() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let store = PgStore::connect(&cluster.url(), 1).unwrap();
    assert_eq!(store.status().await.unwrap().connection, Connection::Plain);
    let required = PgStore::connect(&format!("{}?sslmode=require", cluster.url()), 1).unwrap();
    let refused = required.reach().await.unwrap_err().to_string();
    assert!(
        refused.contains("cannot reach the store at 127.0.0.1:"),
        "{refused}"
    );
    assert!(
        refused.to_lowercase().contains("tls") || refused.to_lowercase().contains("ssl"),
        "{refused}"
    );
}
