//! A connection pool to one PostgreSQL store, and the retry that carries an operation across a
//! server restart.

use std::future::Future;
use std::str::FromStr;
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use crate::PgStoreError;

/// First pause before trying again after a connection failure; doubled up to `MAX_BACKOFF`.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(20);
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How long an operation keeps trying while the server is away before it gives up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// How long a claim made through the `TeamStore` interface holds its task without a heartbeat.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    config: tokio_postgres::Config,
    lease: Duration,
}

impl PgStore {
    /// A store at `url` (`postgres://user@host:port/db`). A password never needs to be in the
    /// URL (nor in crew.toml): without one, `PGPASSWORD` is used when set.
    pub fn connect(url: &str, max_connections: usize) -> Result<Self, PgStoreError> {
        let mut config =
            tokio_postgres::Config::from_str(url).map_err(|e| PgStoreError::BadUrl {
                url: redact(url),
                reason: e.to_string(),
            })?;
        if config.get_password().is_none()
            && let Ok(password) = std::env::var("PGPASSWORD")
        {
            config.password(password);
        }
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                // A connection the server closed is dropped at checkout, not handed out.
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_connections.max(1))
            .build()
            .map_err(|e| PgStoreError::Pool(e.to_string()))?;
        Ok(PgStore {
            pool,
            config,
            lease: DEFAULT_LEASE,
        })
    }

    /// The same store, its `TeamStore::claim_next` holding tasks for `lease`.
    pub fn with_lease(self, lease: Duration) -> Self {
        PgStore { lease, ..self }
    }

    pub(crate) fn lease(&self) -> Duration {
        self.lease
    }

    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
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
                other => return other,
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
