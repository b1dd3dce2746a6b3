//! crew-store's integration tests — the task graph's properties — as one test binary, a module per
//! area.

mod store_dag_props;
