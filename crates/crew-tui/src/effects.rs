//! Carrying out effects against the store, crew.toml and git. Called on worker threads by the
//! runtime, and directly by tests; each returns the event that reports how it went.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use crate::event::{Effect, Event};
use crate::highlight::Highlighter;
use crate::uiconfig;
use crew_config::TeamConfig;
use crew_git::{Author, Worktrees};
use crew_protocol::joined;
use crew_store::{
    Actor, AgentName, Claimant, Draft, MergeQueue, Message, RequestInfo, StoreError, Task, TaskId,
    TaskPatch, Workspace,
};
use crew_store::{MessageKind, USER};
use crew_team::merge_queue::output_log;
use crew_team::review;
use crew_team::run::daemon;
use crew_team::run::team_control::{self, Restarted};

/// Carries out store and git effects for one thread of the runtime, with crew.toml read once
/// and again only when it changes. A crew.toml broken meanwhile does not block answers: the last
/// good one is used (the screen shows the error as a warning).
pub struct Effects {
    root: PathBuf,
    config: Option<(Stamp, TeamConfig)>,
}

/// What says crew.toml changed: its modification time and size.
type Stamp = Option<(SystemTime, u64)>;

impl Effects {
    /// Reads crew.toml now, so that one broken later still leaves a good one to answer with.
    pub fn new(root: &Path) -> Effects {
        let mut effects = Effects {
            root: root.to_path_buf(),
            config: None,
        };
        let _ = effects.config();
        effects
    }

    fn config(&mut self) -> Result<TeamConfig, String> {
        let path = self.root.join(crew_config::FILE_NAME);
        let stamp = std::fs::metadata(&path)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        match &self.config {
            Some((seen, config)) if *seen == stamp => return Ok(config.clone()),
            _ => {}
        }
        match uiconfig::load(&self.root) {
            Ok((team, _)) => {
                self.config = Some((stamp, team.clone()));
                Ok(team)
            }
            Err(e) => match &self.config {
                Some((_, last_good)) => {
                    tracing::warn!("crew.toml: {e}; using the last good one");
                    Ok(last_good.clone())
                }
                None => Err(format!("cannot read crew.toml: {e}")),
            },
        }
    }

    /// Runs a store or git effect. Highlighting, the bell and notifications are not handled
    /// here.
    pub fn execute(&mut self, effect: Effect) -> Option<Event> {
        match self.config() {
            Ok(team) => execute(&self.root, &team, effect),
            Err(e) => Some(Event::Done(Err(e))),
        }
    }
}

