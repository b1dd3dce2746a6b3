//! An agent's memories kept in the team's store rather than in the memory folders of its host,
//! for a teammate that joined from another machine: its own memories follow it to any host,
//! and the team's are the whole team's.

use crew_store::{AgentMemory, AgentName, Memory, MemoryDraft, MemoryScope, StoreError};

use crate::run::link::{LinkedStore, TeamLink};

pub(crate) struct StoreMemory<S: LinkedStore> {
    pub link: TeamLink<S>,
    pub agent: AgentName,
}

impl<S: LinkedStore> std::fmt::Debug for StoreMemory<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreMemory")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl<S: LinkedStore> AgentMemory for StoreMemory<S> {
    fn agent(&self) -> &AgentName {
        &self.agent
    }

    fn write(&self, draft: &MemoryDraft) -> Result<bool, StoreError> {
        let (who, draft) = (self.agent.clone(), draft.clone());
        self.link
            .call(|store| async move { store.write_memory(&who, &draft).await })
    }

    fn read(&self, scope: Option<MemoryScope>, name: &str) -> Result<Memory, StoreError> {
        let (who, name) = (self.agent.clone(), name.to_string());
        self.link
            .call(|store| async move { store.memory(&who, scope, &name).await })
    }

    fn forget(&self, scope: MemoryScope, name: &str) -> Result<(), StoreError> {
        let (who, name) = (self.agent.clone(), name.to_string());
        self.link
            .call(|store| async move { store.forget_memory(&who, scope, &name).await })
    }

    fn list(&self, scope: MemoryScope) -> (Vec<Memory>, Vec<StoreError>) {
        let who = self.agent.clone();
        match self
            .link
            .call(|store| async move { store.memories(&who, scope).await })
        {
            Ok(memories) => (memories, Vec::new()),
            Err(e) => (Vec::new(), vec![e]),
        }
    }
}
