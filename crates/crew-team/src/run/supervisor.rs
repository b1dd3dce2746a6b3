//! Starts teammates as OS processes (`crew worker --name NAME`), notices the ones that die and
//! gives their tasks back, asks them to shut down. It never restarts a worker on its own: a
//! death is reported, and a person restarts it (`crew worker restart NAME`, or the screen).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crew_config::TeamConfig;
use crew_protocol::joined;
use crew_store::{AgentName, MessageKind, TaskId, USER};
use crew_store::{
    AgentState, AgentStatus, Draft, RequestId, RequestState, Roster, StoreError, Workspace,
    pid_alive,
};

/// How often a stop looks for teammates that refused while busy and are idle now.
const ASK_AGAIN_EVERY: Duration = Duration::from_millis(250);

/// Something the supervisor saw that the person should know about.
#[derive(Debug, Clone, PartialEq)]
pub enum TeamEvent {
    Started {
        name: AgentName,
        pid: u32,
    },
    /// Found still running, left by a team process that died (a killed daemon): watched
    /// through its status file rather than started twice.
    Adopted {
        name: AgentName,
        pid: u32,
    },
    /// Found dead (process gone or heartbeat stale); its tasks went back to pending.
    Died {
        name: AgentName,
        released: Vec<TaskId>,
        why: String,
    },
    Exited {
        name: AgentName,
        code: Option<i32>,
    },
    /// Stopped when asked; started by another process, so its exit code is not ours to read.
    ShutDown {
        name: AgentName,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The person asked for something that cannot be done now, with why.
    #[error("{0}")]
    Refused(String),
    #[error("cannot start worker {name} ({}): {source}", exe.display())]
    Spawn {
        name: AgentName,
        exe: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub struct Supervisor {
    workspace: Workspace,
    roster: Roster,
    lead: AgentName,
    /// The `crew` executable that runs workers.
    exe: PathBuf,
    /// A live status whose heartbeat is older than this is taken for dead.
    stale_after: Duration,
    children: BTreeMap<AgentName, Child>,
    /// Workers in process groups of their own: they outlive the terminal that started them.
    detached: bool,
    /// Credential variables of this process not handed to workers.
    withheld: &'static [&'static str],
}

impl Supervisor {
    pub fn new(
        workspace: Workspace,
        roster: Roster,
        lead: &AgentName,
        exe: PathBuf,
        heartbeat: Duration,
    ) -> Self {
        Supervisor {
            workspace,
            roster,
            lead: lead.clone(),
            exe,
            // Several missed beats, and never less than a few seconds, before calling it dead.
            stale_after: (heartbeat * 5).max(Duration::from_secs(5)),
            children: BTreeMap::new(),
            detached: false,
            withheld: &[],
        }
    }

    /// Starts workers apart from this process's terminal (a team on the store outlives the
    /// screen that started it; the file team's daemon is detached itself).
    pub fn detached(mut self) -> Self {
        self.detached = true;
        self
    }

    /// Hands workers none of `names` (the person's own store password: each worker logs in
    /// with its own role's).
    pub fn withholding(mut self, names: &'static [&'static str]) -> Self {
        self.withheld = names;
        self
    }

    /// The supervisor of the team in `config`: its roster, its lead, its workers' heartbeat.
    pub fn for_team(workspace: Workspace, config: &TeamConfig, exe: PathBuf) -> Self {
        Self::new(
            workspace,
            config.roster(),
            config.lead_name(),
            exe,
            Duration::from_secs(config.worker.heartbeat_secs),
        )
    }

    /// Starts `crew worker --name NAME` with its output in `.crew/logs/NAME.log`.
    pub fn start(
        &mut self,
        name: &AgentName,
        extra_args: &[String],
    ) -> Result<u32, SupervisorError> {
        let logs = self.workspace.crew_dir().join("logs");
        std::fs::create_dir_all(&logs).map_err(|e| StoreError::io(&logs, e))?;
        let log_path = logs.join(format!("{name}.log"));
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| StoreError::io(&log_path, e))?;
        let err_log = log.try_clone().map_err(|e| StoreError::io(&log_path, e))?;
        let spawn_error = |source| SupervisorError::Spawn {
            name: name.clone(),
            exe: self.exe.clone(),
            source,
        };
        let mut command = Command::new(&self.exe);
        if self.detached {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let child = command
            .arg("-C")
            .arg(self.workspace.root())
            .args(["worker", "--name", name.as_str()])
            .args(extra_args)
            // Sealed out of our own environment: handed to the worker explicitly.
            .envs(
                crew_model::secret::sealed_vars()
                    .iter()
                    .filter(|(name, _)| !self.withheld.contains(&name.as_str()))
                    .cloned(),
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .spawn()
            .map_err(spawn_error)?;
        let pid = child.id();
        self.children.insert(name.clone(), child);
        Ok(pid)
    }

    /// Starts a teammate again (after it died or shut down): refused for the lead, for a name
    /// not on the team, and for a teammate whose process still runs.
    pub(crate) fn restart(
        &mut self,
        config: &TeamConfig,
        name: &AgentName,
    ) -> Result<u32, SupervisorError> {
        if !config.teammate_names().contains(name) {
            self.roster
                .check("teammate", name)
                .map_err(StoreError::from)?;
            return Err(SupervisorError::Refused(format!(
                "{name} is the lead; it runs inside `crew up`"
            )));
        }
        if let Some(status) = self.workspace.agents().read(name)?
            && !status.state.is_final()
            && status.process_alive()
        {
            return Err(SupervisorError::Refused(format!(
                "{name} is running (pid {}, {}); shut it down first",
                status.pid,
                status.state.as_str()
            )));
        }
        self.start(name, &[])
    }

    /// Whether the worker started for `name` has ended already (reaped), and how.
    pub fn exited(&mut self, name: &AgentName) -> Option<std::process::ExitStatus> {
        self.children.get_mut(name)?.try_wait().ok().flatten()
    }

    /// For a short-lived supervisor (the screen's restart): its children are waited for on a
    /// thread, so none lingers as a zombie that would still count as alive.
    pub fn reap_in_background(self) {
        for (_, mut child) in self.children {
            std::thread::spawn(move || child.wait());
        }
    }

    /// One look at every teammate: reaps exited children, and treats a worker whose process is
    /// gone or whose heartbeat is stale as dead — its tasks go back to pending with a note, the
    /// lead gets a `status_update`, its status says DEAD.
    pub(crate) fn check(&mut self, teammates: &[AgentName]) -> Result<Vec<TeamEvent>, StoreError> {
        let mut events = Vec::new();
        let mut exited = Vec::new();
        for (name, child) in &mut self.children {
            if let Ok(Some(status)) = child.try_wait() {
                exited.push((name.clone(), status.code()));
            }
        }
        for (name, code) in exited {
            self.children.remove(&name);
            events.push(TeamEvent::Exited { name, code });
        }
        let now = SystemTime::now();
        for name in teammates {
            let Some(status) = self.workspace.agents().read(name)? else {
                continue;
            };
            if !status.looks_dead(now, self.stale_after) {
                continue;
            }
            let why = if status.process_alive() {
                format!("no heartbeat for {}s", status.heartbeat_age(now).as_secs())
            } else {
                format!("process {} is gone", status.pid)
            };
            if let Some(mut child) = self.children.remove(name) {
                // A hung worker: make sure it cannot come back and write as a ghost.
                let _ = child.kill();
                let _ = child.wait();
            }
            events.push(self.declare_dead(status, why)?);
        }
        Ok(events)
    }

    fn declare_dead(&self, mut status: AgentStatus, why: String) -> Result<TeamEvent, StoreError> {
        let name = status.name.clone();
        let released = self
            .workspace
            .tasks()
            .release_orphaned(&name, &format!("released: {name} died ({why})"))?;
        let ids: Vec<TaskId> = released.iter().map(|t| t.id).collect();
        status.state = AgentState::Dead;
        status.note = Some(why.clone());
        status.task = None;
        self.workspace.agents().write(&status)?;
        let mut released_text = if ids.is_empty() {
            "it held no task".to_string()
        } else {
            format!("{} back to pending", joined(&ids, ", "))
        };
        let leftovers = crew_tools::orphans::kill_orphans();
        if !leftovers.is_empty() {
            tracing::info!(?leftovers, "ended tool processes left by {name}");
            released_text.push_str(&format!(
                "; {} tool process(es) it left running were ended",
                leftovers.len()
            ));
        }
        self.workspace.mailboxes().send(
            &self.roster,
            Draft {
                kind: MessageKind::StatusUpdate,
                text: Some(format!("{name} died ({why}); {released_text}. Restart it with `crew worker restart {name}`.")),
                ..Draft::new(USER, self.lead.clone())
            },
        )?;
        Ok(TeamEvent::Died {
            name,
            released: ids,
            why,
        })
    }

    /// Asks each live teammate to shut down (a `shutdown_request` from the lead), waits up to
    /// `grace` for them to stop, then ends the stragglers and gives their tasks back.
    pub fn shut_down(
        &mut self,
        teammates: &[AgentName],
        grace: Duration,
    ) -> Result<Vec<TeamEvent>, StoreError> {
        self.shut_down_watched(teammates, grace, &mut |_, _| false)
    }

    /// As [`Supervisor::shut_down`], calling `watch` with the teammates still running and the
    /// time left while it waits; `watch` returning true ends the wait at once (forced).
    pub(crate) fn shut_down_watched(
        &mut self,
        teammates: &[AgentName],
        grace: Duration,
        watch: &mut dyn FnMut(&[AgentName], Duration) -> bool,
    ) -> Result<Vec<TeamEvent>, StoreError> {
        let mut asked = Vec::new();
        for name in teammates {
            // One started a moment ago may not have written its status yet: its process is
            // ours, and the request waits in its inbox for its first look.
            let pid = match self.workspace.agents().read(name)? {
                Some(status) if !status.state.is_final() && pid_alive(status.pid) => status.pid,
                Some(_) => continue,
                None => match self.children.get_mut(name) {
                    Some(child) => match child.try_wait() {
                        Ok(None) => child.id(),
                        _ => continue,
                    },
                    None => continue,
                },
            };
            let request = self.ask_to_shut_down(name)?;
            asked.push((name.clone(), pid, request));
        }
        let deadline = Instant::now() + grace;
        let mut forced = false;
        let mut looked = Instant::now();
        let mut events = Vec::new();
        loop {
            // Only waiting on the person's answer to a permission request, a teammate has no
            // work in hand to finish: the stop ends it now, not after the grace period.
            let (waiting, rest): (Vec<_>, Vec<_>) = asked
                .into_iter()
                .partition(|(name, pid, _)| pid_alive(*pid) && self.only_waiting(name));
            asked = rest;
            for (name, pid, _) in waiting {
                events.extend(self.end(
                    &name,
                    pid,
                    "ended at the stop while it only waited on a permission request",
                )?);
            }
            // A teammate finishing a task refuses ("busy, ask again when it is done"); once it
            // is idle it is asked again, rather than waiting out the grace period to be killed.
            if looked.elapsed() >= ASK_AGAIN_EVERY {
                looked = Instant::now();
                self.ask_again_when_idle(&mut asked)?;
            }
            let running: Vec<AgentName> = asked
                .iter()
                .filter(|(name, pid, _)| pid_alive(*pid) && !self.has_exited(name))
                .map(|(name, _, _)| name.clone())
                .collect();
            let left = deadline.saturating_duration_since(Instant::now());
            if running.is_empty() || left.is_zero() {
                break;
            }
            if watch(&running, left) {
                forced = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let why = if forced {
            "ended when the person forced the stop".to_string()
        } else {
            format!("did not stop within {}s", grace.as_secs())
        };
        for (name, pid, _) in asked {
            if pid_alive(pid) && !self.has_exited(&name) {
                events.extend(self.end(&name, pid, &why)?);
            } else if let Some(mut child) = self.children.remove(&name) {
                let code = child.wait().ok().and_then(|s| s.code());
                events.push(TeamEvent::Exited { name, code });
            } else {
                events.push(TeamEvent::ShutDown { name });
            }
        }
        Ok(events)
    }

    /// Ends teammate `name` (process `pid`) now: its tasks go back, the lead is told `why`.
    fn end(
        &mut self,
        name: &AgentName,
        pid: u32,
        why: &str,
    ) -> Result<Option<TeamEvent>, StoreError> {
        terminate(pid);
        if let Some(mut child) = self.children.remove(name) {
            let _ = child.wait();
        }
        match self.workspace.agents().read(name)? {
            Some(status) => self.declare_dead(status, why.to_string()).map(Some),
            None => Ok(None),
        }
    }

    /// WAITING: inside a job, but only for the person's answer to a permission request.
    fn only_waiting(&self, name: &AgentName) -> bool {
        self.workspace
            .agents()
            .read(name)
            .ok()
            .flatten()
            .is_some_and(|s| s.state == AgentState::Waiting)
    }

    /// Sends `name` a shutdown request from the lead; its id.
    fn ask_to_shut_down(&self, name: &AgentName) -> Result<RequestId, StoreError> {
        let sent = self.workspace.mailboxes().send(
            &self.roster,
            Draft {
                kind: MessageKind::ShutdownRequest,
                text: Some("the team is shutting down".into()),
                request: true,
                ..Draft::new(self.lead.clone(), name.clone())
            },
        )?;
        Ok(sent.request_id.unwrap_or_default())
    }

    /// Asks again each teammate that refused its request while busy and is idle now.
    fn ask_again_when_idle(
        &self,
        asked: &mut [(AgentName, u32, RequestId)],
    ) -> Result<(), StoreError> {
        let idle = |name: &AgentName| {
            self.workspace
                .agents()
                .read(name)
                .ok()
                .flatten()
                .is_some_and(|s| s.state == AgentState::Idle)
        };
        if !asked.iter().any(|(name, _, _)| idle(name)) {
            return Ok(());
        }
        let requests = self
            .workspace
            .mailboxes()
            .requests(Duration::from_secs(3600))?;
        for (name, _, request) in asked.iter_mut() {
            let refused = requests
                .iter()
                .any(|r| r.request_id == *request && r.state == RequestState::Rejected);
            if refused && idle(name) {
                *request = self.ask_to_shut_down(name)?;
            }
        }
        Ok(())
    }

    fn has_exited(&mut self, name: &str) -> bool {
        self.children
            .get_mut(name)
            .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))))
    }
}

/// SIGTERM, then SIGKILL if it is still there a moment later.
fn terminate(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: plain signals to a process we started or that the status file names.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until && pid_alive(pid as u32) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if pid_alive(pid as u32) {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}
