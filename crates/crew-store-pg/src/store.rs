//! A connection pool to one PostgreSQL store, and the retry that carries an operation across a
//! server restart.

use std::future::Future;
use std::str::FromStr;
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::PgStoreError;

/// First pause before trying again after a connection failure; doubled up to `MAX_BACKOFF`.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(20);
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How long an operation keeps trying while the server is away before it gives up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// How long a claim made through the `TeamStore` interface holds its task without a heartbeat.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// Longest a caller waits for a pooled connection to come free (`PoolExhausted` after): an
/// operation holds one for milliseconds, so this is a fault, never a queue.
pub(crate) const POOL_WAIT: Duration = Duration::from_secs(30);

/// How long `reach` waits for a server that does not answer at all.
const REACH_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    roots: Option<std::path::PathBuf>,
    lease: Duration,
    /// This handle's one listening connection, made on first need and shared by its clones.
    shared_wakeups: std::sync::Arc<tokio::sync::OnceCell<crate::Wakeups>>,
}

/// What `crew store status` says of a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreStatus {
    /// The schema version the database is at (0: never migrated).
    pub version: i32,
    pub tasks: i64,
    pub messages: i64,
    /// How this connection reached the server.
    pub connection: Connection,
}

/// Whether a connection to the store is encrypted, and whether the server was proven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// The server offers no TLS (or the URL said `sslmode=disable`).
    Plain,
    /// Encrypted; the server's certificate was not verified (no roots given).
    Encrypted,
    /// Encrypted, the server's certificate verified against the roots in this file.
    Verified(std::path::PathBuf),
}

