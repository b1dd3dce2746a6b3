//! Wake-ups through `LISTEN/NOTIFY`: one connection per process listens for "a task may be
//! claimable" and "a message arrived"; waiters sleep until one comes. When the server goes away
//! the listener reconnects with backoff and then wakes everyone, since a notification sent
//! while it was away is lost: a woken waiter always re-reads the store, so nothing is missed.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::inbox::INBOX_CHANNEL;
use crate::store::{FIRST_BACKOFF, MAX_BACKOFF};
use crate::tasks::TASKS_CHANNEL;
use crate::{PgStore, PgStoreError};

/// What woke a waiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// A task was added, finished or released.
    Tasks,
    /// A message for this recipient was appended.
    Inbox(String),
    /// The listener (re)connected: anything may have changed meanwhile.
    Connected,
}

/// A waiter on one listening connection; its clones wait on the same one (each wakes for every
/// notification), which stops with the last of them.
#[derive(Clone)]
pub struct Wakeups {
    rx: watch::Receiver<(u64, Wake)>,
    _listener: std::sync::Arc<Listener>,
}

struct Listener(tokio::task::JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Wakeups {
    /// Starts listening; returns once the first connection listens (or fails to).
    pub async fn listen(store: &PgStore) -> Result<Self, PgStoreError> {
        let config = store.config().clone();
        let tls = store.tls();
        let (tx, rx) = watch::channel((0, Wake::Connected));
        let (first, ready) = tokio::sync::oneshot::channel();
        let listener = tokio::spawn(listen_forever(config, tls, tx, Some(first)));
        let wakeups = Wakeups {
            rx,
            _listener: std::sync::Arc::new(Listener(listener)),
        };
        ready
            .await
            .map_err(|_| PgStoreError::Pool("the listener stopped".into()))??;
        Ok(wakeups)
    }

    /// Sleeps until a notification or `timeout`; returns what woke it last (a hint: several
    /// at once are one wake-up, so a woken waiter re-reads the store), `None` on timeout.
    pub async fn wait(&mut self, timeout: Duration) -> Option<Wake> {
        match tokio::time::timeout(timeout, self.rx.changed()).await {
            Ok(Ok(())) => Some(self.rx.borrow_and_update().1.clone()),
            _ => None,
        }
    }
}

async fn listen_forever(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    tx: watch::Sender<(u64, Wake)>,
    mut first: Option<tokio::sync::oneshot::Sender<Result<(), PgStoreError>>>,
) {
    let mut pause = FIRST_BACKOFF;
    loop {
        match listen_once(&config, &tls, &tx, &mut first, &mut pause).await {
            Err(e) if !e.is_transient() => {
                if let Some(first) = first.take() {
                    let _ = first.send(Err(e));
                    return;
                }
            }
            _ => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}

/// One connection's life: connect, `LISTEN`, forward notifications until it drops.
async fn listen_once(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    tx: &watch::Sender<(u64, Wake)>,
    first: &mut Option<tokio::sync::oneshot::Sender<Result<(), PgStoreError>>>,
    pause: &mut Duration,
) -> Result<(), PgStoreError> {
    let (client, mut connection) = config.connect(tls.clone()).await?;
    let (msg_tx, mut msgs) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut stream = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = stream.next().await {
            if msg_tx.send(message).is_err() {
                break;
            }
        }
    });
    let listening = client
        .batch_execute(&format!("LISTEN {TASKS_CHANNEL}; LISTEN {INBOX_CHANNEL}"))
        .await;
    if let Err(e) = listening {
        driver.abort();
        return Err(e.into());
    }
    *pause = FIRST_BACKOFF;
    if let Some(first) = first.take() {
        let _ = first.send(Ok(()));
    }
    bump(tx, Wake::Connected);
    while let Some(message) = msgs.recv().await {
        if let AsyncMessage::Notification(n) = message {
            let wake = if n.channel() == INBOX_CHANNEL {
                Wake::Inbox(n.payload().to_string())
            } else {
                Wake::Tasks
            };
            bump(tx, wake);
        }
    }
    driver.abort();
    // Kept until here: dropping the client would close the connection.
    drop(client);
    Ok(())
}

fn bump(tx: &watch::Sender<(u64, Wake)>, wake: Wake) {
    tx.send_modify(|(n, w)| {
        *n += 1;
        *w = wake;
    });
}

/// Runs `statement` on `client` and, pipelined after it, `pg_notify(channel, payload)` in a
/// transaction of its own; returns both results. A transaction that notifies holds the server's
/// one notify lock through its commit, so a notify inside a writing transaction serialises every
/// writer's WAL flush (about 1,000 commits a second on one disk); alone it writes nothing to
/// flush. The statement is sent first (`biased`), so it has committed when the wake-up runs and
/// a woken waiter finds its rows; one that changed nothing wakes waiters for nothing.
pub(crate) async fn notify_after<T>(
    client: &deadpool_postgres::Object,
    channel: &str,
    payload: &str,
    statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> (
    Result<T, tokio_postgres::Error>,
    Result<(), tokio_postgres::Error>,
) {
    let notify = async {
        let prepared = client.prepare_cached("SELECT pg_notify($1, $2)").await?;
        client
            .execute(&prepared, &[&channel, &payload])
            .await
            .map(drop)
    };
    tokio::join!(biased; statement, notify)
}
