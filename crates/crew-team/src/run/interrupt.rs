//! Interrupting an agent: the person's `interrupt` message travels through the inbox like the
//! other protocol messages; the agent's worker, watching its inbox while it works, stops the
//! model call and the running tool's process group, keeps its task and waits for the person's
//! next message (`team::worker`).

use crew_protocol::USER;
use crew_store::MessageKind;
use crew_store::{AgentName, Draft, Message, Refusal, Roster, StoreError, Workspace};

/// Asks `name` to stop what it is doing now.
pub fn interrupt(
    workspace: &Workspace,
    roster: &Roster,
    name: &AgentName,
) -> Result<Message, StoreError> {
    if *name == USER {
        return Err(Refusal::UnknownAgent {
            role: "agent",
            name: name.to_string(),
            valid: roster
                .names()
                .iter()
                .filter(|n| **n != USER)
                .cloned()
                .collect(),
        }
        .into());
    }
    workspace.mailboxes().send(
        roster,
        Draft {
            kind: MessageKind::Interrupt,
            text: Some("stop what you are doing now".into()),
            ..Draft::new(USER, name.clone())
        },
    )
}
