//! Carrying out the person's effects on a team kept in PostgreSQL: answers, messages, tasks and
//! shutdown requests through the store; reviews through the store and the person's checkout
//! (a teammate's commits fetched from the team's remote), when the screen runs in one, and so is
//! the merge queue (kept in that checkout, run by the screen). What
//! steers processes (stop, restart, interrupt) or edits crew.toml works on a checkout's team
//! only: those are refused, saying what to do instead.

use std::path::PathBuf;

use crate::effects::{
    added, answered, asked_to_shut_down, assigned, discarded, pause_queue, person_says,
    queue_snapshot, remove_from_queue, retried, sent_back, shutdown_request, waits_for,
};
use crate::event::{Effect, Event};
use crew_config::TeamConfig;
use crew_store::{Actor, Claimant, TaskPatch, USER};
use crew_store_pg::PgStore;
use crew_team::merge_queue::{QueueFiles, retry_on};
use crew_team::review::Desk;

/// Carries out effects on the store from a thread of the screen's, on `runtime`: the one the
/// store's connections run on (a connection made on another runtime would wait for it).
pub struct StoreEffects {
    store: PgStore,
    /// The person's checkout, where reviews merge; `None` away from one.
    checkout: Option<PathBuf>,
    /// The merge queue's files in that checkout.
    queue: Option<QueueFiles>,
    runtime: tokio::runtime::Handle,
}

impl StoreEffects {
    pub fn new(
        store: PgStore,
        checkout: Option<PathBuf>,
        queue: Option<QueueFiles>,
        runtime: tokio::runtime::Handle,
    ) -> StoreEffects {
        StoreEffects {
            store,
            checkout,
            queue,
            runtime,
        }
    }

    /// Runs a store or review effect; highlighting and the terminal's are not handled here.
    pub fn execute(&mut self, effect: Effect) -> Option<Event> {
        let (store, checkout, queue) = (&self.store, self.checkout.clone(), self.queue.as_ref());
        self.runtime.block_on(async move {
            let team = match store.team().await {
                Ok(Some(team)) => team,
                Ok(None) => return done(Err("no team is published in the store".into())),
                Err(e) => return done(Err(e.to_string())),
            };
            let path = std::path::Path::new("crew.toml (as published in the store)");
            match TeamConfig::parse(path, &team.toml) {
                Ok(config) => execute(store, checkout, queue, &config, effect).await,
                Err(e) => done(Err(e.to_string())),
            }
        })
    }
}

const NO_QUEUE_HERE: &str =
    "the merge queue lands in your checkout: run `crew --store URL ui` there";

fn done(result: Result<String, String>) -> Option<Event> {
    Some(Event::Done(result))
}

