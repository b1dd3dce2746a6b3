//! Watching a Claude Code agent team (`crew attach claude [TEAM]`).
//!
//! Claude Code keeps a team in `~/.claude/teams/<team>/` (`config.json`, `inboxes/<agent>.json`)
//! and `~/.claude/tasks/<team>/<id>.json`, and its readers delete inbox messages within
//! milliseconds. A [`Mirror`] translates every version it sees into a crew workspace of its own
//! in crew's data folder (`$XDG_DATA_HOME/crew/claude-code/<team>/`, else
//! `~/.local/share/crew/claude-code/<team>/`): a `crew.toml` naming the members, `.tasks/` as
//! the team's tasks are now, and `.mailboxes/` as crew's own append-only log of every message
//! ever captured. The workbench reads that workspace like any other; the person's answer to a
//! permission request, written there by the screen, is forwarded to the asking teammate's
//! inbox as the `permission_response` Claude Code expects. Files that do not parse are shown
//! (as an `unreadable` message, or a task saying so), never fatal.

pub(crate) mod files;
pub mod gate;
mod inbox_write;
mod locked_file;
pub mod review_hold;
pub mod setup;
pub mod teammate;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crew_store::atomic::write_atomic;
use crew_store::{
    AgentName, AgentState, AgentStatus, Entry, Message, MessageKind, TaskId, Workspace,
};
use files::{InboxMessage, TeamFile};

#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(
        "no Claude Code agent teams in {0} (a team exists while its lead runs, with CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1)"
    )]
    NoTeams(PathBuf),
    #[error("several Claude Code agent teams in {dir}; name one: crew attach claude TEAM\n{list}")]
    Choose { dir: PathBuf, list: String },
    #[error("no Claude Code agent team {team:?} in {dir}; the teams are: {list}")]
    UnknownTeam {
        team: String,
        dir: PathBuf,
        list: String,
    },
    #[error("team name {0:?} is not a folder name")]
    BadName(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("neither $XDG_DATA_HOME nor $HOME is set: nowhere to keep crew's log of the team")]
    NoDataDir,
    #[error("neither $CLAUDE_CONFIG_DIR nor $HOME is set: cannot find Claude Code's folder")]
    NoClaudeHome,
    #[error(transparent)]
    Store(#[from] crew_store::StoreError),
    #[error(transparent)]
    Git(#[from] crew_git::GitError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AttachError + '_ {
    move |source| AttachError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `~/.claude` (or `$CLAUDE_CONFIG_DIR`, which Claude Code honours too).
pub fn claude_home() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
}

/// Where crew keeps its workspace for team `team`.
pub fn mirror_root(team: &str) -> Result<PathBuf, AttachError> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .ok_or(AttachError::NoDataDir)?;
    Ok(data.join("crew/claude-code").join(team))
}

