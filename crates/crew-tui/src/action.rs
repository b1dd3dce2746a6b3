//! What a key can do, by name (as written in keymap files) with the help text shown for it.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Quit,
    Help,
    FocusNext,
    FocusPrev,
    FocusLead,
    FocusTeammates,
    FocusTasks,
    FocusMailboxes,
    FocusApprovals,
    Zoom,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Open,
    Back,
    Send,
    Newline,
    HistoryPrev,
    HistoryNext,
    Approve,
    Deny,
    Always,
    AddTask,
    Release,
    Diff,
    Message,
    NextFile,
    PrevFile,
    NextHunk,
    PrevHunk,
    SideBySide,
    Merge,
    SendBack,
    Discard,
    Confirm,
    Cancel,
    NextField,
    Expand,
    PrevCall,
    NextCall,
    Shutdown,
    Restart,
    EditDeps,
    Assign,
    Interrupt,
    Memories,
    StopTeam,
    MergeQueue,
    QueuePause,
    QueueRemove,
    QueueRetry,
}

/// (name in keymap files, action, help text)
pub(crate) const ACTIONS: &[(&str, Action, &str)] = &[
    ("quit", Action::Quit, "detach (the team keeps running)"),
    ("stop_team", Action::StopTeam, "stop the team (asks first)"),
    ("help", Action::Help, "show or hide this help"),
    ("focus_next", Action::FocusNext, "focus the next pane"),
    ("focus_prev", Action::FocusPrev, "focus the previous pane"),
    ("focus_lead", Action::FocusLead, "focus the lead pane"),
    (
        "focus_teammates",
        Action::FocusTeammates,
        "focus the teammates",
    ),
    ("focus_tasks", Action::FocusTasks, "focus the tasks"),
    (
        "focus_mailboxes",
        Action::FocusMailboxes,
        "focus the mailboxes",
    ),
    (
        "focus_approvals",
        Action::FocusApprovals,
        "focus the approvals",
    ),
    ("zoom", Action::Zoom, "zoom the focused pane"),
    ("up", Action::Up, "move up"),
    ("down", Action::Down, "move down"),
    ("left", Action::Left, "previous (inbox, teammate)"),
    ("right", Action::Right, "next (inbox, teammate)"),
    ("page_up", Action::PageUp, "scroll up a page"),
    ("page_down", Action::PageDown, "scroll down a page"),
    ("top", Action::Top, "go to the top"),
    ("bottom", Action::Bottom, "go to the bottom"),
    ("open", Action::Open, "open / read the selection"),
    ("back", Action::Back, "close / go back"),
    ("send", Action::Send, "send the message"),
    ("newline", Action::Newline, "new line in the message"),
    ("history_prev", Action::HistoryPrev, "previous sent message"),
    ("history_next", Action::HistoryNext, "next sent message"),
    ("approve", Action::Approve, "approve the request"),
    ("deny", Action::Deny, "deny the request"),
    (
        "always",
        Action::Always,
        "always allow this (adds a rule); on a review: approve into the merge queue",
    ),
    ("add_task", Action::AddTask, "add a task"),
    ("release", Action::Release, "take the task back to the pool"),
    ("diff", Action::Diff, "review the teammate's diff"),
    ("message", Action::Message, "message the teammate"),
    ("next_file", Action::NextFile, "next file"),
    ("prev_file", Action::PrevFile, "previous file"),
    ("next_hunk", Action::NextHunk, "next hunk"),
    ("prev_hunk", Action::PrevHunk, "previous hunk"),
    ("side_by_side", Action::SideBySide, "unified / side by side"),
    ("merge", Action::Merge, "merge into the base branch"),
    (
        "merge_queue",
        Action::MergeQueue,
        "show / leave the merge queue",
    ),
    (
        "queue_pause",
        Action::QueuePause,
        "pause / resume the merge queue",
    ),
    (
        "queue_remove",
        Action::QueueRemove,
        "take the task out of the merge queue",
    ),
    ("queue_retry", Action::QueueRetry, "retry the failed task"),
    ("send_back", Action::SendBack, "send back with a note"),
    ("discard", Action::Discard, "discard the worktree"),
    ("confirm", Action::Confirm, "confirm"),
    ("cancel", Action::Cancel, "cancel"),
    ("next_field", Action::NextField, "next field"),
    (
        "expand",
        Action::Expand,
        "unfold / fold the selected tool call",
    ),
    (
        "prev_call",
        Action::PrevCall,
        "select the previous tool call",
    ),
    ("next_call", Action::NextCall, "select the next tool call"),
    (
        "shutdown",
        Action::Shutdown,
        "ask the teammate to shut down",
    ),
    (
        "restart",
        Action::Restart,
        "restart the teammate (when dead or shut down)",
    ),
    (
        "edit_deps",
        Action::EditDeps,
        "edit the task's dependencies",
    ),
    ("assign", Action::Assign, "assign the task to a teammate"),
    (
        "interrupt",
        Action::Interrupt,
        "interrupt the agent; twice: release its task",
    ),
    (
        "memories",
        Action::Memories,
        "show the agent's memories (read-only)",
    ),
];

impl Action {
    pub(crate) fn from_name(name: &str) -> Option<Action> {
        ACTIONS
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, a, _)| *a)
    }

    pub(crate) fn name(self) -> &'static str {
        ACTIONS
            .iter()
            .find(|(_, a, _)| *a == self)
            .map_or("?", |(n, _, _)| n)
    }

    pub(crate) fn help(self) -> &'static str {
        ACTIONS
            .iter()
            .find(|(_, a, _)| *a == self)
            .map_or("", |(_, _, h)| h)
    }
}
