//! What the workspace holds, as the screen knows it: kept up to date by applying `Change`s, with
//! the derived views (task layers, requests) recomputed only when their inputs change.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use crate::data::{Change, Standing, TRANSCRIPT_KEEP};
use crate::uiconfig::UiConfig;
use crew_agent::transcript::Row;
use crew_config::TeamConfig;
use crew_store::dag::Graph;
use crew_store::requests::derive;
use crew_store::{AgentName, AgentStatus, Entry, Message, RequestInfo, RequestState, Task, TaskId};

/// One row of the task pane, precomputed so a frame only formats what is visible.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub index: usize,
    pub layer: Option<usize>,
    pub claimable: bool,
    /// Blockers not yet completed.
    pub blocked_by: Vec<TaskId>,
}

/// An agent's last transcript rows. Rows are numbered from `first` so a row keeps its number
/// (what a fold or a selection refers to) while older rows are dropped.
#[derive(Debug, Default)]
pub struct Kept {
    pub rows: Vec<Row>,
    pub first: u64,
}

impl Kept {
    pub(crate) fn number(&self, index: usize) -> u64 {
        self.first + index as u64
    }

    pub(crate) fn index(&self, number: u64) -> Option<usize> {
        let i = usize::try_from(number.checked_sub(self.first)?).ok()?;
        (i < self.rows.len()).then_some(i)
    }

    /// Numbers of the rows that fold a tool call, oldest first.
    pub(crate) fn calls(&self) -> impl DoubleEndedIterator<Item = u64> + '_ {
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.detail.is_some())
            .map(|(i, _)| self.number(i))
    }

    /// Each row's text, for the tests of what was kept.
    #[cfg(test)]
    pub(crate) fn texts(&self) -> Vec<&str> {
        self.rows.iter().map(|r| r.text.as_str()).collect()
    }
}

#[derive(Default)]
pub struct WorkspaceView {
    pub config: Option<TeamConfig>,
    pub config_error: Option<String>,
    pub ui: UiConfig,
    pub tasks: Vec<Task>,
    pub task_rows: Vec<TaskRow>,
    pub task_problems: Vec<String>,
    pub inboxes: BTreeMap<AgentName, Vec<Entry>>,
    /// Messages that carry a request id: all `derive` needs.
    request_messages: Vec<Message>,
    pub requests: Vec<RequestInfo>,
    pub agents: BTreeMap<AgentName, AgentStatus>,
    /// On a team kept in PostgreSQL: each agent's standing with the server (empty on files).
    pub standing: BTreeMap<AgentName, Standing>,
    pub transcripts: HashMap<AgentName, Kept>,
    /// How many of each agent's last transcript lines are a reply still streaming.
    transcript_tails: HashMap<AgentName, usize>,
    pub loaded: bool,
}

/// What applying changes revealed that the screen must react to.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// Requests pending now that were not known before (after the first load).
    pub new_requests: Vec<RequestInfo>,
    /// Which tasks are in review (or their commits) changed: the review queue is reloaded.
    pub reviews_changed: bool,
    /// Tasks that entered review since the last load (after the first load).
    pub new_reviews: Vec<TaskId>,
}

impl WorkspaceView {
    pub(crate) fn team_name(&self) -> &str {
        self.config.as_ref().map_or("?", |c| c.team.name.get_ref())
    }

    pub(crate) fn base_branch(&self) -> &str {
        self.config
            .as_ref()
            .map_or("main", |c| c.team.base_branch.as_str())
    }

    /// The lead's name: `lead` until crew.toml has been read.
    pub(crate) fn lead_name(&self) -> AgentName {
        self.config
            .as_ref()
            .map_or_else(|| AgentName::from_lossy("lead"), |c| c.lead_name().clone())
    }

    pub(crate) fn teammates(&self) -> Vec<AgentName> {
        self.config
            .as_ref()
            .map_or_else(Vec::new, TeamConfig::teammate_names)
    }

    pub(crate) fn writes(&self, name: &str) -> bool {
        self.config
            .as_ref()
            .and_then(|c| c.agent(name))
            .is_some_and(|a| a.writes)
    }

    pub fn pending(&self) -> Vec<&RequestInfo> {
        self.requests
            .iter()
            .filter(|r| r.state == RequestState::Pending && r.kind.needs_person())
            .collect()
    }

