//! What reaches the screen (`Event`) and what the screen asks to be done (`Effect`). Effects
//! run off the input path; their results come back as events.

use std::time::SystemTime;

use ratatui::crossterm::event::{KeyEvent, MouseEvent};

use crate::data::Change;
use crate::highlight::Segments;
use crew_git::{FileDiff, MergeOutcome, WorktreeDiff};
use crew_store::{Message, NewTask, RequestInfo};
use crew_team::review::Review;
use crew_team::run::daemon::DaemonStatus;

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
        name: String,
        /// The task whose commits these are, for a review's diff.
        task: Option<String>,
        result: Result<WorktreeDiff, String>,
    },
    Reviews(Result<Vec<Review>, String>),
    FileHighlighted {
        name: String,
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
        name: String,
        result: Result<MergeOutcome, String>,
    },
    Discarded {
        name: String,
        result: Result<(), String>,
    },
    /// A store action finished: what to tell the person.
    Done(Result<String, String>),
}

#[derive(Debug, Clone)]
pub enum Effect {
    Respond {
        request_id: crew_store::RequestId,
        approve: bool,
    },
    /// Add the allow rule to crew.toml, then approve.
    AllowAndApprove {
        request_id: crew_store::RequestId,
        rule: String,
    },
    Send {
        to: String,
        text: String,
    },
    AddTask(NewTask),
    SetDeps {
        id: String,
        blocked_by: Vec<String>,
    },
    /// Give a task to a teammate, or (None) back to the pool.
    Assign {
        id: String,
        to: Option<String>,
    },
    /// A `shutdown_request` from the person to a teammate.
    /// The person's interrupt, through the agent's inbox.
    Interrupt {
        name: String,
    },
    RequestShutdown {
        name: String,
    },
    /// Ask the team's daemon to stop the team (through the shutdown protocol).
    StopTeam,
    /// End what still runs of a stopping team now.
    ForceStop,
    /// Start a dead or shut-down teammate again with `exe worker --name NAME`.
    Restart {
        name: String,
        exe: std::path::PathBuf,
    },
    /// A worktree's diff, or (with `task`) only that task's commits.
    LoadDiff {
        name: String,
        task: Option<String>,
    },
    LoadReviews,
    MergeReview {
        id: String,
    },
    SendBackReview {
        id: String,
        note: String,
    },
    DiscardReview {
        id: String,
        reason: String,
    },
    HighlightFile {
        name: String,
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
        name: String,
    },
    Discard {
        name: String,
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
