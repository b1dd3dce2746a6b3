//! An agent's life: WORK, WAITING, IDLE, SHUTDOWN, DEAD.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An agent's state in `.crew/agents/<name>.json` (ARCHITECTURE.md, "Workers").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AgentState {
    /// Running the agent loop on a task or a message.
    Work,
    /// Inside WORK, blocked on a person (a permission or plan approval).
    Waiting,
    /// Nothing to do: watching its inbox and the tasks.
    Idle,
    Shutdown,
    /// Found gone (pid missing or heartbeat stale) by the supervisor.
    Dead,
}

impl AgentState {
    /// Every state, in the order the screen counts them.
    pub const ALL: [AgentState; 5] = [
        AgentState::Work,
        AgentState::Waiting,
        AgentState::Idle,
        AgentState::Shutdown,
        AgentState::Dead,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Work => "WORK",
            AgentState::Waiting => "WAITING",
            AgentState::Idle => "IDLE",
            AgentState::Shutdown => "SHUTDOWN",
            AgentState::Dead => "DEAD",
        }
    }

    /// Shut down or dead: nothing more will come from it until restarted.
    pub fn is_final(self) -> bool {
        matches!(self, AgentState::Shutdown | AgentState::Dead)
    }

    /// Alive: it can be told something and will act on it.
    pub fn is_live(self) -> bool {
        !self.is_final()
    }
}

impl fmt::Display for AgentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_states_use_their_upper_case_names() {
        for state in AgentState::ALL {
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
            assert_eq!(serde_json::from_str::<AgentState>(&json).unwrap(), state);
        }
    }
}
