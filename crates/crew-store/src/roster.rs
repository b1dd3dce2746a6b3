//! Who may send and receive: the team from `crew.toml` plus `user`, the person at the screen.
//! A misspelt name is an error listing the valid ones, never a new inbox.

use crate::Refusal;
use crew_protocol::{AgentName, USER};

/// A teammate's name with its role from `crew.toml` (what a claim checks a task's role against).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Teammate {
    pub name: AgentName,
    pub role: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Roster {
    names: Vec<AgentName>,
}

impl Roster {
    /// `names` are the lead and the teammates; `user` is always added.
    pub fn new(names: impl IntoIterator<Item = AgentName>) -> Self {
        let mut all: Vec<AgentName> = names.into_iter().collect();
        if !all.contains(&USER) {
            all.push(USER);
        }
        Roster { names: all }
    }

    pub fn names(&self) -> &[AgentName] {
        &self.names
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| *n == *name)
    }

    pub fn check(&self, role: &'static str, name: &str) -> Result<(), Refusal> {
        if self.contains(name) {
            Ok(())
        } else {
            Err(Refusal::UnknownAgent {
                role,
                name: name.chars().take(64).collect(),
                valid: self.names.clone(),
            })
        }
    }
}
