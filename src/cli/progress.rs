//! The progress of a team running without a screen (`crew up --headless`, on either store):
//! one line (or JSON object) per event a person cares about, what ends an `--until-done` run,
//! and the closing summary.

use std::collections::{HashMap, HashSet};

use serde_json::json;

use crate::cli::output;
use crate::cli::team::print_event;
use crew_agent::AgentEvent;
use crew_agent::StopReason;
use crew_agent::transcript_follower::TranscriptFollower;
use crew_protocol::joined;
use crew_store::requests::RequestState;
use crew_store::{AgentName, MessageKind, RequestInfo, Status, Task, TaskId};
use crew_team::run::headless::Happening;
use crew_team::run::supervisor::TeamEvent;

/// Why an `--until-done` run ends after a look.
pub(crate) enum RunEnd {
    /// Every task ended: the failed ones, said, if any.
    Done(Option<String>),
    /// The lead will not go on: why.
    GaveUp(String),
}

/// Whether an `--until-done` run ends with what `happened` and `tasks` as they are now.
pub(crate) fn until_done(happened: &[Happening], tasks: &[Task]) -> Option<RunEnd> {
    if let Some(why) = lead_gave_up(happened, tasks) {
        return Some(RunEnd::GaveUp(why));
    }
    all_done(tasks).then(|| RunEnd::Done(failed_tasks(tasks)))
}

/// `--until-done` with a lead that will not go on: its turn failed for good (the model's
/// retries are behind it), or it ended with not one task created, so nothing would ever end.
fn lead_gave_up(happened: &[Happening], tasks: &[Task]) -> Option<String> {
    for h in happened {
        let Happening::LeadTurn { success, summary } = h else {
            continue;
        };
        if !success {
            return Some(format!(
                "the lead's turn failed: {}",
                output::one_line(summary)
            ));
        }
        if tasks.is_empty() {
            return Some(format!(
                "the lead ended its turn without creating a task: {}",
                output::one_line(summary)
            ));
        }
    }
    None
}

/// Every task ended and some failed: which, and why.
fn failed_tasks(tasks: &[Task]) -> Option<String> {
    let failed: Vec<String> = tasks
        .iter()
        .filter(|t| t.status == Status::Failed)
        .map(|t| {
            format!(
                "{} ({}): {}",
                t.id,
                output::one_line(&t.subject),
                output::one_line(t.result.as_deref().unwrap_or("no reason given"))
            )
        })
        .collect();
    (!failed.is_empty()).then(|| format!("failed: {}", failed.join("; ")))
}

/// Every task completed or failed (and there is at least one): nothing runs and no review waits.
pub fn all_done(tasks: &[Task]) -> bool {
    !tasks.is_empty()
        && tasks
            .iter()
            .all(|t| matches!(t.status, Status::Completed | Status::Failed))
}

/// The headless progress: one line (or, with `--json`, one JSON object with a `type`) per event
/// a person cares about. Task changes are seen in the store, so every writer's are reported;
/// model trouble (retries, recoveries, a teammate's failed turn) in the agents' transcripts;
/// text an agent wrote is escaped for the terminal.
pub(crate) struct Progress {
    json: bool,
    tasks: HashMap<TaskId, Status>,
    asked: HashSet<crew_store::RequestId>,
    /// The agents' transcripts, and the lead (whose failed turns are told as `lead_error`).
    transcripts: Option<(TranscriptFollower, AgentName)>,
    /// The lead runs in a worker of its own (a team on PostgreSQL): its turns are read from
    /// its transcript, not reported by this process.
    lead_elsewhere: bool,
    /// How the person calls crew on this team, for the commands the lines suggest.
    crew: String,
}

impl Progress {
    pub(crate) fn new(json: bool) -> Self {
        Progress {
            json,
            tasks: HashMap::new(),
            asked: HashSet::new(),
            transcripts: None,
            lead_elsewhere: false,
            crew: "crew".into(),
        }
    }

    /// Also tells what the agents' transcripts say of their models from now on.
    pub(crate) fn with_agents(
        mut self,
        workspace: &crew_store::Workspace,
        lead: &AgentName,
    ) -> Self {
        self.transcripts = Some((TranscriptFollower::new(workspace.root()), lead.clone()));
        self
    }

