//! What stands in for the person when nobody is at a screen (`crew up --headless`, on either
//! store): the permission policy answers pending requests, the merge policy merges each review
//! or approves it into the merge queue. Never by accident: no policy, no answer (an unanswered
//! request expires into a denial), and a review the policy cannot take waits for the person,
//! told once.

use std::collections::HashSet;
use std::time::Duration;

use crate::review::{Desk, ReviewError};
use crate::run::headless::{Happening, MergePolicy, Policy};
use crew_protocol::joined;
use crew_protocol::terminal_text::one_line;
use crew_store::requests::RequestState;
use crew_store::{BackendError, MergeQueue, MessageKind, TaskId, TeamStore, USER};

pub struct StandIn {
    policy: Option<Policy>,
    merge: MergePolicy,
    /// Reviews the merge policy could not take, so each is reported once.
    left_for_person: HashSet<TaskId>,
}

impl StandIn {
    pub fn new(policy: Option<Policy>, merge: MergePolicy) -> StandIn {
        StandIn {
            policy,
            merge,
            left_for_person: HashSet::new(),
        }
    }

    /// One look: the pending requests the policy answers and the reviews the merge policy
    /// takes, on `desk`'s team (`queue`: where `--merge queue` approves into).
    pub async fn act<S: TeamStore>(
        &mut self,
        store: &S,
        desk: &Desk<'_, S>,
        queue: &MergeQueue,
        request_timeout: Duration,
    ) -> Result<Vec<Happening>, S::Error> {
        let mut happened = match self.policy {
            Some(policy) => answer_pending(store, policy, request_timeout).await?,
            None => Vec::new(),
        };
        match self.merge {
            MergePolicy::Auto => happened.extend(self.merge_reviews(desk).await),
            MergePolicy::Queue => happened.extend(self.approve_reviews(desk, queue).await),
            MergePolicy::Manual => {}
        }
        Ok(happened)
    }

    /// `--merge auto`: every task in review is merged as the person would; one that cannot be
    /// (a conflict, crew.toml or CI changed) waits for the person and is reported once.
    async fn merge_reviews<S: TeamStore>(&mut self, desk: &Desk<'_, S>) -> Vec<Happening> {
        let reviews = match desk.list().await {
            Ok(reviews) => reviews,
            Err(e) => {
                tracing::warn!("reviews not read: {e}");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for r in reviews {
            if self.left_for_person.contains(&r.id) || r.unavailable.is_some() {
                continue;
            }
            if !r.protected.is_empty() {
                self.left_for_person.insert(r.id);
                // The paths and reasons are agents' file names: the line is made safe here.
                let text = format!(
                    "{} changes {}: not merged automatically, it waits for `crew review merge {}`",
                    r.id,
                    joined(&r.protected, ", "),
                    r.id
                );
                out.push(Happening::Reviewed {
                    text: one_line(&text).into_owned(),
                    id: r.id,
                });
                continue;
            }
            let merged = desk.merge_automatically(r.id).await;
            out.push(self.took(r.id, merged));
        }
        out
    }

    /// What the policy's answer to review `id` was, told; one it could not take waits for the
    /// person from now on.
    fn took(&mut self, id: TaskId, answer: Result<String, ReviewError>) -> Happening {
        let text = answer.unwrap_or_else(|e| {
            self.left_for_person.insert(id);
            format!("{e}; it waits for the person")
        });
        // It names agents' files and notes: made safe for the terminal here.
        Happening::Reviewed {
            id,
            text: one_line(&text).into_owned(),
        }
    }

    /// `--merge queue`: every task entering review is approved into the merge queue, as the
    /// person would; one that cannot be (crew.toml or CI changed) waits for the person.
    async fn approve_reviews<S: TeamStore>(
        &mut self,
        desk: &Desk<'_, S>,
        queue: &MergeQueue,
    ) -> Vec<Happening> {
        let (reviews, queued) = match (desk.list().await, queue.load()) {
            (Ok(reviews), Ok(queued)) => (reviews, queued),
            (Err(e), _) => {
                tracing::warn!("reviews not read: {e}");
                return Vec::new();
            }
            (_, Err(e)) => {
                tracing::warn!("merge queue not read: {e}");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for r in reviews {
            // Once per head: a task the queue refused waits for the person's `retry`.
            let seen = queued.entry(r.id).is_some_and(|e| e.head == r.head);
            if seen || self.left_for_person.contains(&r.id) || r.unavailable.is_some() {
                continue;
            }
            let approved = desk.approve(r.id, &USER, queue).await;
            out.push(self.took(r.id, approved.map(|text| format!("{text} (--merge queue)"))));
        }
        out
    }
}

/// Every pending permission request answered by `policy`, as the person.
async fn answer_pending<S: TeamStore>(
    store: &S,
    policy: Policy,
    request_timeout: Duration,
) -> Result<Vec<Happening>, S::Error> {
    let approve = policy == Policy::Allow;
    let mut answered = Vec::new();
    for request in store.requests(request_timeout).await? {
        if request.state != RequestState::Pending || request.kind != MessageKind::PermissionRequest
        {
            continue;
        }
        let note = format!(
            "headless policy: --approve {}",
            if approve { "allow" } else { "deny" }
        );
        match store
            .respond(
                &request.request_id,
                &USER,
                approve,
                Some(note),
                request_timeout,
            )
            .await
        {
            Ok(_) => answered.push(Happening::Answered {
                request_id: request.request_id.clone(),
                from: request.from.clone(),
                approved: approve,
                what: request.text.clone().unwrap_or_default(),
            }),
            // Answered or expired meanwhile: nothing to do.
            Err(e) if e.refusal().is_some() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(answered)
}
