//! Who asks the store to change a task, by the standing the team gives it. The store decides
//! who may edit, assign and complete a task on this, never on a name's text, so every path
//! (the agents' tools, MCP, the CLI, the screen) meets the same rules.

use crew_protocol::{AgentName, USER};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor<'a> {
    /// The person (`USER`): the CLI and the screen.
    Person,
    /// The person finishing a task for its owner (`crew task done --as NAME`): the person's
    /// decision, under the owner's name.
    PersonAs(&'a AgentName),
    /// The team's lead.
    Lead(&'a AgentName),
    /// A teammate. A writing one works on its own branch, so its tasks complete only through
    /// review (the merge of their commits).
    Teammate { name: &'a AgentName, writes: bool },
}

impl Actor<'_> {
    pub fn name(&self) -> &AgentName {
        match self {
            Actor::Person => &USER,
            Actor::PersonAs(name) | Actor::Lead(name) | Actor::Teammate { name, .. } => name,
        }
    }

    /// The person and the lead steer the graph: they may change any task.
    pub fn steers(&self) -> bool {
        matches!(self, Actor::Person | Actor::PersonAs(_) | Actor::Lead(_))
    }
}