fn execute(root: &Path, team: &TeamConfig, effect: Effect) -> Option<Event> {
    let failed = |e: String| Some(Event::Done(Err(e)));
    let ws = Workspace::new(root).with_limits(team.limits);
    let roster = team.roster();
    let timeout = team.request_timeout();
    match effect {
        Effect::Respond {
            request_id,
            approve,
            note,
        } => Some(Event::Done(
            ws.mailboxes()
                .respond(&roster, &request_id, &USER, approve, note, timeout)
                .map(|m| answered(approve, &request_id, &m))
                .map_err(|e| e.to_string()),
        )),
        Effect::AllowAndApprove { request_id, rule } => {
            let added = match uiconfig::add_allow_rule(root, &rule) {
                Ok(added) => added,
                Err(e) => return failed(format!("cannot add rule {rule:?}: {e}")),
            };
            Some(Event::Done(
                ws.mailboxes()
                    .respond(&roster, &request_id, &USER, true, None, timeout)
                    .map(|_| {
                        let how = if added { "added" } else { "already there" };
                        format!("approved {request_id}; allow rule {rule:?} {how}")
                    })
                    .map_err(|e| format!("rule {rule:?} added, but answering failed: {e}")),
            ))
        }
        Effect::Send { to, text } => Some(Event::Done(
            ws.mailboxes()
                .send(&roster, person_says(&to, text))
                .map(|_| format!("sent to {to}"))
                .map_err(|e| e.to_string()),
        )),
        Effect::AddTask(new) => Some(Event::Done(
            ws.tasks()
                .create(new)
                .map(|t| added(&t))
                .map_err(|e| e.to_string()),
        )),
        Effect::SetDeps { id, blocked_by } => Some(Event::Done(
            ws.tasks()
                .update(
                    id,
                    TaskPatch {
                        blocked_by: Some(blocked_by),
                        ..TaskPatch::default()
                    },
                    Actor::Person,
                )
                .map(|t| waits_for(&t))
                .map_err(|e| e.to_string()),
        )),
        Effect::Assign { id, to } => Some(Event::Done(
            assign(&ws, team, id, to.as_ref())
                .map(|t| assigned(&t))
                .map_err(|e| e.to_string()),
        )),
        Effect::Interrupt { name } => Some(Event::Done(
            crew_team::run::interrupt::interrupt(&ws, &roster, &name)
                .map(|_| {
                    format!("interrupting {name}; it keeps its task and waits for your message")
                })
                .map_err(|e| e.to_string()),
        )),
        Effect::RequestShutdown { name } => Some(Event::Done(
            ws.mailboxes()
                .send(&roster, shutdown_request(&name))
                .map(|m| asked_to_shut_down(&m))
                .map_err(|e| e.to_string()),
        )),
        Effect::StopTeam => Some(Event::Done(
            match team_control::stop(&ws, daemon::DEFAULT_GRACE) {
                Ok(Some(_)) => Ok("stopping the team".to_string()),
                Ok(None) => Err("no team runs here: nothing to stop".to_string()),
                Err(e) => Err(e.to_string()),
            },
        )),
        Effect::ForceStop => Some(Event::Done(
            team_control::force(&ws)
                .map(|()| "ending what still runs".to_string())
                .map_err(|e| e.to_string()),
        )),
        Effect::Restart { name, exe } => Some(Event::Done(
            team_control::restart(&ws, team, exe, &name)
                .map(|restarted| match restarted {
                    // The daemon starts it, so it lives in the team's session, not this
                    // terminal's.
                    Restarted::ByDaemon { .. } => {
                        format!("restarted {name}; log in .crew/logs/{name}.log")
                    }
                    Restarted::Here { pid } => {
                        format!("restarted {name} (pid {pid}); log in .crew/logs/{name}.log")
                    }
                })
                .map_err(|e| e.to_string()),
        )),
        Effect::LoadDiff { name, task: None } => Some(Event::Diff {
            result: Worktrees::open(&ws.repository_root())
                .and_then(|w| w.diff(&name, &team.team.base_branch))
                .map_err(|e| e.to_string()),
            name,
            task: None,
        }),
        Effect::LoadDiff {
            name,
            task: Some(id),
        } => Some(Event::Diff {
            result: review::diff(&ws, team, id).map_err(|e| e.to_string()),
            name,
            task: Some(id),
        }),
        Effect::LoadReviews => Some(Event::Reviews(
            review::list(&ws, team).map_err(|e| e.to_string()),
        )),
        Effect::ApproveReview { id } => Some(Event::Done(
            review::approve(&ws, team, id, &USER).map_err(|e| e.to_string()),
        )),
        Effect::LoadQueue => Some(Event::Queue(
            queue_snapshot(&ws.merge_queue(), &output_log(&ws), |id| {
                ws.tasks().read(id).ok().map(|t| t.subject)
            })
            .map_err(|e| e.to_string()),
        )),
        Effect::PauseQueue { paused } => Some(Event::Done(pause_queue(&ws.merge_queue(), paused))),
        Effect::RemoveFromQueue { id } => {
            Some(Event::Done(remove_from_queue(&ws.merge_queue(), id)))
        }
        Effect::RetryInQueue { id } => Some(Event::Done(retried(
            crew_team::merge_queue::retry(&ws, team, id),
            id,
        ))),
        Effect::MergeReview { id } => Some(Event::Done(
            review::merge(&ws, team, id, &USER).map_err(|e| e.to_string()),
        )),
        Effect::SendBackReview { id, note } => Some(Event::Done(
            review::send_back(&ws, team, id, &USER, &note)
                .map_err(|e| e.to_string())
                .map(|t| sent_back(&t)),
        )),
        Effect::DiscardReview { id, reason } => Some(Event::Done(
            review::discard(&ws, team, id, &USER, &reason)
                .map_err(|e| e.to_string())
                .map(|t| discarded(&t)),
        )),
        Effect::Merge { name } => {
            let author = Author::crew(&name);
            Some(Event::Merged {
                result: Worktrees::open(&ws.repository_root())
                    .and_then(|w| w.merge(&name, &team.team.base_branch, &author))
                    .map_err(|e| e.to_string()),
                name,
            })
        }
        Effect::Discard { name } => Some(Event::Discarded {
            result: Worktrees::open(&ws.repository_root())
                .and_then(|w| w.discard(&name))
                .map_err(|e| e.to_string()),
            name,
        }),
        Effect::Notify { command, request } => notify(root, &command, &request),
        Effect::PrepareProposal {
            request_id,
            request,
        } => Some(Event::Proposal {
            diff: crate::proposal::prepare(root, &request).map(Box::new),
            request_id,
        }),
        Effect::HighlightFile { .. }
        | Effect::HighlightCommand { .. }
        | Effect::HighlightProposal { .. }
        | Effect::Bell
        | Effect::DesktopNotify { .. } => None,
    }
}

/// Gives a task to a teammate of the team (with its role), or to nobody.
/// Runs the person's `notify_command` (from crew.toml) in `dir` for a new `request`.
pub(crate) fn notify(dir: &Path, command: &str, request: &RequestInfo) -> Option<Event> {
    // Fire and forget: a notifier that hangs must not hold anything up.
    let spawned = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("CREW_REQUEST_ID", request.request_id.as_str())
        .env("CREW_REQUEST_FROM", request.from.as_str())
        .env("CREW_REQUEST_TYPE", request.kind.as_str())
        .env("CREW_REQUEST_TEXT", request.text.as_deref().unwrap_or(""))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            // Reaped on its own thread so it never lingers as a zombie.
            std::thread::spawn(move || child.wait());
            None
        }
        Err(e) => Some(Event::Done(Err(format!(
            "notify_command failed to start: {e}"
        )))),
    }
}

