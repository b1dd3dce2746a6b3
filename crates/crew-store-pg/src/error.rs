//! What can go wrong talking to the PostgreSQL store.

use crew_store::Refusal;

#[derive(Debug, thiserror::Error)]
pub enum PgStoreError {
    #[error("store URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("PostgreSQL connection pool: {0}")]
    Pool(String),
    /// The database was migrated by a newer crew than this one.
    #[error(
        "the store's schema is version {found}, newer than version {known} that this crew knows: upgrade crew"
    )]
    SchemaTooNew { found: i32, known: i32 },
    #[error("store row {what}: bad value {value:?}: {reason}")]
    BadRow {
        what: &'static str,
        value: String,
        reason: String,
    },
    #[error("no such task: {0}")]
    NoSuchTask(crew_protocol::TaskId),
    #[error("{0}")]
    Refused(#[from] Refusal),
    #[error(transparent)]
    InvalidName(#[from] crew_protocol::InvalidName),
    /// A command line's first try found no server (operations retry; a person hears at once).
    #[error("cannot reach the store at {server}: {reason}")]
    CannotReach { server: String, reason: String },
    #[error("the store was unreachable for {secs}s: {last}")]
    Unreachable { secs: u64, last: String },
}

impl From<deadpool_postgres::PoolError> for PgStoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => PgStoreError::Postgres(e),
            other => PgStoreError::Pool(other.to_string()),
        }
    }
}

impl PgStoreError {
    /// Whether trying again on a fresh connection may succeed: the server went away, is
    /// restarting or refused the connection for now. Refusals and bad rows are final.
    pub fn is_transient(&self) -> bool {
        match self {
            PgStoreError::Postgres(e) => match e.as_db_error() {
                // No server-side error: the socket closed, the connect failed, an I/O error.
                None => {
                    e.is_closed()
                        || std::error::Error::source(e)
                            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
                }
                Some(db) => {
                    let code = db.code().code();
                    // 08: connection exception; 57P01-03: admin/crash shutdown, starting up.
                    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
                }
            },
            PgStoreError::Pool(_) => true,
            _ => false,
        }
    }
}
