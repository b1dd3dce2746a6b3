//! The team store as a worker's threads use it: each operation a blocking call, on either
//! backend. A worker, its heartbeat and the work it runs are threads (a model call or a CLI agent
//! holds one for minutes), while a store's operations are futures. A file store's are ready at
//! once and run where they are asked; a PostgreSQL store's run on the runtime that holds its
//! connections while the asking thread waits for the answer, so a thread already inside another
//! runtime (a permission prompt inside an agent's turn) may ask too.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crew_store::{
    AgentName, BackendError, DirWatcher, FileStore, StoreError, TeamStore, Waker, Workspace,
};
use crew_store_pg::wakeups::Wake;
use crew_store_pg::{PgStore, Wakeups};
use tokio::runtime::Handle;
use tokio::sync::Notify;

/// A store and where its futures run.
#[derive(Clone)]
pub struct TeamLink<S> {
    store: S,
    /// `None`: the store's futures are ready at once (files).
    runtime: Option<Handle>,
}

impl TeamLink<FileStore> {
    pub fn files(store: FileStore) -> Self {
        TeamLink {
            store,
            runtime: None,
        }
    }
}

impl TeamLink<PgStore> {
    /// `runtime` must be a multi-threaded one: its own threads drive the connections while
    /// the worker's threads wait.
    pub fn postgres(store: PgStore, runtime: Handle) -> Self {
        TeamLink {
            store,
            runtime: Some(runtime),
        }
    }
}

impl<S: LinkedStore> TeamLink<S> {
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Runs `op` on the store and waits for its answer.
    pub fn call<T, Fut>(&self, op: impl FnOnce(S) -> Fut) -> Result<T, StoreError>
    where
        Fut: Future<Output = Result<T, S::Error>> + Send + 'static,
        T: Send + 'static,
    {
        let future = op(self.store.clone());
        let answer = match &self.runtime {
            None => futures::executor::block_on(future),
            Some(runtime) => futures::executor::block_on(runtime.spawn(future))
                .map_err(|e| StoreError::Backend(Box::new(e)))?,
        };
        answer.map_err(BackendError::into_store_error)
    }

    /// Waits for `future`, which may borrow (a review desk's answer): a file store's is ready at
    /// once; a PostgreSQL store's runs here while the store's runtime drives its connections.
    /// Not from inside a runtime.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        match &self.runtime {
            None => futures::executor::block_on(future),
            Some(runtime) => runtime.block_on(future),
        }
    }

    /// A watch on what may give `me` work: its inbox and the tasks.
    pub fn watch(&self, me: &AgentName) -> Result<ChangeWatch, StoreError> {
        S::watch(self, me, Watched::Work)
    }

    /// A watch on `me`'s inbox alone.
    pub fn watch_inbox(&self, me: &AgentName) -> Result<ChangeWatch, StoreError> {
        S::watch(self, me, Watched::Inbox)
    }
}

/// What a watch wakes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
    /// The worker's inbox and the tasks.
    Work,
    Inbox,
}

/// What differs between backends beyond the store's operations.
pub trait LinkedStore: TeamStore + Clone + 'static {
    fn watch(
        link: &TeamLink<Self>,
        me: &AgentName,
        what: Watched,
    ) -> Result<ChangeWatch, StoreError>;

    /// The heartbeat's part beyond the status: on PostgreSQL the leases on `me`'s tasks are
    /// renewed (a host that goes silent loses them); on files a claim is held by the pid.
    fn renew_leases(link: &TeamLink<Self>, me: &AgentName) -> Result<(), StoreError>;

    /// The checkout whose files are the store, if they are.
    fn files(&self) -> Option<&Workspace>;

    /// What a crew command a CLI agent starts (its MCP server) is given to reach this store:
    /// nothing for a checkout's files (it runs there), `--store` and this role's URL (no
    /// password: the command reads it as the worker did) for PostgreSQL.
    fn store_args(&self) -> Vec<String>;
}

