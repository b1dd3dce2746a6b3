//! Asking the person for permission through whichever store the team is on: the request goes to
//! the lead's inbox and the answer (a `permission_response` from the person, same `request_id`)
//! is awaited in the asker's own, woken by the store's change watch. No answer in time is a
//! denial. The file-only `MailboxPrompter` reads the inbox file from a byte offset; this one
//! reads what is unread, which holds the answer: the worker that asks does not move its cursor
//! while its job runs.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crew_agent::{AnswerChannel, EventSink, ask_on_thread, permission_request, wait_for_answer};
use crew_store::{AgentName, Draft, Message};
use crew_tools::{PermissionAnswer, PermissionAsk, Prompter};
use futures::future::BoxFuture;

use crate::run::link::{ChangeWatch, LinkedStore, TeamLink};

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
        // Watching before sending, so no answer can slip past.
        let watch = match self.link.watch_inbox(&self.agent) {
            Ok(watch) => watch,
            Err(e) => return PermissionAnswer::Deny(format!("cannot wait for an answer: {e}")),
        };
        let mut inbox = UnreadInbox {
            link: &self.link,
            agent: &self.agent,
            watch,
        };
        let draft = permission_request(&self.agent, &self.lead, self.timeout, &ask);
        wait_for_answer(
            &mut inbox,
            draft,
            self.timeout,
            self.events.as_ref(),
            abandoned,
        )
    }
}

/// The asker's unread messages in the store, woken by its change watch.
struct UnreadInbox<'a, S: LinkedStore> {
    link: &'a TeamLink<S>,
    agent: &'a AgentName,
    watch: ChangeWatch,
}

impl<S: LinkedStore> AnswerChannel for UnreadInbox<'_, S> {
    fn send(&mut self, draft: Draft) -> Result<Message, String> {
        self.link
            .call(|store| async move { store.send(draft).await })
            .map_err(|e| e.to_string())
    }

    fn look(&mut self) -> Result<Vec<Message>, String> {
        let me = self.agent.clone();
        let unread = self
            .link
            .call(|store| async move { store.unread(&me, LOOK_THROUGH).await })
            .map_err(|e| e.to_string())?;
        Ok(unread.into_iter().map(|(_, m)| m).collect())
    }

    fn wait(&mut self, at_most: Duration) {
        self.watch.wait(at_most);
    }
}

impl<S: LinkedStore> Prompter for StorePrompter<S> {
    fn ask(&self, req: PermissionAsk) -> BoxFuture<'static, PermissionAnswer> {
        let prompter = self.clone();
        ask_on_thread(move |abandoned| prompter.wait_for_answer(req, abandoned))
    }
}
