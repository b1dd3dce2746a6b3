//! A worker's live status: kept in memory, written to the team store (`.crew/agents/<name>.json`
//! on files, a row on PostgreSQL) on every change and on every heartbeat.

use std::sync::{Arc, Mutex, MutexGuard};

use crew_store::{AgentStatus, StoreError};

use crate::run::link::{LinkedStore, TeamLink};

type WriteStatus = dyn Fn(&AgentStatus) -> Result<(), StoreError> + Send + Sync;

#[derive(Clone)]
pub struct StatusHandle {
    inner: Arc<Mutex<AgentStatus>>,
    // Whichever store it is written to: the work a worker runs holds the handle, and need not
    // know the backend.
    write: Arc<WriteStatus>,
}

impl StatusHandle {
    pub(crate) fn new<S: LinkedStore>(
        link: &TeamLink<S>,
        status: AgentStatus,
    ) -> Result<Self, StoreError> {
        let link = link.clone();
        let write = move |status: &AgentStatus| {
            let status = status.clone();
            link.call(|store| async move { store.write_status(&status).await })
        };
        write(&status)?;
        Ok(StatusHandle {
            inner: Arc::new(Mutex::new(status)),
            write: Arc::new(write),
        })
    }

    fn lock(&self) -> MutexGuard<'_, AgentStatus> {
        // A panic while holding this lock cannot leave the status half-updated in a way that
        // matters (every field is written whole), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn get(&self) -> AgentStatus {
        self.lock().clone()
    }

    /// Changes the status and writes it at once, with a fresh heartbeat.
    pub(crate) fn update(&self, change: impl FnOnce(&mut AgentStatus)) -> Result<(), StoreError> {
        let snapshot = {
            let mut status = self.lock();
            change(&mut status);
            status.heartbeat = crew_store::task::now_rfc3339();
            status.clone()
        };
        (self.write)(&snapshot)
    }

    pub(crate) fn beat(&self) -> Result<(), StoreError> {
        self.update(|_| {})
    }
}