impl PgStore {
    /// A store at `url` (`postgres://user@host:port/db`). A password never needs to be in the
    /// URL (nor in crew.toml): without one, `PGPASSWORD` is used when set (crew takes it out of
    /// its environment at start, see `crew_store::secrets`), else the password file, as
    /// PostgreSQL's own clients read it (`PGPASSFILE` or `~/.pgpass`).
    pub fn connect(url: &str, max_connections: usize) -> Result<Self, PgStoreError> {
        let mut config =
            tokio_postgres::Config::from_str(url).map_err(|e| PgStoreError::BadUrl {
                url: redact(url),
                reason: e.to_string(),
            })?;
        if config.get_password().is_none()
            && let Some(password) = Self::password_for(&config)?
        {
            crew_store::secrets::register(&password);
            config.password(password);
        }
        let (tls, roots) = crate::tls::connector()?;
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                // A connection the server closed is dropped at checkout, not handed out.
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_connections.max(1))
            .wait_timeout(Some(POOL_WAIT))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| PgStoreError::Pool(e.to_string()))?;
        Ok(PgStore {
            pool,
            config,
            tls,
            roots,
            lease: DEFAULT_LEASE,
            shared_wakeups: std::sync::Arc::default(),
        })
    }

    /// The same store, its `TeamStore::claim_next` holding tasks for `lease`.
    pub fn with_lease(self, lease: Duration) -> Self {
        PgStore { lease, ..self }
    }

    /// A waiter on this store's notifications, on the one listening connection this handle and
    /// its clones share (a worker's lifecycle, heartbeat and permission prompts wait on it
    /// together): one connection per process rather than one per waiter.
    pub async fn wakeups(&self) -> Result<crate::Wakeups, PgStoreError> {
        self.shared_wakeups
            .get_or_try_init(|| crate::Wakeups::listen(self))
            .await
            .cloned()
    }

    /// How long a claim holds its task without a heartbeat.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// One connection attempt, no retry, bounded in time: for a person at a command line,
    /// who should hear at once which server is not there (operations retry for a minute).
    pub async fn reach(&self) -> Result<(), PgStoreError> {
        let reason = match tokio::time::timeout(REACH_TIMEOUT, self.client()).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => with_causes(&e),
            Err(_) => format!("no answer within {}s", REACH_TIMEOUT.as_secs()),
        };
        Err(PgStoreError::CannotReach {
            server: self.server(),
            reason,
        })
    }

    /// `host:port` of each server the URL names, for messages (never the password).
    fn server(&self) -> String {
        if self.config.get_hosts().is_empty() {
            return "(the URL names no host)".into();
        }
        self.servers().join(", ")
    }

    fn servers(&self) -> Vec<String> {
        let ports = self.config.get_ports();
        self.config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(at, host)| {
                let host = match host {
                    tokio_postgres::config::Host::Tcp(name) => name.clone(),
                    tokio_postgres::config::Host::Unix(dir) => dir.display().to_string(),
                };
                // One port for every host, or one each; 5432 when the URL names none.
                let port = ports.get(at).or(ports.first()).copied().unwrap_or(5432);
                format!("{host}:{port}")
            })
            .collect()
    }

    /// The URL of this store for logging in as `role`: same servers and database, no
    /// password (the host that uses it keeps its own, in `PGPASSWORD` or `.pgpass`).
    pub fn url_as(&self, role: &str) -> String {
        format!(
            "postgres://{role}@{}/{}",
            self.servers().join(","),
            self.database()
        )
    }

    /// `PGPASSWORD`, else the password file's entry for the first server, database and user.
    fn password_for(config: &tokio_postgres::Config) -> Result<Option<String>, PgStoreError> {
        if let Some(password) = crew_store::secrets::env_var("PGPASSWORD") {
            return Ok(Some(password));
        }
        Self::filed_password(config)
    }

    /// The password file's entry for the connection `config` makes, if any.
    fn filed_password(config: &tokio_postgres::Config) -> Result<Option<String>, PgStoreError> {
        let Some(file) = crate::passfile::location() else {
            return Ok(None);
        };
        let (host, port, database, user) = passfile_key(config);
        crate::passfile::password(&file, &host, port, &database, &user)
    }

    /// Whether an agent's `role` logs in to this store as its worker will here: with no password
    /// but the password file's (a worker is never handed `PGPASSWORD`, the person's). One try,
    /// bounded in time.
    pub async fn agent_login(&self, role: &str) -> Result<AgentLogin, PgStoreError> {
        let mut config = self.config_as(role)?;
        if let Some(password) = Self::filed_password(&config)? {
            crew_store::secrets::register(&password);
            config.password(password);
        }
        let tried = tokio::time::timeout(REACH_TIMEOUT, config.connect(self.tls.clone())).await;
        let failed = match tried {
            Ok(Ok(_)) => return Ok(AgentLogin::Works),
            Ok(Err(e)) => e,
            Err(_) => {
                return Err(PgStoreError::CannotReach {
                    server: self.server(),
                    reason: format!("no answer within {}s", REACH_TIMEOUT.as_secs()),
                });
            }
        };
        let server_wants_one = failed
            .as_db_error()
            .is_some_and(|db| db.code() == &tokio_postgres::error::SqlState::INVALID_PASSWORD);
        // The client's own "password missing" (the server asked for one and none was given) has
        // no code of its own: told by its words.
        let reason = with_causes(&PgStoreError::Postgres(failed));
        if server_wants_one || reason.contains("password missing") {
            return Ok(AgentLogin::NeedsPassword(reason));
        }
        Err(PgStoreError::CannotReach {
            server: self.server(),
            reason,
        })
    }

    /// Keeps `password` for `role` on this store in the password file (`PGPASSFILE`, else
    /// `~/.pgpass`), where the workers of this machine read it; the file's path.
    pub fn keep_password(
        &self,
        role: &str,
        password: &str,
    ) -> Result<std::path::PathBuf, PgStoreError> {
        let file = crate::passfile::location().ok_or_else(|| {
            PgStoreError::Passfile("no PGPASSFILE and no HOME: nowhere to keep a password".into())
        })?;
        let (host, port, database, user) = passfile_key(&self.config_as(role)?);
        crate::passfile::keep(&file, &host, port, &database, &user, password)?;
        Ok(file)
    }

    /// The connection of [`Self::url_as`] `role`.
    fn config_as(&self, role: &str) -> Result<tokio_postgres::Config, PgStoreError> {
        let url = self.url_as(role);
        tokio_postgres::Config::from_str(&url).map_err(|e| PgStoreError::BadUrl {
            url,
            reason: e.to_string(),
        })
    }

    /// This store's URL as it may be shown: its role, servers and database, no password.
    pub fn shown_url(&self) -> String {
        self.url_as(self.role())
    }

    /// The role this store's connections log in as.
    pub fn role(&self) -> &str {
        self.config.get_user().unwrap_or("postgres")
    }

    /// The database the URL names (PostgreSQL's default: the user's name).
    pub fn database(&self) -> String {
        self.config.get_dbname().map_or_else(
            || self.config.get_user().unwrap_or("postgres").to_string(),
            str::to_string,
        )
    }

    /// The schema version and how many tasks and messages the store holds.
    pub async fn status(&self) -> Result<StoreStatus, PgStoreError> {
        self.retry(|| async {
            let client = self.client().await?;
            let version = crate::schema::version(&client).await?;
            let encrypted: bool = client
                .query_opt(
                    "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                    &[],
                )
                .await?
                .is_some_and(|row| row.get(0));
            let connection = match (&self.roots, encrypted) {
                (_, false) => Connection::Plain,
                (None, true) => Connection::Encrypted,
                (Some(file), true) => Connection::Verified(file.clone()),
            };
            if version == 0 {
                return Ok(StoreStatus {
                    version,
                    tasks: 0,
                    messages: 0,
                    connection,
                });
            }
            let row = client
                .query_one(
                    "SELECT (SELECT count(*) FROM tasks), (SELECT count(*) FROM messages)",
                    &[],
                )
                .await?;
            Ok(StoreStatus {
                version,
                tasks: row.try_get(0)?,
                messages: row.try_get(1)?,
                connection,
            })
        })
        .await
    }

    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// How every connection of this store does TLS (`tls.rs`).
    pub(crate) fn tls(&self) -> MakeRustlsConnect {
        self.tls.clone()
    }

    /// A pooled connection.
    pub async fn client(&self) -> Result<Object, PgStoreError> {
        Ok(self.pool.get().await?)
    }

    /// Applies the schema migrations this binary knows (see `schema::migrate`).
    pub async fn migrate(&self) -> Result<i32, PgStoreError> {
        self.retry(|| async {
            let mut client = self.client().await?;
            crate::schema::migrate(&mut client).await
        })
        .await
    }

    /// Runs `op` until it succeeds or fails for a reason other than the connection, pausing
    /// with a doubling backoff in between. `op` must be safe to repeat: every write in this
    /// crate carries a key made by the client, so a retry after a lost reply finds its row.
    pub(crate) async fn retry<T, F, Fut>(&self, mut op: F) -> Result<T, PgStoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, PgStoreError>>,
    {
        let started = Instant::now();
        let mut pause = FIRST_BACKOFF;
        loop {
            match op().await {
                Err(e) if e.is_transient() => {
                    if started.elapsed() > GIVE_UP_AFTER {
                        return Err(PgStoreError::Unreachable {
                            secs: started.elapsed().as_secs(),
                            last: e.to_string(),
                        });
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_BACKOFF);
                }
                other => return other.map_err(PgStoreError::permission_as_refusal),
            }
        }
    }
}

