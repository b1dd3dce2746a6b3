//! What can go wrong talking to the PostgreSQL store.

use crew_store::Refusal;

#[derive(Debug, thiserror::Error)]
pub enum PgStoreError {
    #[error("store URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    /// The password file could not be used (named, with why).
    #[error("{0}")]
    Passfile(String),
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// Every pooled connection stayed in use for the whole wait: more callers than
    /// connections, each holding its own far longer than an operation takes. Final, not
    /// retried: waiting longer would not free one.
    #[error("no pooled connection to the store came free within {secs}s (all in use)")]
    PoolExhausted { secs: u64 },
    #[error("TLS to the store: {0}")]
    Tls(String),
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
    /// The database refused: the connected role may not do this (an agent's role acting
    /// beyond its agent, schema 4), with the database's reason.
    #[error("not permitted by the store: {0}")]
    NotPermitted(String),
    #[error("{0:?} is the person, not an agent: the person connects with the store owner's role")]
    NotAnAgent(crew_protocol::AgentName),
    #[error("database role {role:?}: {reason}")]
    RoleName { role: String, reason: String },
    /// Only the person's role makes agents' roles.
    #[error("database role {role:?} cannot make agents' roles: it needs {needs}")]
    NotThePerson { role: String, needs: &'static str },
    #[error("the store was unreachable for {secs}s: {last}")]
    Unreachable { secs: u64, last: String },
}

impl From<deadpool_postgres::PoolError> for PgStoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => PgStoreError::Postgres(e),
            deadpool_postgres::PoolError::Timeout(_) => PgStoreError::PoolExhausted {
                secs: crate::store::POOL_WAIT.as_secs(),
            },
            other => PgStoreError::Pool(other.to_string()),
        }
    }
}

impl PgStoreError {
    /// A refusal by the database's rights (SQLSTATE 42501: a grant, a row policy, or the
    /// task guard) or its `[limits]` (CRW02, schema 6) as `NotPermitted`, with the database's
    /// own words; any other error as is.
    pub(crate) fn permission_as_refusal(self) -> Self {
        match &self {
            PgStoreError::Postgres(e) => match e.as_db_error() {
                Some(db)
                    if db.code() == &tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE
                        || db.code().code() == crate::schema::OVER_LIMITS =>
                {
                    PgStoreError::NotPermitted(db.message().to_string())
                }
                _ => self,
            },
            _ => self,
        }
    }

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
