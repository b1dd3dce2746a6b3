//! What reaches the screen (`Event`) and what the screen asks to be done (`Effect`). Effects
//! run off the input path; their results come back as events.

use std::time::SystemTime;

use ratatui::crossterm::event::{KeyEvent, MouseEvent};

use crate::data::Change;
use crate::highlight::Segments;
use crew_git::{FileDiff, MergeOutcome, WorktreeDiff};
use crew_protocol::control::DaemonStatus;
use crew_store::{AgentName, Message, NewTask, RequestInfo, TaskId};
use crew_team::review::Review;

#[derive(Debug)]
pub enum Event {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    Tick(SystemTime),
    Data(Vec<Change>),
    /// What the team's daemon says about itself; `None` once it is gone.
    Daemon(Option<DaemonStatus>),
    Diff {
        name: AgentName,
        /// The task whose commits these are, for a review's diff.
        task: Option<TaskId>,
        result: Result<WorktreeDiff, String>,
    },
    Reviews(Result<Vec<Review>, String>),
    /// The merge queue as loaded for its view.
    Queue(Result<crate::queue_view::QueueSnapshot, String>),
    FileHighlighted {
        name: AgentName,
        file: usize,
        hunks: Vec<Segments>,
    },
    CommandHighlighted {
        request_id: crew_store::RequestId,
        segments: Segments,
    },
    /// What a write/edit request would change (or why that cannot be shown).
    Proposal {
        request_id: crew_store::RequestId,
        diff: Result<Box<FileDiff>, String>,
    },
    ProposalHighlighted {
        request_id: crew_store::RequestId,
        hunks: Vec<Segments>,
    },
    Merged {
        name: AgentName,
        result: Result<MergeOutcome, String>,
    },
    Discarded {
        name: AgentName,
        result: Result<(), String>,
    },
    /// A store action finished: what to tell the person.
    Done(Result<String, String>),
    /// What the merge queue the screen runs did (a team on the store).
    Said(String),
}

#[derive(Debug, Clone)]
pub enum Effect {
    Respond {
        request_id: crew_store::RequestId,
        approve: bool,
        /// What the asking agent is told with the answer (the person's note on a denial).
        note: Option<String>,
    },
    /// Add the allow rule to crew.toml, then approve.
    AllowAndApprove {
        request_id: crew_store::RequestId,
        rule: String,
    },
    Send {
        to: AgentName,
        text: String,
    },
    AddTask(NewTask),
    SetDeps {
        id: TaskId,
        blocked_by: Vec<TaskId>,
    },
    /// Give a task to a teammate, or (None) back to the pool.
    Assign {
        id: TaskId,
        to: Option<AgentName>,
    },
    /// A `shutdown_request` from the person to a teammate.
    /// The person's interrupt, through the agent's inbox.
    Interrupt {
        name: AgentName,
    },
    RequestShutdown {
        name: AgentName,
    },
    /// Ask the team's daemon to stop the team (through the shutdown protocol).
    StopTeam,
    /// End what still runs of a stopping team now.
    ForceStop,
    /// Start a dead or shut-down teammate again with `exe worker --name NAME`.
    Restart {
        name: AgentName,
        exe: std::path::PathBuf,
    },
    /// A worktree's diff, or (with `task`) only that task's commits.
    LoadDiff {
        name: AgentName,
        task: Option<TaskId>,
    },
    LoadReviews,
    /// Approve a task in review into the merge queue.
    ApproveReview {
        id: TaskId,
    },
    LoadQueue,
    PauseQueue {
        paused: bool,
    },
    RemoveFromQueue {
        id: TaskId,
    },
    RetryInQueue {
        id: TaskId,
    },
    MergeReview {
        id: TaskId,
    },
    SendBackReview {
        id: TaskId,
        note: String,
    },
    DiscardReview {
        id: TaskId,
        reason: String,
    },
    HighlightFile {
        name: AgentName,
        file: usize,
        diff: Box<crew_git::FileDiff>,
        theme: String,
    },
    HighlightCommand {
        request_id: crew_store::RequestId,
        command: String,
        theme: String,
    },
    /// Work out the diff a write/edit request would make.
    PrepareProposal {
        request_id: crew_store::RequestId,
        request: Box<Message>,
    },
    HighlightProposal {
        request_id: crew_store::RequestId,
        diff: Box<FileDiff>,
        theme: String,
    },
    Merge {
        name: AgentName,
    },
    Discard {
        name: AgentName,
    },
    Bell,
    /// OSC 9 / OSC 777: a desktop notification, where the terminal supports it.
    DesktopNotify {
        text: String,
    },
    Notify {
        command: String,
        request: Box<RequestInfo>,
    },
}