/// What the screen says of an answer the person gave.
pub(crate) fn answered(approve: bool, request_id: &str, answer: &Message) -> String {
    let verb = if approve { "approved" } else { "denied" };
    format!("{verb} {request_id} ({} told)", answer.to)
}

/// The person's message to `to`.
pub(crate) fn person_says(to: &AgentName, text: String) -> Draft {
    Draft {
        text: Some(text),
        ..Draft::new(USER, to.clone())
    }
}

pub(crate) fn added(task: &Task) -> String {
    format!("added {}: {}", task.id, task.subject)
}

pub(crate) fn waits_for(task: &Task) -> String {
    if task.blocked_by.is_empty() {
        format!("{} waits for nothing", task.id)
    } else {
        format!("{} waits for {}", task.id, joined(&task.blocked_by, ", "))
    }
}

pub(crate) fn assigned(task: &Task) -> String {
    match &task.owner {
        Some(owner) => format!("{} assigned to {owner}", task.id),
        None => format!("{} is back in the pool", task.id),
    }
}

/// The person's `shutdown_request` to `name`.
pub(crate) fn shutdown_request(name: &AgentName) -> Draft {
    Draft {
        kind: MessageKind::ShutdownRequest,
        text: Some("the person at the screen asks you to shut down".into()),
        request: true,
        ..Draft::new(USER, name.clone())
    }
}

pub(crate) fn asked_to_shut_down(request: &Message) -> String {
    let id = request.request_id.as_deref().unwrap_or_default();
    format!(
        "asked {} to shut down ({id}); its answer comes to your inbox",
        request.to
    )
}

pub(crate) fn sent_back(task: &Task) -> String {
    format!(
        "{} sent back to {}",
        task.id,
        task.owner.as_deref().unwrap_or("nobody")
    )
}

pub(crate) fn discarded(task: &Task) -> String {
    format!("{} discarded: its changes were taken back out", task.id)
}

fn assign(
    ws: &Workspace,
    team: &TeamConfig,
    id: TaskId,
    to: Option<&AgentName>,
) -> Result<crew_store::Task, StoreError> {
    let teammates = team.teammate_roles();
    let who = to
        .map(|name| Claimant::teammate(&teammates, name))
        .transpose()?;
    ws.tasks().assign(id, who, Actor::Person)
}

/// Runs a highlighting effect.
pub(crate) fn highlight(highlighter: &Highlighter, effect: Effect) -> Option<Event> {
    match effect {
        Effect::HighlightFile {
            name,
            file,
            diff,
            theme,
        } => Some(Event::FileHighlighted {
            hunks: highlighter.file(&diff, &theme),
            name,
            file,
        }),
        Effect::HighlightCommand {
            request_id,
            command,
            theme,
        } => Some(Event::CommandHighlighted {
            segments: highlighter.text(&command, "sh", &theme),
            request_id,
        }),
        Effect::HighlightProposal {
            request_id,
            diff,
            theme,
        } => Some(Event::ProposalHighlighted {
            hunks: highlighter.file(&diff, &theme),
            request_id,
        }),
        _ => None,
    }
}

/// Bytes of the test's output the queue's view reads (its end).
const QUEUE_OUTPUT_BYTES: u64 = 16 * 1024;

/// The queue, its tasks' subjects (`subject` of each), and the end of the test's output
/// (the file `output`).
pub(crate) fn queue_snapshot(
    queue: &MergeQueue,
    output: &Path,
    subject: impl Fn(TaskId) -> Option<String>,
) -> Result<crate::queue_view::QueueSnapshot, StoreError> {
    use std::io::{Read, Seek, SeekFrom};
    let queue = queue.load()?;
    let subjects = queue
        .entries
        .iter()
        .filter_map(|e| Some((e.id, subject(e.id)?)))
        .collect();
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(output) {
        let len = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(QUEUE_OUTPUT_BYTES)));
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    Ok(crate::queue_view::QueueSnapshot {
        queue,
        subjects,
        output: text,
    })
}

pub(crate) fn pause_queue(queue: &MergeQueue, paused: bool) -> Result<String, String> {
    queue
        .set_paused(paused)
        .map(|()| {
            if paused {
                "merge queue paused: no new test run starts".to_string()
            } else {
                "merge queue resumed".to_string()
            }
        })
        .map_err(|e| e.to_string())
}

pub(crate) fn remove_from_queue(queue: &MergeQueue, id: TaskId) -> Result<String, String> {
    queue
        .remove(id)
        .map(|_| format!("{id} taken out of the merge queue; it stays in review"))
        .map_err(|e| e.to_string())
}

pub(crate) fn retried(
    result: Result<(), crew_team::merge_queue::QueueError>,
    id: TaskId,
) -> Result<String, String> {
    result
        .map(|()| format!("{id} waits in the merge queue again"))
        .map_err(|e| e.to_string())
}