    pub(crate) fn apply(&mut self, changes: Vec<Change>, now: SystemTime) -> Applied {
        let before: Vec<crew_store::RequestId> = self
            .pending()
            .iter()
            .map(|r| r.request_id.clone())
            .collect();
        let reviews_before = self.in_review();
        let (mut tasks_changed, mut requests_changed) = (false, false);
        for change in changes {
            match change {
                Change::Config(Ok((team, ui))) => {
                    self.config = Some(*team);
                    self.ui = ui;
                    self.config_error = None;
                    requests_changed = true;
                }
                Change::Config(Err(e)) => self.config_error = Some(e),
                Change::AllTasks(tasks, problems) => {
                    self.tasks = tasks;
                    self.task_problems = problems;
                    tasks_changed = true;
                }
                Change::Task(id, task) => {
                    self.task_problems
                        .retain(|p| !p.contains(&format!("{id}.json")));
                    self.put_task(id, task);
                    tasks_changed = true;
                }
                Change::TaskProblem(p) => {
                    if !self.task_problems.contains(&p) {
                        self.task_problems.push(p);
                    }
                }
                Change::Inbox {
                    name,
                    entries,
                    reset,
                } => {
                    let inbox = self.inboxes.entry(name.clone()).or_default();
                    if reset {
                        inbox.clear();
                        self.request_messages.retain(|m| m.to != name);
                    }
                    for entry in &entries {
                        if let Entry::Message { message, .. } = entry
                            && message.request_id.is_some()
                        {
                            self.request_messages.push(message.clone());
                        }
                    }
                    inbox.extend(entries);
                    requests_changed = true;
                }
                Change::Agent(name, status) => match status {
                    Some(s) => {
                        self.agents.insert(name, s);
                    }
                    None => {
                        self.agents.remove(&name);
                    }
                },
                Change::Standing(standing) => self.standing = standing,
                Change::Transcript {
                    name,
                    lines,
                    reset,
                    tail,
                } => {
                    let kept = self.transcripts.entry(name.clone()).or_default();
                    let old_tail = self.transcript_tails.insert(name, tail).unwrap_or(0);
                    if reset {
                        kept.first += kept.rows.len() as u64;
                        kept.rows.clear();
                    }
                    kept.rows.truncate(kept.rows.len().saturating_sub(old_tail));
                    kept.rows.extend(lines);
                    let excess = kept.rows.len().saturating_sub(TRANSCRIPT_KEEP);
                    kept.rows.drain(..excess);
                    kept.first += excess as u64;
                }
            }
        }
        if tasks_changed {
            self.derive_tasks();
        }
        if requests_changed {
            self.derive_requests(now);
        }
        let mut applied = Applied::default();
        let reviews_now = self.in_review();
        applied.reviews_changed = reviews_now != reviews_before || (!self.loaded && tasks_changed);
        if self.loaded {
            applied.new_reviews = reviews_now
                .iter()
                .filter(|(id, _)| !reviews_before.iter().any(|(b, _)| b == id))
                .map(|(id, _)| *id)
                .collect();
        }
        if self.loaded {
            applied.new_requests = self
                .pending()
                .into_iter()
                .filter(|r| !before.contains(&r.request_id))
                .cloned()
                .collect();
        }
        self.loaded = true;
        applied
    }

    /// The tasks in review with their last commit: what the review queue depends on.
    pub(crate) fn in_review(&self) -> Vec<(TaskId, Option<String>)> {
        self.tasks
            .iter()
            .filter(|t| t.status == crew_store::Status::Review)
            .map(|t| (t.id, t.commits.as_ref().map(|c| c.head.clone())))
            .collect()
    }

    /// Ages and expiry move with the clock.
    pub(crate) fn tick(&mut self, now: SystemTime) {
        self.derive_requests(now);
    }

    fn put_task(&mut self, id: TaskId, task: Option<Task>) {
        let at = self.tasks.binary_search_by_key(&id, |t| t.id);
        match (at, task) {
            (Ok(i), Some(task)) => self.tasks[i] = task,
            (Ok(i), None) => {
                self.tasks.remove(i);
            }
            (Err(i), Some(task)) => self.tasks.insert(i, task),
            (Err(_), None) => {}
        }
    }

    fn derive_tasks(&mut self) {
        let graph = Graph::new(&self.tasks);
        let layers = graph.layers();
        let mut layer_of: HashMap<TaskId, usize> = HashMap::new();
        for (depth, ids) in layers.layers.iter().enumerate() {
            for &id in ids {
                layer_of.insert(id, depth);
            }
        }
        let mut rows: Vec<TaskRow> = self
            .tasks
            .iter()
            .enumerate()
            .map(|(index, task)| TaskRow {
                index,
                layer: layer_of.get(&task.id).copied(),
                claimable: graph.is_claimable(task),
                blocked_by: graph.open_blockers(task),
            })
            .collect();
        // Layer by layer (a cycle, only possible by hand edits, goes last), creation order inside.
        rows.sort_by_key(|r| (r.layer.unwrap_or(usize::MAX), r.index));
        self.task_rows = rows;
    }

    fn derive_requests(&mut self, now: SystemTime) {
        let timeout = self
            .config
            .as_ref()
            .map(TeamConfig::request_timeout)
            .unwrap_or(std::time::Duration::from_secs(300));
        self.requests = derive(&self.request_messages, now, timeout);
    }
}
