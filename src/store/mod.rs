//! The `.tasks` DAG with atomic claim, `.mailboxes` with typed messages and requests.
