//! An agent's memories on the screen, read-only: the list (its own and the team's, stale ones
//! marked) and one memory's body. Loaded from `.crew/memory/` when opened (a few small files,
//! bounded by `[limits]`); render it with `render::memories`.

use std::path::Path;

use crate::action::Action;
use crate::state::{AppState, Level, Overlay, Pane};
use crew_store::{AgentName, MemoryBook, MemoryScope};

/// One memory as the screen shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryEntry {
    pub team: bool,
    pub name: String,
    pub kind: &'static str,
    pub description: String,
    pub body: String,
    /// Paths it names that are gone from the agent's checkout.
    pub stale: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryView {
    pub agent: AgentName,
    pub entries: Vec<MemoryEntry>,
    /// Files that could not be read, with why.
    pub broken: Vec<String>,
    pub selected: usize,
    /// The selected memory's body is shown instead of the list.
    pub open: bool,
    pub scroll: u16,
}

impl MemoryView {
    /// `agent`'s memories and the team's under `root`; staleness is judged in the agent's
    /// worktree when it has one, else in the repository.
    pub(crate) fn load(root: &Path, agent: &AgentName) -> Self {
        let book = MemoryBook::new(&root.join(".crew"), agent);
        let worktree = root.join(".worktrees").join(agent);
        let checkout = if worktree.is_dir() {
            worktree
        } else {
            root.to_path_buf()
        };
        let mut entries = Vec::new();
        let mut broken = Vec::new();
        for scope in [MemoryScope::Agent, MemoryScope::Team] {
            let (memories, bad) = book.list(scope);
            entries.extend(memories.into_iter().map(|m| MemoryEntry {
                team: scope == MemoryScope::Team,
                stale: m.missing_paths(&checkout),
                name: m.name,
                kind: m.kind.as_str(),
                description: m.description,
                body: m.body,
            }));
            // Paths from the repository root: shorter, and the same wherever it is.
            let prefix = format!("{}/", root.display());
            broken.extend(bad.iter().map(|e| e.to_string().replace(&prefix, "")));
        }
        MemoryView {
            agent: agent.clone(),
            entries,
            broken,
            selected: 0,
            open: false,
            scroll: 0,
        }
    }

    pub(crate) fn current(&self) -> Option<&MemoryEntry> {
        self.entries.get(self.selected)
    }
}

/// Opens the memories of the agent in focus: the lead in its pane, else the selected teammate.
pub(crate) fn open(state: &mut AppState) {
    let agent = match state.focus {
        Pane::Teammates => state.selected_teammate(),
        _ => Some(state.workspace.lead_name()),
    };
    match agent {
        Some(agent) => {
            state.overlay = Some(Overlay::Memories(MemoryView::load(&state.root, &agent)))
        }
        None => state.set_status(Level::Warning, "no teammate selected"),
    }
}

/// A key while the memories are shown: move, open a body, go back, close.
pub(crate) fn act(state: &mut AppState, mut view: MemoryView, action: Action) {
    let last = view.entries.len().saturating_sub(1);
    match action {
        Action::Back | Action::Cancel | Action::Memories if view.open => {
            view.open = false;
            view.scroll = 0;
        }
        Action::Back | Action::Cancel | Action::Memories => return,
        Action::Open if view.current().is_some() => view.open = !view.open,
        Action::Up if view.open => view.scroll = view.scroll.saturating_sub(1),
        Action::Down if view.open => view.scroll = view.scroll.saturating_add(1),
        Action::Up => view.selected = view.selected.saturating_sub(1),
        Action::Down => view.selected = (view.selected + 1).min(last),
        Action::Top => view.selected = 0,
        Action::Bottom => view.selected = last,
        _ => {}
    }
    state.overlay = Some(Overlay::Memories(view));
}