/// `url` with any password replaced, for error messages and logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &userinfo[..colon],
                    &url[at..]
                ),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// What the password file is searched by for `config`: its first server (a socket is
/// "localhost" to the file), port, database and user.
fn passfile_key(config: &tokio_postgres::Config) -> (String, u16, String, String) {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("postgres");
    let database = config.get_dbname().unwrap_or(user);
    (host, port, database.to_string(), user.to_string())
}

/// Whether an agent's role logs in (see [`PgStore::agent_login`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentLogin {
    Works,
    /// The server asks for a password it was not given (or not this one): its words.
    NeedsPassword(String),
}

/// `e` and what caused it ("error connecting to server" alone does not say "refused"), each
/// cause once: a wrapper's text often ends with its source's.
fn with_causes(e: &PgStoreError) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.ends_with(&said) {
            text = format!("{text}: {said}");
        }
        cause = c.source();
    }
    text
}

/// A key no other client makes: for creates and claims that must not happen twice on retry.
pub(crate) fn token() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn a_password_in_the_url_never_reaches_a_message() {
        assert_eq!(
            redact("postgres://crew:s3cret@db:5432/team"),
            "postgres://crew:***@db:5432/team"
        );
        assert_eq!(redact("postgres://crew@db/team"), "postgres://crew@db/team");
    }
}
