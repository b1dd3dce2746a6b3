//! Asking the person for permission through whichever store the team is on: the request goes to
//! the lead's inbox and the answer (a `permission_response` from the person, same `request_id`)
//! is awaited in the asker's own, woken by the store's change watch. No answer in time is a
//! denial. The file-only `MailboxPrompter` reads the inbox file from a byte offset; this one
//! reads what is unread, which holds the answer: the worker that asks does not move its cursor
//! while its job runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crew_agent::{AbandonOnDrop, AgentEvent, EventSink, find_answer, permission_request};
use crew_store::AgentName;
use crew_tools::{PermissionAnswer, PermissionAsk, Prompter};
use futures::future::BoxFuture;

use crate::run::link::{LinkedStore, TeamLink};

/// How often a waiting thread looks whether its asker has gone away.
const ABANDON_CHECK: Duration = Duration::from_millis(500);

/// Most unread messages looked through for the answer.
const LOOK_THROUGH: usize = 10_000;

#[derive(Clone)]
pub(crate) struct StorePrompter<S: LinkedStore> {
    link: TeamLink<S>,
    agent: AgentName,
    lead: AgentName,
    timeout: Duration,
    events: Option<EventSink>,
}

impl<S: LinkedStore> StorePrompter<S> {
    pub(crate) fn new(
        link: TeamLink<S>,
        agent: AgentName,
        lead: AgentName,
        timeout: Duration,
    ) -> Self {
        StorePrompter {
            link,
            agent,
            lead,
            timeout,
            events: None,
        }
    }

    /// Also emits `PermissionWaiting` to `sink` while blocked (so a worker can show WAITING).
    pub(crate) fn with_events(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    fn wait_for_answer(&self, ask: PermissionAsk, abandoned: &AtomicBool) -> PermissionAnswer {
        let deny = |why: String| PermissionAnswer::Deny(why);
        // Watching before sending, so no answer can slip past.
        let mut watch = match self.link.watch_inbox(&self.agent) {
            Ok(watch) => watch,
            Err(e) => return deny(format!("cannot wait for an answer: {e}")),
        };
        let draft = permission_request(&self.agent, &self.lead, self.timeout, &ask);
        let sent = match self
            .link
            .call(|store| async move { store.send(draft).await })
        {
            Ok(sent) => sent,
            Err(e) => return deny(format!("could not send the permission request: {e}")),
        };
        let Some(request_id) = sent.request_id else {
            return deny("the permission request got no request id".to_string());
        };
        if let Some(events) = &self.events {
            events.emit(AgentEvent::PermissionWaiting {
                request_id: request_id.clone(),
                to: self.lead.clone(),
            });
        }
        let deadline = Instant::now() + self.timeout;
        loop {
            let me = self.agent.clone();
            match self
                .link
                .call(|store| async move { store.unread(&me, LOOK_THROUGH).await })
            {
                Ok(unread) => {
                    if let Some(answer) = find_answer(unread.iter().map(|(_, m)| m), &request_id) {
                        return answer;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading the inbox for a permission answer failed")
                }
            }
            if abandoned.load(Ordering::SeqCst) {
                return deny("nobody waits for this answer any more".to_string());
            }
            let now = Instant::now();
            if now >= deadline {
                return deny(format!(
                    "no answer to permission request {request_id} within {} s; denied",
                    self.timeout.as_secs()
                ));
            }
            watch.wait((deadline - now).min(ABANDON_CHECK));
        }
    }
}

impl<S: LinkedStore> Prompter for StorePrompter<S> {
    fn ask(&self, req: PermissionAsk) -> BoxFuture<'static, PermissionAnswer> {
        let prompter = self.clone();
        let abandoned = Arc::new(AtomicBool::new(false));
        let guard = AbandonOnDrop(Arc::clone(&abandoned));
        Box::pin(async move {
            let _guard = guard;
            tokio::task::spawn_blocking(move || prompter.wait_for_answer(req, &abandoned))
                .await
                .unwrap_or_else(|e| {
                    PermissionAnswer::Deny(format!("the permission wait failed: {e}"))
                })
        })
    }
}
