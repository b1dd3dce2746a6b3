//! The screen's state as plain data: what was loaded, what is focused and selected, which dialog
//! is open. Render functions read it; `update` changes it.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::SystemTime;

use ratatui_textarea::TextArea;

use crate::diffview::DiffView;
use crate::highlight::Segments;
use crate::keymap::{Keymap, Mode};
use crate::keys::Chord;
use crate::memories::MemoryView;
use crate::queue_view::QueueView;
use crate::theme::Theme;
use crate::warning::Warning;
use crate::workspace_view::WorkspaceView;
use crew_git::FileDiff;
use crew_protocol::control::{DaemonStatus, StopProgress};
use crew_store::{AgentName, AgentStatus, TaskId};
use crew_team::review::Review;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pane {
    Lead,
    Teammates,
    Tasks,
    Mailboxes,
    Approvals,
}

pub(crate) const PANES: [Pane; 5] = [
    Pane::Lead,
    Pane::Teammates,
    Pane::Tasks,
    Pane::Mailboxes,
    Pane::Approvals,
];

impl Pane {
    pub fn title(self) -> &'static str {
        match self {
            Pane::Lead => "lead",
            Pane::Teammates => "teammates",
            Pane::Tasks => "tasks",
            Pane::Mailboxes => "mailboxes",
            Pane::Approvals => "approvals",
        }
    }

    pub(crate) fn mode(self) -> Mode {
        match self {
            Pane::Lead => Mode::Lead,
            Pane::Teammates => Mode::Teammates,
            Pane::Tasks => Mode::Tasks,
            Pane::Mailboxes => Mode::Mailboxes,
            Pane::Approvals => Mode::Approvals,
        }
    }
}

/// What a text dialog is for.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptKind {
    AddTask,
    Message {
        to: AgentName,
    },
    SendBack {
        to: AgentName,
    },
    /// Replace a task's `blockedBy`.
    EditDeps {
        id: TaskId,
    },
    /// Give a task to a teammate (empty: to nobody).
    Assign {
        id: TaskId,
    },
    /// Send a task in review back to its teammate with a note.
    ReviewSendBack {
        id: TaskId,
    },
    /// Discard a task in review, with the reason.
    ReviewDiscard {
        id: TaskId,
    },
    /// Deny a permission request, with a note for the agent that asked (may be empty).
    Deny {
        request_id: crew_store::RequestId,
        from: AgentName,
    },
}

/// Which tool calls of one agent's transcript are unfolded, and which one the keys act on
/// (row numbers, see `Kept`).
#[derive(Debug, Default, Clone)]
pub struct Folds {
    pub selected: Option<u64>,
    pub open: HashSet<u64>,
}