async fn execute(
    store: &PgStore,
    checkout: Option<PathBuf>,
    queue: Option<&QueueFiles>,
    team: &TeamConfig,
    effect: Effect,
) -> Option<Event> {
    let err = |e: crew_store_pg::PgStoreError| e.to_string();
    let said = |e: crew_team::review::ReviewError| e.to_string();
    let timeout = team.request_timeout();
    let desk = || {
        checkout
            .clone()
            .map(|root| Desk::new(store.clone(), root, team))
            .ok_or_else(|| {
                "reviews merge into your checkout: run `crew --store URL ui` there".to_string()
            })
    };
    let queue_files = || queue.ok_or_else(|| NO_QUEUE_HERE.to_string());
    let queue = || queue_files().map(QueueFiles::queue);
    match effect {
        Effect::Respond {
            request_id,
            approve,
            note,
        } => done(
            store
                .respond(&request_id, &USER, approve, note, timeout)
                .await
                .map(|m| answered(approve, &request_id, &m))
                .map_err(err),
        ),
        Effect::Send { to, text } => done(
            store
                .send(person_says(&to, text))
                .await
                .map(|_| format!("sent to {to}"))
                .map_err(err),
        ),
        Effect::AddTask(new) => done(store.create_task(new).await.map(|t| added(&t)).map_err(err)),
        Effect::SetDeps { id, blocked_by } => done(
            store
                .update(
                    id,
                    TaskPatch {
                        blocked_by: Some(blocked_by),
                        ..TaskPatch::default()
                    },
                    Actor::Person,
                )
                .await
                .map(|t| waits_for(&t))
                .map_err(err),
        ),
        Effect::Assign { id, to } => {
            let teammates = team.teammate_roles();
            let who = match to
                .as_ref()
                .map(|name| Claimant::teammate(&teammates, name))
                .transpose()
            {
                Ok(who) => who,
                Err(e) => return done(Err(e.to_string())),
            };
            done(
                store
                    .assign(id, who, Actor::Person)
                    .await
                    .map(|t| assigned(&t))
                    .map_err(err),
            )
        }
        Effect::RequestShutdown { name } => done(
            store
                .send(shutdown_request(&name))
                .await
                .map(|m| asked_to_shut_down(&m))
                .map_err(err),
        ),
        Effect::LoadReviews => Some(Event::Reviews(
            async { desk()?.list().await.map_err(said) }.await,
        )),
        Effect::LoadDiff {
            name,
            task: Some(id),
        } => Some(Event::Diff {
            result: async { desk()?.diff(id).await.map_err(said) }.await,
            name,
            task: Some(id),
        }),
        Effect::MergeReview { id } => {
            done(async { desk()?.merge(id, &USER).await.map_err(said) }.await)
        }
        Effect::SendBackReview { id, note } => done(
            async {
                let task = desk()?.send_back(id, &USER, &note).await.map_err(said)?;
                Ok(sent_back(&task))
            }
            .await,
        ),
        Effect::DiscardReview { id, reason } => done(
            async {
                let task = desk()?.discard(id, &USER, &reason).await.map_err(said)?;
                Ok(discarded(&task))
            }
            .await,
        ),
        Effect::LoadDiff { name, task: None } => Some(Event::Diff {
            result: Err(format!(
                "{name}'s worktree may be on another host: open one of its tasks in review"
            )),
            name,
            task: None,
        }),
        Effect::ApproveReview { id } => done(
            async {
                let queue = queue()?;
                desk()?.approve(id, &USER, &queue).await.map_err(said)
            }
            .await,
        ),
        Effect::LoadQueue => Some(Event::Queue(
            async {
                let files = queue_files()?;
                let tasks = store.tasks().await.map_err(err)?;
                let subject = |id| tasks.iter().find(|t| t.id == id).map(|t| t.subject.clone());
                queue_snapshot(&files.queue(), &files.output_log(), subject)
                    .map_err(|e| e.to_string())
            }
            .await,
        )),
        Effect::PauseQueue { paused } => done(queue().and_then(|q| pause_queue(&q, paused))),
        Effect::RemoveFromQueue { id } => done(queue().and_then(|q| remove_from_queue(&q, id))),
        Effect::RetryInQueue { id } => done(
            async {
                let queue = queue()?;
                retried(retry_on(&desk()?, &queue, id).await, id)
            }
            .await,
        ),
        Effect::AllowAndApprove { .. } => done(Err(not_here(
            "adding an allow rule (approve it once, and add the rule in the checkout)",
        ))),
        Effect::StopTeam | Effect::ForceStop => done(Err(not_here("stopping the team"))),
        Effect::Restart { .. } => done(Err(not_here("restarting a teammate"))),
        Effect::Interrupt { .. } => done(Err(not_here("interrupting"))),
        Effect::Merge { .. } | Effect::Discard { .. } => {
            done(Err(not_here("merging a worktree (review its tasks)")))
        }
        Effect::PrepareProposal { request_id, .. } => Some(Event::Proposal {
            diff: Err("the file is in the teammate's worktree, maybe on another host".into()),
            request_id,
        }),
        // The person's crew.toml, as only they publish it: run where the screen runs.
        Effect::Notify { command, request } => crate::effects::notify(
            &checkout.unwrap_or_else(|| PathBuf::from(".")),
            &command,
            &request,
        ),
        Effect::HighlightFile { .. }
        | Effect::HighlightCommand { .. }
        | Effect::HighlightProposal { .. }
        | Effect::Bell
        | Effect::DesktopNotify { .. } => None,
    }
}

/// Why `what` is refused on a team in the store.
fn not_here(what: &str) -> String {
    format!(
        "{what}: not on a team kept in PostgreSQL yet (its workers run where they were started; \
         stop one with a shutdown request, change crew.toml in the checkout and `crew store \
         publish URL`)"
    )
}