    /// The commands suggested start with `crew` (`crew --store URL` for a team on PostgreSQL).
    pub(crate) fn calling(mut self, crew: String) -> Self {
        self.crew = crew;
        self
    }

    /// The lead's turns are read from its transcript (see `lead_elsewhere`).
    pub(crate) fn lead_elsewhere(mut self) -> Self {
        self.lead_elsewhere = true;
        self
    }

    /// Model retries, recoveries and fallbacks of every agent, and a teammate's turn that
    /// stopped short (the lead's is a `Happening::LeadTurn`), since the last look; the lead's
    /// turns that ended, when it runs elsewhere.
    pub(crate) fn agents(&mut self) -> Vec<Happening> {
        let mut lead_turns = Vec::new();
        let Some((follower, lead)) = &mut self.transcripts else {
            return lead_turns;
        };
        let lead = lead.clone();
        for (agent, line) in follower.new_lines() {
            let who = output::one_line(&agent).into_owned();
            match line.event {
                AgentEvent::Recovery {
                    kind,
                    attempt,
                    reason,
                } => self.say(
                    "recovery",
                    json!({"agent": agent, "kind": kind, "attempt": attempt, "text": reason}),
                    format!("{who}: {}", output::one_line(&reason)),
                ),
                AgentEvent::ModelFallback { from, to, reason } => self.say(
                    "model_fallback",
                    json!({"agent": agent, "from": from, "to": to, "text": reason}),
                    format!(
                        "{who}: model {} → {}: {}",
                        output::one_line(&from),
                        output::one_line(&to),
                        output::one_line(&reason)
                    ),
                ),
                AgentEvent::TurnEnd { result }
                    if agent == lead.as_str()
                        && self.lead_elsewhere
                        && result.stop_reason != StopReason::Interrupted =>
                {
                    let success = result.stop_reason == StopReason::Completed;
                    lead_turns.push(Happening::LeadTurn {
                        success,
                        summary: if success { result.output } else { result.reason },
                    });
                }
                AgentEvent::TurnEnd { result }
                    if agent != lead.as_str()
                        && !matches!(
                            result.stop_reason,
                            StopReason::Completed | StopReason::Interrupted
                        ) =>
                {
                    self.say(
                        "turn_stopped",
                        json!({"agent": agent, "stop_reason": result.stop_reason, "text": result.reason}),
                        format!(
                            "{who}'s turn stopped ({:?}): {}",
                            result.stop_reason,
                            output::one_line(&result.reason)
                        ),
                    )
                }
                _ => {}
            }
        }
        lead_turns
    }

    pub(crate) fn say(&self, kind: &str, mut fields: serde_json::Value, line: String) {
        if self.json {
            fields["type"] = kind.into();
            println!("{}", output::json_line(&fields));
        } else {
            println!("{line}");
        }
    }

    /// The closing summary: what waits for review, and each review's verdict (none is no pass).
    pub(crate) fn summary(&self, tasks: &[Task]) {
        let waiting: Vec<TaskId> = tasks
            .iter()
            .filter(|t| t.status == Status::Review)
            .map(|t| t.id)
            .collect();
        if !waiting.is_empty() {
            self.say(
                "waiting_for_review",
                json!({ "ids": waiting }),
                format!(
                    "waiting for review: {} ({} review list)",
                    joined(&waiting, ", "),
                    self.crew
                ),
            );
        }
        for (task, verdict) in crew_team::verdict::of_reviews(tasks) {
            self.say(
                "verdict",
                json!({ "id": task, "verdict": verdict }),
                format!("{task} verdict: {}", output::one_line(&verdict)),
            );
        }
    }

    pub(crate) fn happenings(&self, happenings: &[Happening]) {
        for h in happenings {
            match h {
                Happening::Team(e) if !self.json => print_event(e),
                Happening::Team(e) => self.say("agent", team_event_json(e), String::new()),
                Happening::Answered {
                    request_id,
                    from,
                    approved,
                    what,
                } => self.say(
                    "request_answered",
                    json!({"request_id": request_id, "from": from, "approved": approved, "text": what}),
                    format!(
                        "{} {from}'s request {request_id}: {}",
                        if *approved { "approved" } else { "denied" },
                        output::one_line(what)
                    ),
                ),
                Happening::Reviewed { id, text } => self.say(
                    "review",
                    json!({"id": id, "text": text}),
                    output::one_line(text).into_owned(),
                ),
                Happening::Queue { text } => self.say(
                    "queue",
                    json!({"text": text}),
                    output::one_line(text).into_owned(),
                ),
                Happening::LeadTurn { success: true, .. } => {}
                Happening::LeadTurn {
                    success: false,
                    summary,
                } => self.say(
                    "lead_error",
                    json!({"text": summary}),
                    format!("the lead's turn failed: {}", output::one_line(summary)),
                ),
            }
        }
    }

