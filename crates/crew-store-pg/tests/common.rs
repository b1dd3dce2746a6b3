//! What the tests share: a migrated store on a fresh cluster.

use crew_protocol::AgentName;
use crew_store_pg::PgStore;
use crew_test_support::postgres::{self, PgCluster};

/// A fresh cluster and a migrated store on it, or `None` (the test skips) without a server.
pub async fn store(connections: usize) -> Option<(PgCluster, PgStore)> {
    let cluster = postgres::start()?;
    let store = PgStore::connect(&cluster.url(), connections).unwrap();
    store.migrate().await.unwrap();
    Some((cluster, store))
}

pub fn name(n: &str) -> AgentName {
    AgentName::parse(n).unwrap()
}
