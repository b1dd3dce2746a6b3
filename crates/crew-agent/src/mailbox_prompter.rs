//! Asking the lead's side for permission through the mailboxes: a teammate's `ask` becomes a
//! `permission_request` in the lead's inbox, and the answer (a `permission_response` from the
//! person, same `request_id`) is awaited in the teammate's own inbox. No answer in time is a
//! denial. Waking up is driven by file-system events on `.mailboxes`, not by polling.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use crate::event::{AgentEvent, EventSink};
use crew_protocol::USER;
use crew_store::MessageKind;
use crew_store::{AgentName, DirWatcher, Draft, Entry, Mailboxes, Message, Roster};
use crew_tools::{PermissionAnswer, PermissionAsk, Prompter};

/// How often a waiting thread looks whether its asker has gone away (answers themselves wake
/// it at once through file events).
const ABANDON_CHECK: Duration = Duration::from_millis(500);

/// A `Prompter` for teammates: asks through the lead's inbox and waits for the person's answer.
#[derive(Clone)]
pub struct MailboxPrompter {
    mailboxes: Mailboxes,
    roster: Roster,
    agent: AgentName,
    lead: AgentName,
    timeout: Duration,
    events: Option<EventSink>,
}

impl MailboxPrompter {
    /// `agent` asks, `lead` receives the request; both must be on `roster`.
    pub fn new(
        mailboxes: Mailboxes,
        roster: Roster,
        agent: AgentName,
        lead: AgentName,
        timeout: Duration,
    ) -> Self {
        Self {
            mailboxes,
            roster,
            agent,
            lead,
            timeout,
            events: None,
        }
    }