/// The teams in `home`, by name.
pub(crate) fn teams(home: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(home.join("teams"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    out.sort();
    out
}

/// The team to attach to: the one named, else the only one.
pub fn choose_team(home: &Path, team: Option<&str>) -> Result<String, AttachError> {
    let all = teams(home);
    let dir = home.join("teams");
    match team {
        Some(name) if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') => {
            Err(AttachError::BadName(name.to_string()))
        }
        Some(name) if all.iter().any(|t| t == name) => Ok(name.to_string()),
        Some(name) => Err(AttachError::UnknownTeam {
            team: name.to_string(),
            dir,
            list: if all.is_empty() {
                "none".into()
            } else {
                all.join(", ")
            },
        }),
        None => match all.as_slice() {
            [] => Err(AttachError::NoTeams(dir)),
            [only] => Ok(only.clone()),
            many => Err(AttachError::Choose {
                dir,
                list: many
                    .iter()
                    .map(|t| format!("  {t}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            }),
        },
    }
}

/// The Claude Code version that runs the team's lead: from `sessions/*.json`, whose
/// `sessionId` is the team's `leadSessionId`.
pub(crate) fn lead_version(home: &Path, lead_session_id: &str) -> Option<String> {
    fs::read_dir(home.join("sessions"))
        .ok()?
        .flatten()
        .filter_map(|e| fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice::<Value>(&b).ok())
        .find(|s| s["sessionId"] == lead_session_id)
        .and_then(|s| s["version"].as_str().map(str::to_string))
}

/// A JSON file Claude Code may be rewriting in place, read again a moment later before it
/// counts as broken. `None` when there is no such file.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, String> {
    let read = || match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| e.to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    };
    read().or_else(|_| {
        std::thread::sleep(SETTLE);
        read()
    })
}

/// Every member's Claude Code name ever seen, in the mirror.
const MEMBERS_FILE: &str = ".crew/claude-members.json";

/// How long a half-written file gets to be finished.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

/// How often the files are read again without an event.
pub(crate) const RESYNC: std::time::Duration = std::time::Duration::from_secs(2);

/// A team's files translated into a crew workspace; see the module documentation.
pub struct Mirror {
    home: PathBuf,
    team: String,
    root: PathBuf,
    /// Messages already in the log, by inbox and key.
    seen: HashSet<(AgentName, String)>,
    /// Requests whose answer from the person was already forwarded.
    forwarded: HashSet<String>,
    /// The last readable team file.
    team_file: Option<TeamFile>,
    /// Every member ever seen (Claude Code names), in order of arrival.
    members: Vec<String>,
    /// Each member's state as the screen shows it.
    states: BTreeMap<String, (AgentState, Option<String>)>,
    /// How far into each inbox of the log answers were looked for.
    log_offsets: HashMap<AgentName, u64>,
    /// Claude Code permission requests in the log, by request id.
    requests: HashMap<String, Message>,
    /// Problems already reported, so a broken file is said once.
    reported: HashSet<String>,
}

impl Mirror {
    /// Opens (or creates) crew's workspace for `team`, picking up its log.
    pub fn open(home: &Path, team: &str, root: &Path) -> Result<Self, AttachError> {
        fs::create_dir_all(root.join(".crew/agents")).map_err(io(root))?;
        let mut mirror = Mirror {
            home: home.to_path_buf(),
            team: team.to_string(),
            root: root.to_path_buf(),
            seen: HashSet::new(),
            forwarded: HashSet::new(),
            team_file: None,
            members: Vec::new(),
            states: BTreeMap::new(),
            log_offsets: HashMap::new(),
            requests: HashMap::new(),
            reported: HashSet::new(),
        };
        for (inbox, message) in mirror.logged()? {
            if let Some(key) = message.extra.get("claude_key").and_then(Value::as_str) {
                mirror.seen.insert((inbox, key.to_string()));
            }
            // A response that came back through Claude Code's files was forwarded before.
            if message.kind == MessageKind::PermissionResponse
                && message.from != crew_store::USER
                && let Some(id) = &message.request_id
            {
                mirror.forwarded.insert(id.to_string());
            }
        }
        // Members seen in an earlier session.
        if let Ok(bytes) = fs::read(root.join(MEMBERS_FILE)) {
            mirror.members = serde_json::from_slice(&bytes).unwrap_or_default();
        }
        if !root.join(crew_config::FILE_NAME).exists() {
            mirror.write_config()?;
        }
        Ok(mirror)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Names `repository` as the one whose worktrees the team's teammates work in (crew runs
    /// them there): reviews of their work diff and merge in it.
    pub fn link(&self, repository: &Path) -> Result<(), AttachError> {
        self.workspace()
            .link_repository(repository)
            .map_err(io(&self.root))?;
        self.write_config()
    }

    /// `name` is on the team even before Claude Code's team file says so (a teammate crew
    /// starts asks for permissions under its name).
    pub fn admit(&mut self, name: &str) -> Result<(), AttachError> {
        if !self.members.iter().any(|m| m == name) {
            self.members.push(name.to_string());
            self.write_statuses(&BTreeMap::new())?;
        }
        self.write_config()
    }

    pub(crate) fn team_dir(&self) -> PathBuf {
        self.home.join("teams").join(&self.team)
    }

    pub(crate) fn tasks_dir(&self) -> PathBuf {
        self.home.join("tasks").join(&self.team)
    }

    /// The Claude Code version of the team's lead, when its session file says.
    pub fn version(&self) -> Option<String> {
        let lead = self.team_file.as_ref()?.lead_session_id.as_str();
        lead_version(&self.home, lead)
    }

    fn workspace(&self) -> Workspace {
        Workspace::new(&self.root)
    }

    /// Every message in crew's log, with the inbox it is in.
    fn logged(&self) -> Result<Vec<(AgentName, Message)>, AttachError> {
        let boxes = self.workspace().mailboxes();
        let mut out = Vec::new();
        for name in boxes.inboxes()? {
            for entry in boxes.read_from(&name, 0)?.entries {
                if let Entry::Message { message, .. } = entry {
                    out.push((name.clone(), message));
                }
            }
        }
        Ok(out)
    }

    /// Reads every file of the team as it is now and brings crew's workspace up to date:
    /// new messages appended to the log, tasks and members rewritten, answers forwarded.
    pub fn sync(&mut self) -> Result<(), AttachError> {
        // Inboxes first: their versions live for milliseconds.
        self.sync_inboxes()?;
        self.sync_config()?;
        let holding = self.sync_tasks()?;
        self.tell_outcomes()?;
        self.write_statuses(&holding)?;
        self.forward_answers()
    }

    fn crew_name(name: &str) -> AgentName {
        files::crew_name(name)
    }

    /// Says `problem` once, as an `unreadable` message in the lead's log.
    fn report(&mut self, problem: String) -> Result<(), AttachError> {
        if !self.reported.insert(problem.clone()) {
            return Ok(());
        }
        let lead = self.lead_name();
        let message = Message {
            id: crew_store::message::new_id("cc"),
            ts: crew_store::task::now_rfc3339(),
            from: Self::crew_name("crew"),
            to: lead,
            kind: "unreadable".into(),
            text: Some(problem),
            request_id: None,
            approve: None,
            extra: Default::default(),
        };
        Ok(self.workspace().mailboxes().append(&message)?)
    }

    fn lead_name(&self) -> AgentName {
        Self::crew_name(&self.lead_claude_name())
    }

    fn sync_config(&mut self) -> Result<(), AttachError> {
        let path = self.team_dir().join("config.json");
        let team = match read_json::<TeamFile>(&path) {
            Ok(Some(team)) => team,
            // The lead exited and Claude Code deleted the team: everyone is gone.
            Ok(None) => {
                for name in self.members.clone() {
                    self.states
                        .insert(name, (AgentState::Shutdown, Some("the team ended".into())));
                }
                return Ok(());
            }
            Err(e) => return self.report(format!("{}: {e}", path.display())),
        };
        let lead = team
            .lead_agent_id
            .split('@')
            .next()
            .unwrap_or("")
            .to_string();
        for member in &team.members {
            if !self.members.contains(&member.name) {
                self.members.push(member.name.clone());
            }
        }
        // Members who left stay on the screen, shut down.
        for name in self.members.clone() {
            let member = team.members.iter().find(|m| m.name == name);
            let state = match member {
                None => AgentState::Shutdown,
                Some(m) if m.is_active == Some(false) => AgentState::Idle,
                Some(m) if m.is_active == Some(true) || m.name == lead => AgentState::Work,
                Some(_) => AgentState::Idle,
            };
            let note = match member {
                None => "left the team".to_string(),
                Some(m) => format!(
                    "Claude Code {}{}",
                    m.backend_type.as_deref().unwrap_or("member"),
                    m.model
                        .as_deref()
                        .map(|m| format!(", {m}"))
                        .unwrap_or_default()
                ),
            };
            self.states.insert(name, (state, Some(note)));
        }
        self.team_file = Some(team);
        self.write_config()
    }

    /// crew.toml naming the members: the lead, then the others as teammates. Their models are
    /// crew's simulator, which never runs here: the screen only shows them.
    fn write_config(&self) -> Result<(), AttachError> {
        let lead = Self::crew_name(&self.lead_name());
        let mut names: BTreeSet<AgentName> = BTreeSet::new();
        names.insert(lead.clone());
        let mut text = format!(
            "# Written by `crew attach claude`: Claude Code team {:?}, for the screen only.\n\
             [team]\nname = {:?}\nbase_branch = {:?}\n\n\
             [lead]\nname = {lead:?}\nmodel = {{ provider = \"scripted\" }}\n",
            self.team,
            Self::crew_name(&self.team),
            self.base_branch(),
        );
        for member in &self.members {
            let name = Self::crew_name(member);
            if !names.insert(name.clone()) {
                continue;
            }
            text.push_str(&format!(
                "\n[[teammate]]\nname = {name:?}\nrole = \"implementer\"\nmodel = {{ provider = \"scripted\" }}\n"
            ));
        }
        // Teammates crew runs in worktrees of their own change files there freely, as crew's own
        // writers do: their work waits for review anyway.
        let mode = if self.workspace().is_linked() {
            "accept-edits"
        } else {
            "ask"
        };
        text.push_str(&format!("\n[permissions]\nmode = {mode:?}\n"));
        let path = self.root.join(crew_config::FILE_NAME);
        if fs::read_to_string(&path).is_ok_and(|old| old == text) {
            return Ok(());
        }
        write_atomic(&path, text.as_bytes()).map_err(io(&path))
    }

    /// Every inbox file, and the temporary files writers rename over them (a version that
    /// lives for milliseconds is often only seen there).
    fn sync_inboxes(&mut self) -> Result<(), AttachError> {
        let dir = self.team_dir().join("inboxes");
        let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
            let Some(agent) = file
                .split_once(".json")
                .filter(|(_, rest)| rest.is_empty() || rest.starts_with(".tmp."))
                .map(|(agent, _)| agent.to_string())
            else {
                continue;
            };
            let Ok(bytes) = fs::read(&path) else {
                continue; // renamed or deleted meanwhile: the next event reads its successor
            };
            match files::parse_inbox(&bytes) {
                Ok(messages) => self.log_messages(&agent, &messages)?,
                // A temporary file may be caught half-written.
                Err(_) if file.contains(".tmp.") => {}
                Err(e) => self.report(format!("{}: {e}", path.display()))?,
            }
        }
        Ok(())
    }

    fn log_messages(&mut self, agent: &str, messages: &[InboxMessage]) -> Result<(), AttachError> {
        let boxes = self.workspace().mailboxes();
        for message in messages {
            let key = message.key();
            if !self.seen.insert((Self::crew_name(agent), key.clone())) {
                continue;
            }
            let mut crew = files::to_crew(message, agent, &Self::crew_name);
            crew.extra.insert("claude_key".into(), json!(key));
            crew.extra.insert("claude_to".into(), json!(agent));
            if crew.kind == MessageKind::PermissionResponse
                && let Some(id) = &crew.request_id
            {
                self.forwarded.insert(id.to_string());
            }
            boxes.append(&crew)?;
        }
        Ok(())
    }

    /// Each member's state and the task it holds, as the screen's status files.
    fn write_statuses(&self, holding: &BTreeMap<AgentName, TaskId>) -> Result<(), AttachError> {
        for (name, (state, note)) in &self.states {
            let crew = Self::crew_name(name);
            let path = self.root.join(".crew/agents").join(format!("{crew}.json"));
            // No process of crew's: no pid, no heartbeat.
            let status = AgentStatus {
                pid: 0,
                heartbeat: String::new(),
                started_at: String::new(),
                task: holding.get(&crew).copied(),
                note: note.clone(),
                ..AgentStatus::new(&crew, *state)
            };
            let bytes = serde_json::to_vec_pretty(&status)
                .map_err(std::io::Error::from)
                .map_err(io(&path))?;
            if fs::read(&path).is_ok_and(|old| old == bytes) {
                continue;
            }
            write_atomic(&path, &bytes).map_err(io(&path))?;
        }
        let members = self.root.join(MEMBERS_FILE);
        let bytes = serde_json::to_vec(&self.members)
            .map_err(std::io::Error::from)
            .map_err(io(&members))?;
        if !fs::read(&members).is_ok_and(|old| old == bytes) {
            write_atomic(&members, &bytes).map_err(io(&members))?;
        }
        Ok(())
    }

    /// The team's tasks as they are now; returns which member holds which task in progress.
    fn sync_tasks(&mut self) -> Result<BTreeMap<AgentName, TaskId>, AttachError> {
        let dir = self.tasks_dir();
        let mut now: BTreeMap<TaskId, crew_store::Task> = BTreeMap::new();
        let mut problems = Vec::new();
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") || !path.is_file() {
                continue;
            }
            match read_json::<files::TaskFile>(&path) {
                // Deleted meanwhile.
                Ok(None) => {}
                Ok(Some(task)) => match files::to_crew_task(&task, &Self::crew_name) {
                    Some(task) => {
                        now.insert(task.id, task);
                    }
                    None => problems.push(format!(
                        "{}: task id {:?} is not a whole number",
                        path.display(),
                        task.id
                    )),
                },
                Err(e) => problems.push(format!("{}: {e}", path.display())),
            }
        }
        for problem in problems {
            self.report(problem)?;
        }
        let tasks_dir = self.workspace().tasks_dir();
        fs::create_dir_all(&tasks_dir).map_err(io(&tasks_dir))?;
        // From its hand-in to its merge crew's copy is the task, and it outlives Claude Code's
        // (see `review_hold`).
        let held = review_hold::held_ids(&self.workspace())?;
        for entry in fs::read_dir(&tasks_dir).map_err(io(&tasks_dir))?.flatten() {
            let path = entry.path();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let kept =
                TaskId::parse(stem).is_ok_and(|id| now.contains_key(&id) || held.contains(&id));
            if path.extension().and_then(|e| e.to_str()) == Some("json") && !kept {
                fs::remove_file(&path).map_err(io(&path))?;
            }
        }
        let holding = now
            .values()
            .filter(|t| t.status == crew_store::Status::InProgress)
            .filter_map(|t| Some((t.owner.clone()?, t.id)))
            .collect();
        for (id, task) in now {
            if held.contains(&id) {
                continue;
            }
            let path = tasks_dir.join(format!("{id}.json"));
            let bytes = serde_json::to_vec_pretty(&task)
                .map_err(std::io::Error::from)
                .map_err(io(&path))?;
            if fs::read(&path).is_ok_and(|old| old == bytes) {
                continue;
            }
            write_atomic(&path, &bytes).map_err(io(&path))?;
        }
        Ok(holding)
    }

    /// What the person did to the tasks crew holds for review, told to Claude Code once.
    fn tell_outcomes(&mut self) -> Result<(), AttachError> {
        let workspace = self.workspace();
        let lead = self.lead_claude_name();
        let base = self.base_branch();
        for task in workspace.tasks().load_all()?.tasks {
            if task.commits.is_none() {
                continue;
            }
            match review_hold::tell_outcome(&self.home, &self.team, &lead, &task, &base) {
                Ok(Some(told)) => review_hold::keep(&workspace, &told)?,
                Ok(None) => {}
                Err(e) => self.report(format!("{}: {e}", task.id))?,
            }
        }
        Ok(())
    }

    /// The lead's Claude Code name (its inbox's).
    fn lead_claude_name(&self) -> String {
        self.team_file
            .as_ref()
            .and_then(|t| t.lead_agent_id.split('@').next())
            .filter(|l| !l.is_empty())
            .unwrap_or("team-lead")
            .to_string()
    }

    /// The branch reviews merge into: the linked repository's, else `main`.
    fn base_branch(&self) -> String {
        let workspace = self.workspace();
        workspace
            .is_linked()
            .then(|| crew_git::current_branch(&workspace.repository_root()))
            .flatten()
            .unwrap_or_else(|| "main".to_string())
    }

    /// Keeps crew's workspace up to date on a thread of its own, from file events in Claude
    /// Code's folders and in crew's log (where the screen writes answers), and every
    /// [`RESYNC`] in case events were lost, for as long as the returned watcher lives.
    pub fn watch(mut self) -> Result<notify::RecommendedWatcher, AttachError> {
        use notify::{EventKind, RecursiveMode, Watcher};
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if !matches!(event, Ok(ref e) if matches!(e.kind, EventKind::Access(_))) {
                    let _ = tx.send(());
                }
            })
            .map_err(|e| io(&self.home)(std::io::Error::other(e)))?;
        let mailboxes = self.workspace().mailboxes_dir();
        fs::create_dir_all(&mailboxes).map_err(io(&mailboxes))?;
        for dir in [self.home.join("teams"), self.home.join("tasks"), mailboxes] {
            if dir.is_dir() {
                watcher
                    .watch(&dir, RecursiveMode::Recursive)
                    .map_err(|e| io(&dir)(std::io::Error::other(e)))?;
            }
        }
        std::thread::spawn(move || {
            loop {
                match rx.recv_timeout(RESYNC) {
                    Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
                while rx.try_recv().is_ok() {}
                if let Err(e) = self.sync() {
                    tracing::warn!("Claude Code team {}: {e}", self.team);
                }
            }
        });
        Ok(watcher)
    }

    /// The person's answers (from the screen, into crew's log) to Claude Code permission
    /// requests, written to the asking teammate's inbox once each.
    pub(crate) fn forward_answers(&mut self) -> Result<(), AttachError> {
        // Only what was added to the log since the last look.
        let boxes = self.workspace().mailboxes();
        let mut answers = Vec::new();
        for name in boxes.inboxes()? {
            let from = self.log_offsets.get(&name).copied().unwrap_or(0);
            let batch = boxes.read_from(&name, from)?;
            self.log_offsets.insert(name, batch.end);
            for entry in batch.entries {
                let Entry::Message { message, .. } = entry else {
                    continue;
                };
                match (&message.request_id, &message.kind) {
                    (Some(id), MessageKind::PermissionRequest) => {
                        self.requests.insert(id.to_string(), message);
                    }
                    (Some(_), _)
                        if message.from == crew_store::USER && message.approve.is_some() =>
                    {
                        answers.push(message);
                    }
                    _ => {}
                }
            }
        }
        for answer in answers {
            let Some(id) = &answer.request_id else {
                continue;
            };
            if self.forwarded.contains(id.as_str()) {
                continue;
            }
            let Some(request) = self.requests.get(id.as_str()) else {
                continue;
            };
            let Some(Value::Object(protocol)) = request.extra.get("protocol") else {
                continue;
            };
            let asker = request
                .extra
                .get("claude_from")
                .and_then(Value::as_str)
                .unwrap_or(&request.from)
                .to_string();
            let lead = request
                .extra
                .get("claude_to")
                .and_then(Value::as_str)
                .unwrap_or("team-lead")
                .to_string();
            let text = files::permission_response(
                protocol,
                answer.approve == Some(true),
                answer.text.as_deref().unwrap_or(""),
            );
            let inbox = self
                .team_dir()
                .join("inboxes")
                .join(format!("{asker}.json"));
            inbox_write::append(&inbox, &lead, &text.to_string())?;
            self.forwarded.insert(id.to_string());
        }
        Ok(())
    }
}