    /// What changed in the tasks and the requests since the last look.
    pub(crate) fn look(&mut self, tasks: &[Task], requests: &[RequestInfo]) {
        for task in tasks {
            let before = self.tasks.insert(task.id, task.status);
            if before == Some(task.status) {
                continue;
            }
            let id = task.id;
            let owner = task
                .owner
                .as_ref()
                .map(|o| o.to_string())
                .unwrap_or_default();
            let subject = output::one_line(&task.subject);
            if before.is_none() {
                self.say(
                    "task_created",
                    json!({"id": id, "subject": task.subject, "role": task.role}),
                    format!("{id} created: {subject}"),
                );
            }
            let why = output::one_line(task.result.as_deref().unwrap_or("no reason given"));
            // Looks are apart: a task claimed and ended between two was still claimed.
            let unclaimed_before = matches!(before, None | Some(Status::Pending));
            let worked = matches!(
                task.status,
                Status::Review | Status::Completed | Status::Failed
            );
            if unclaimed_before && worked && task.owner.is_some() {
                self.say(
                    "task_claimed",
                    json!({"id": id, "owner": owner}),
                    format!("{id} claimed by {owner}"),
                );
            }
            match task.status {
                Status::Pending if before.is_some() => self.say(
                    "task_released",
                    json!({"id": id}),
                    format!("{id} is pending again"),
                ),
                Status::Pending => {}
                Status::InProgress => self.say(
                    "task_claimed",
                    json!({"id": id, "owner": owner}),
                    format!("{id} claimed by {owner}"),
                ),
                Status::Review => self.say(
                    "task_in_review",
                    json!({"id": id, "owner": owner}),
                    format!("{id} is in review ({} review show {id})", self.crew),
                ),
                Status::Completed if before == Some(Status::Review) => {
                    self.say("task_merged", json!({"id": id}), format!("{id} merged"))
                }
                Status::Completed => self.say(
                    "task_completed",
                    json!({"id": id, "owner": owner}),
                    format!("{id} done by {owner}: {subject}"),
                ),
                Status::Failed => self.say(
                    "task_failed",
                    json!({"id": id, "owner": owner, "reason": task.result}),
                    format!("{id} failed ({owner}): {why}"),
                ),
            }
        }
        for r in requests {
            let person_answers = matches!(
                r.kind,
                MessageKind::PermissionRequest | MessageKind::BudgetRequest
            );
            if r.state != RequestState::Pending
                || !person_answers
                || self.asked.contains(&r.request_id)
            {
                continue;
            }
            self.asked.insert(r.request_id.clone());
            let answer = format!(
                "{} respond {} --as user approve|reject",
                self.crew, r.request_id
            );
            let text = r.text.as_deref().unwrap_or_default();
            let (kind, what) = if r.kind == MessageKind::BudgetRequest {
                ("budget_reached", "budget reached")
            } else {
                ("request_waiting", "waiting")
            };
            self.say(
                kind,
                json!({"request_id": r.request_id, "from": r.from, "text": text, "answer": answer}),
                format!(
                    "{what}, {} from {}: {} — answer with `{answer}`",
                    r.request_id,
                    r.from,
                    output::one_line(text)
                ),
            );
        }
    }
}

fn team_event_json(e: &TeamEvent) -> serde_json::Value {
    match e {
        TeamEvent::Started { name, pid } => json!({"event": "started", "name": name, "pid": pid}),
        TeamEvent::Adopted { name, pid } => json!({"event": "adopted", "name": name, "pid": pid}),
        TeamEvent::Died {
            name,
            released,
            why,
        } => json!({"event": "died", "name": name, "released": released, "why": why}),
        TeamEvent::Exited { name, code } => {
            json!({"event": "stopped", "name": name, "code": code})
        }
        TeamEvent::ShutDown { name } => json!({"event": "stopped", "name": name}),
    }
}