    /// Also emits `PermissionWaiting` to `sink` while blocked (so a worker can show WAITING).
    pub fn with_events(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// Sends the request and blocks until the answer, the timeout, or `abandoned`.
    fn wait_for_answer(&self, ask: PermissionAsk, abandoned: &AtomicBool) -> PermissionAnswer {
        // Watch before sending and note where the inbox ends, so no answer can slip past.
        let watcher = match DirWatcher::new(&[self.mailboxes.dir()]) {
            Ok(watcher) => watcher,
            Err(e) => return PermissionAnswer::Deny(format!("cannot wait for an answer: {e}")),
        };
        let offset =
            std::fs::metadata(self.mailboxes.inbox_path(&self.agent)).map_or(0, |m| m.len());
        let mut inbox = InboxFile {
            prompter: self,
            watcher,
            offset,
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

/// The asker's inbox file, read on from where it ended when the request was sent.
struct InboxFile<'a> {
    prompter: &'a MailboxPrompter,
    watcher: DirWatcher,
    offset: u64,
}

impl AnswerChannel for InboxFile<'_> {
    fn send(&mut self, draft: Draft) -> Result<Message, String> {
        let p = self.prompter;
        p.mailboxes
            .send(&p.roster, draft)
            .map_err(|e| e.to_string())
    }

    fn look(&mut self) -> Result<Vec<Message>, String> {
        let p = self.prompter;
        let batch = p
            .mailboxes
            .read_from(&p.agent, self.offset)
            .map_err(|e| e.to_string())?;
        self.offset = batch.end;
        Ok(batch
            .entries
            .into_iter()
            .filter_map(|e| match e {
                Entry::Message { message, .. } => Some(message),
                Entry::Broken { .. } => None,
            })
            .collect())
    }

    fn wait(&mut self, at_most: Duration) {
        self.watcher.wait(at_most);
    }
}

/// How an asker's request reaches the lead and its answer comes back; opened before the request
/// is sent (watching the asker's inbox), so no answer can slip past.
pub trait AnswerChannel {
    fn send(&mut self, draft: Draft) -> Result<Message, String>;
    /// What came into the asker's inbox since the last look (an answer may be among it).
    fn look(&mut self) -> Result<Vec<Message>, String>;
    /// Blocks until the inbox may have changed, or `at_most`.
    fn wait(&mut self, at_most: Duration);
}

/// Sends `request` through `channel` and blocks until the person's answer, `timeout` (a
/// denial), or `abandoned`. Emits `PermissionWaiting` to `events` once the request is sent.
pub fn wait_for_answer(
    channel: &mut impl AnswerChannel,
    request: Draft,
    timeout: Duration,
    events: Option<&EventSink>,
    abandoned: &AtomicBool,
) -> PermissionAnswer {
    let deny = |why: String| PermissionAnswer::Deny(why);
    let lead = request.to.clone();
    let sent = match channel.send(request) {
        Ok(sent) => sent,
        Err(e) => return deny(format!("could not send the permission request: {e}")),
    };
    let Some(request_id) = sent.request_id else {
        return deny("the permission request got no request id".to_string());
    };
    if let Some(events) = events {
        events.emit(AgentEvent::PermissionWaiting {
            request_id: request_id.clone(),
            to: lead,
        });
    }
    let deadline = Instant::now() + timeout;
    loop {
        match channel.look() {
            Ok(messages) => {
                if let Some(answer) = find_answer(&messages, &request_id) {
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
                timeout.as_secs()
            ));
        }
        channel.wait((deadline - now).min(ABANDON_CHECK));
    }
}

/// A prompter's `ask`: runs `wait` (which blocks) on a blocking thread, telling it through its
/// flag when the asking future is dropped (e.g. the turn was cancelled).
pub fn ask_on_thread(
    wait: impl FnOnce(&AtomicBool) -> PermissionAnswer + Send + 'static,
) -> BoxFuture<'static, PermissionAnswer> {
    let abandoned = Arc::new(AtomicBool::new(false));
    let guard = AbandonOnDrop(Arc::clone(&abandoned));
    Box::pin(async move {
        let _guard = guard;
        tokio::task::spawn_blocking(move || wait(&abandoned))
            .await
            .unwrap_or_else(|e| PermissionAnswer::Deny(format!("the permission wait failed: {e}")))
    })
}

/// The `permission_request` `agent` sends `lead` for `ask`, answered within `timeout`.
pub fn permission_request(
    agent: &AgentName,
    lead: &AgentName,
    timeout: Duration,
    ask: &PermissionAsk,
) -> Draft {
    let mut extra = Map::new();
    extra.insert("tool".into(), json!(ask.tool));
    extra.insert("input".into(), ask.input.clone());
    extra.insert(
        "subject".into(),
        serde_json::to_value(&ask.subject).unwrap_or(Value::Null),
    );
    extra.insert("reason".into(), json!(ask.reason));
    extra.insert("workspace".into(), json!(ask.workspace));
    if let Some(purpose) = &ask.purpose {
        extra.insert("purpose".into(), json!(purpose));
    }
    extra.insert("timeout_secs".into(), json!(timeout.as_secs()));
    Draft {
        from: agent.clone(),
        to: lead.clone(),
        kind: MessageKind::PermissionRequest,
        text: Some(format!(
            "{} asks to use {}: {}",
            agent, ask.tool, ask.reason
        )),
        request: true,
        extra,
    }
}

/// The person's answer to `request_id` among `messages`, if there is one.
fn find_answer<'a>(
    messages: impl IntoIterator<Item = &'a crew_store::Message>,
    request_id: &str,
) -> Option<PermissionAnswer> {
    messages.into_iter().find_map(|message| {
        // Only the person answers permission requests (the store enforces it; checked again).
        if message.request_id.as_deref() != Some(request_id) || message.from != USER {
            return None;
        }
        message.approve.map(|approved| {
            if approved {
                PermissionAnswer::Allow
            } else {
                PermissionAnswer::Deny(
                    message
                        .text
                        .clone()
                        .unwrap_or_else(|| "rejected by the user".to_string()),
                )
            }
        })
    })
}

/// Tells the waiting thread when the asking future is dropped.
struct AbandonOnDrop(Arc<AtomicBool>);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Prompter for MailboxPrompter {
    fn ask(&self, req: PermissionAsk) -> BoxFuture<'static, PermissionAnswer> {
        let prompter = self.clone();
        ask_on_thread(move |abandoned| prompter.wait_for_answer(req, abandoned))
    }
}
