//! A worker's live status: kept in memory, written to `.crew/agents/<name>.json` on every change
//! and on every heartbeat.

use std::sync::{Arc, Mutex, MutexGuard};

use crew_store::{AgentStatus, AgentStatuses, StoreError};

#[derive(Clone)]
pub struct StatusHandle {
    inner: Arc<Mutex<AgentStatus>>,
    store: AgentStatuses,
}

impl StatusHandle {
    pub(crate) fn new(store: AgentStatuses, status: AgentStatus) -> Result<Self, StoreError> {
        store.write(&status)?;
        Ok(StatusHandle {
            inner: Arc::new(Mutex::new(status)),
            store,
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
        self.store.write(&snapshot)
    }

    pub(crate) fn beat(&self) -> Result<(), StoreError> {
        self.update(|_| {})
    }
}
