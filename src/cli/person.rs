//! The person's side of the protocol. Answering a request, sending as `user`, merging, changing
//! tasks, starting or stopping the team: these act for the person or the team, so a process an
//! agent's tool started may not run them, whatever names it passes (`--as user`). Every tool
//! process carries the owner mark that `tools::process` sets and its children inherit; the
//! sandbox is what makes this hold against an agent that removes the mark, since a confined
//! process cannot write the store at all. Reading (lists, diffs, `inbox --peek`) stays open.

use crate::cli::args::{
    Command, InboxArgs, QueueCommand, ReviewCommand, StoreCommand, TaskCommand, WorktreeCommand,
};
use crate::cli::exit::CliError;
use crew_tools::orphans::OWNER_ENV;

/// Refuses `command` when this process was started by an agent's tool and the command acts
/// for the team (exit 3, saying why).
pub fn check(command: Option<&Command>) -> Result<(), CliError> {
    let Some(owner) = std::env::var_os(OWNER_ENV) else {
        return Ok(());
    };
    let Some(action) = acts_for_the_team(command) else {
        return Ok(());
    };
    Err(CliError::Refused(format!(
        "`crew {action}` acts for the person or the team, and this process was started by an \
         agent's tool ({OWNER_ENV}={}); only the person does this, from the screen or their \
         own terminal. Agents use their team tools; reading (lists, shows, diffs, \
         `inbox --peek`) stays open.",
        owner.to_string_lossy()
    )))
}

/// The command's name when it changes the team's state or speaks for someone; `None` for reads.
fn acts_for_the_team(command: Option<&Command>) -> Option<&'static str> {
    let Some(command) = command else {
        return Some("up");
    };
    match command {
        // `sandbox-exec` is run by `cli::main` before this check (it only confines itself).
        Command::Init(_)
        | Command::Requests(_)
        | Command::Status { .. }
        | Command::Replay { .. }
        | Command::Skills(_)
        | Command::Memory(_)
        | Command::SandboxExec(_) => None,
        Command::Inbox(InboxArgs { peek: true, .. }) => None,
        // Reading without --peek moves the owner's cursor: the owner would miss messages.
        Command::Inbox(_) => Some("inbox"),
        Command::Task(
            TaskCommand::List { .. } | TaskCommand::Show { .. } | TaskCommand::Graph { .. },
        ) => None,
        Command::Task(_) => Some("task"),
        Command::Worktree(WorktreeCommand::List { .. } | WorktreeCommand::Diff { .. }) => None,
        Command::Worktree(_) => Some("worktree"),
        Command::Review(
            ReviewCommand::List { .. } | ReviewCommand::Show { .. } | ReviewCommand::Diff { .. },
        ) => None,
        // Merging, sending back or discarding answers a review: the person's call.
        Command::Review(_) => Some("review"),
        Command::Queue(QueueCommand::List { .. }) => None,
        // Pausing, removing or retrying steers what merges: the person's call.
        Command::Queue(_) => Some("queue"),
        Command::Store(StoreCommand::Status { .. } | StoreCommand::Agents { .. }) => None,
        // Makes who may log in as an agent.
        Command::Store(StoreCommand::AddAgent { .. }) => Some("store add-agent"),
        // Changes the team every host works to.
        Command::Store(StoreCommand::Publish { .. }) => Some("store publish"),
        // Changes the schema of the store the whole team works in.
        Command::Store(StoreCommand::Migrate { .. }) => Some("store migrate"),
        // All three of those at once.
        Command::Store(StoreCommand::Setup { .. }) => Some("store setup"),
        Command::Send(_) => Some("send"),
        Command::Respond(_) => Some("respond"),
        Command::Down { .. } => Some("down"),
        Command::Interrupt { .. } => Some("interrupt"),
        Command::Up(_) => Some("up"),
        Command::Worker(_) => Some("worker"),
        Command::Demo(_) => Some("demo"),
        Command::Ui(_) => Some("ui"),
        // An agent's CLI starts its own `crew mcp`: `cli::mcp` lets a tool process speak only as
        // the agent that owns it.
        Command::Mcp(_) => None,
        // Answers teammates' permission requests for the person.
        Command::Attach(_) => Some("attach"),
        // Changes how the person's Claude Code launches teammates.
        Command::Claude(_) => Some("claude setup"),
        // Run by `cli::main` before this check; it starts Claude Code as Claude Code asked.
        Command::CcTeammate(_) => None,
        // Asks the person and hands work in for a Claude Code teammate: never an agent's tool.
        Command::CcTeammateHook(_) => Some("cc-teammate-hook"),
    }
}