pub struct Prompt {
    pub kind: PromptKind,
    pub fields: Vec<(String, TextArea<'static>)>,
    pub active: usize,
}

/// The diff a write/edit request would make, once worked out.
pub struct Proposal {
    pub diff: Result<Box<FileDiff>, String>,
    /// Per hunk, per line, once the highlighter has been through it.
    pub highlights: Option<Vec<Segments>>,
}

/// What a yes/no dialog would do.
#[derive(Debug, Clone, PartialEq)]
pub enum Confirm {
    Always {
        request_id: crew_store::RequestId,
        rule: String,
    },
    Discard {
        name: AgentName,
    },
    Shutdown {
        name: AgentName,
    },
    /// Stop the whole team (not only this screen).
    StopTeam,
    /// After a second interrupt: give the agent's task back to the pool.
    ReleaseTask {
        name: AgentName,
        id: TaskId,
    },
}

pub enum Overlay {
    Help {
        scroll: u16,
    },
    Prompt(Prompt),
    Confirm(Confirm),
    /// An agent's memories, read-only.
    Memories(MemoryView),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

pub struct AppState {
    pub root: PathBuf,
    pub workspace: WorkspaceView,
    pub theme: Theme,
    pub keymap: Keymap,
    /// "Now" for ages; injected so snapshots are stable.
    pub now: SystemTime,
    pub focus: Pane,
    pub zoom: bool,
    pub selected: HashMap<Pane, usize>,
    pub scroll: HashMap<Pane, usize>,
    pub task_open: bool,
    pub input: TextArea<'static>,
    pub history: Vec<String>,
    pub history_pos: Option<usize>,
    pub overlay: Option<Overlay>,
    pub diff: Option<DiffView>,
    /// The merge queue's view, when open.
    pub queue: Option<QueueView>,
    pub pending_keys: Vec<Chord>,
    pub status: Option<(Level, String)>,
    pub warnings: Vec<Warning>,
    pub size: (u16, u16),
    /// Unfolded tool calls, per agent.
    pub folds: HashMap<AgentName, Folds>,
    /// The `crew` executable that restarts a teammate (`crew worker --name NAME`).
    pub worker_exe: PathBuf,
    /// How the team's commands run, for the header.
    pub sandbox: SandboxState,
    /// What write/edit requests would change, by request id, with their syntax highlighting.
    pub proposals: HashMap<crew_store::RequestId, Proposal>,
    /// Syntax-highlighted bash commands of requests, by request id.
    pub commands: HashMap<crew_store::RequestId, Segments>,
    /// The agent last interrupted and when: a second press soon after offers to release its task.
    pub last_interrupt: Option<(AgentName, SystemTime)>,
    /// The tasks waiting for review, with what each would bring (loaded off the input path).
    pub reviews: Vec<Review>,
    /// Watching another tool's team (`crew attach`): what it is, for the header.
    pub attached: Option<String>,
    /// On a team kept in PostgreSQL: the store, as the header names it (no password).
    pub store: Option<String>,
    /// The team's daemon as it last answered, while this screen is attached to one.
    pub daemon: Option<DaemonStatus>,
    /// What changed since this person's screen was last attached, shown once the store is read.
    pub since: Option<crate::since::LastSeen>,
    pub quit: bool,
}

impl AppState {
    pub fn new(root: PathBuf, theme: Theme, keymap: Keymap, now: SystemTime) -> Self {
        AppState {
            root,
            workspace: WorkspaceView::default(),
            theme,
            keymap,
            now,
            focus: Pane::Lead,
            zoom: false,
            selected: HashMap::new(),
            scroll: HashMap::new(),
            task_open: false,
            input: new_input(),
            history: Vec::new(),
            history_pos: None,
            overlay: None,
            diff: None,
            queue: None,
            pending_keys: Vec::new(),
            status: None,
            warnings: Vec::new(),
            size: (0, 0),
            folds: HashMap::new(),
            worker_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("crew")),
            sandbox: SandboxState::Unknown,
            proposals: HashMap::new(),
            commands: HashMap::new(),
            last_interrupt: None,
            reviews: Vec::new(),
            attached: None,
            store: None,
            daemon: None,
            since: None,
            quit: false,
        }
    }

    pub fn selected(&self, pane: Pane) -> usize {
        self.selected.get(&pane).copied().unwrap_or(0)
    }

    pub(crate) fn scroll(&self, pane: Pane) -> usize {
        self.scroll.get(&pane).copied().unwrap_or(0)
    }

    /// The mode keys are looked up in right now.
    pub(crate) fn mode(&self) -> Mode {
        match &self.overlay {
            Some(Overlay::Help { .. }) => Mode::Help,
            Some(Overlay::Prompt(_)) => Mode::Prompt,
            Some(Overlay::Confirm(_)) => Mode::Confirm,
            Some(Overlay::Memories(_)) => Mode::Memory,
            // The stop's progress view: confirming forces the stop.
            None if self.stopping().is_some() => Mode::Confirm,
            None if self.diff.is_some() => Mode::Diff,
            None if self.queue.is_some() => Mode::Queue,
            None => self.focus.mode(),
        }
    }

    /// Where the team's stop has got to, once one was asked for.
    pub(crate) fn stopping(&self) -> Option<&StopProgress> {
        self.daemon.as_ref().and_then(|d| d.stopping.as_ref())
    }

    pub(crate) fn set_status(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some((level, text.into()));
    }

    /// The review selected in the approvals pane (listed after the pending requests).
    pub(crate) fn selected_review(&self) -> Option<&Review> {
        let index = self
            .selected(Pane::Approvals)
            .checked_sub(self.workspace.pending().len())?;
        self.reviews.get(index)
    }

    /// The teammate selected in the teammates pane.
    pub fn selected_teammate(&self) -> Option<AgentName> {
        self.workspace
            .teammates()
            .into_iter()
            .nth(self.selected(Pane::Teammates))
    }

    pub fn agent(&self, name: &str) -> Option<&AgentStatus> {
        self.workspace.agents.get(name)
    }
}

pub(crate) fn new_input() -> TextArea<'static> {
    let mut input = TextArea::default();
    input
        .set_placeholder_text("message the lead (enter sends, esc leaves the box, ctrl-r reviews)");
    input
}

pub(crate) fn new_field(text: &str) -> TextArea<'static> {
    let mut field = TextArea::default();
    field.insert_str(text);
    field
}

/// What the header says about the sandbox the team's commands run in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SandboxState {
    /// Not probed (a screen built by hand, or no readable crew.toml).
    #[default]
    Unknown,
    Confined,
    /// Off or unavailable: commands run unconfined, with this warning.
    Unconfined(String),
}