impl LinkedStore for FileStore {
    fn watch(
        link: &TeamLink<Self>,
        _me: &AgentName,
        what: Watched,
    ) -> Result<ChangeWatch, StoreError> {
        let ws = link.store.workspace();
        let (inboxes, tasks) = (ws.mailboxes_dir(), ws.tasks_dir());
        let dirs: &[&std::path::Path] = match what {
            Watched::Work => &[&inboxes, &tasks],
            Watched::Inbox => &[&inboxes],
        };
        DirWatcher::new(dirs).map(ChangeWatch::Files)
    }

    fn renew_leases(_link: &TeamLink<Self>, _me: &AgentName) -> Result<(), StoreError> {
        Ok(())
    }

    fn files(&self) -> Option<&Workspace> {
        Some(self.workspace())
    }

    fn store_args(&self) -> Vec<String> {
        Vec::new()
    }
}

impl LinkedStore for PgStore {
    fn watch(
        link: &TeamLink<Self>,
        me: &AgentName,
        what: Watched,
    ) -> Result<ChangeWatch, StoreError> {
        let runtime = link
            .runtime
            .clone()
            .ok_or_else(|| StoreError::Backend("a PostgreSQL link without a runtime".into()))?;
        let store = link.store.clone();
        let wakeups = runtime
            .block_on(async move { store.wakeups().await })
            .map_err(BackendError::into_store_error)?;
        Ok(ChangeWatch::Postgres {
            wakeups,
            me: me.to_string(),
            what,
            runtime,
            stop: Arc::new(Notify::new()),
        })
    }

    fn renew_leases(link: &TeamLink<Self>, me: &AgentName) -> Result<(), StoreError> {
        let me = me.clone();
        link.call(|store| async move {
            let lease = store.lease();
            store.heartbeat(&me, lease).await.map(|_| ())
        })
    }

    fn files(&self) -> Option<&Workspace> {
        None
    }

    fn store_args(&self) -> Vec<String> {
        vec!["--store".into(), self.shown_url()]
    }
}

/// Sleeps until something changes for a worker: a file event in `.mailboxes` or `.tasks`, or a
/// PostgreSQL notification for the tasks or its own inbox.
pub enum ChangeWatch {
    Files(DirWatcher),
    Postgres {
        wakeups: Wakeups,
        me: String,
        what: Watched,
        runtime: Handle,
        stop: Arc<Notify>,
    },
}

/// Ends a [`ChangeWatch::wait`] at once from another thread.
#[derive(Clone)]
pub enum Stopper {
    Files(Waker),
    Postgres(Arc<Notify>),
}

impl Stopper {
    pub fn stop(&self) {
        match self {
            Stopper::Files(waker) => waker.wake(),
            // A permit is kept when nobody waits yet, so a stop never falls between two waits.
            Stopper::Postgres(notify) => notify.notify_one(),
        }
    }
}

impl ChangeWatch {
    pub fn stopper(&self) -> Stopper {
        match self {
            ChangeWatch::Files(watcher) => Stopper::Files(watcher.waker()),
            ChangeWatch::Postgres { stop, .. } => Stopper::Postgres(Arc::clone(stop)),
        }
    }

    /// Waits up to `timeout`; true when something changed (or a stop came).
    pub fn wait(&mut self, timeout: Duration) -> bool {
        match self {
            ChangeWatch::Files(watcher) => watcher.wait(timeout),
            ChangeWatch::Postgres {
                wakeups,
                me,
                what,
                runtime,
                stop,
            } => runtime.block_on(async {
                let deadline = Instant::now() + timeout;
                let relevant = async {
                    loop {
                        let left = deadline.saturating_duration_since(Instant::now());
                        match wakeups.wait(left).await {
                            None => return false,
                            // Another's inbox: not for this worker.
                            Some(Wake::Inbox(to)) if to != *me => {}
                            Some(Wake::Tasks) if *what == Watched::Inbox => {}
                            Some(_) => return true,
                        }
                    }
                };
                tokio::select! {
                    () = stop.notified() => true,
                    woke = relevant => woke,
                }
            }),
        }
    }
}
