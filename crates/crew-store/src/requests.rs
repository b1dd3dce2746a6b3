//! Requests and their answers, derived from the inbox logs alone (no second source of truth).
//!
//! A request is a message carrying a `request_id` and no `approve`; its answer is a message with
//! the same `request_id` and `approve` set. State: `pending` until answered, then `approved` or
//! `rejected`; with no answer inside its timeout, `expired` (an answer after that is too late:
//! the asker has already treated the silence as a denial).

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::lock::with_lock;
use crate::mailbox::{Entry, Mailboxes};
use crate::message::{Message, new_id};
use crate::roster::Roster;
use crate::task::now_rfc3339;
use crate::{Refusal, StoreError};
use crew_protocol::{AgentName, MessageKind, RequestId, USER};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestState {
    Pending,
    Approved,
    Rejected,
    Expired,
}

impl RequestState {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestState::Pending => "pending",
            RequestState::Approved => "approved",
            RequestState::Rejected => "rejected",
            RequestState::Expired => "expired",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RequestInfo {
    pub request_id: RequestId,
    #[serde(rename = "type")]
    pub kind: MessageKind,
    pub from: AgentName,
    pub to: AgentName,
    pub text: Option<String>,
    pub created_at: String,
    pub age_secs: u64,
    pub timeout_secs: u64,
    pub state: RequestState,
    pub answered_by: Option<AgentName>,
    pub answered_at: Option<String>,
    pub note: Option<String>,
    /// The request as sent, with its typed fields (tool, input, worktree, ...).
    pub request: Message,
}

fn parse_ts(ts: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(ts).ok()
}

/// Whether `who` may answer `req` now: it must be pending (not expired, not answered), and a
/// permission request is the person's to answer, any other the person's or its addressee's.
/// Every store answers through this one rule.
pub fn may_answer(req: &RequestInfo, who: &AgentName) -> Result<(), Refusal> {
    match req.state {
        RequestState::Pending => {}
        RequestState::Expired => {
            return Err(Refusal::Expired {
                id: req.request_id.to_string(),
                age: humantime::format_duration(Duration::from_secs(
                    req.age_secs.saturating_sub(req.timeout_secs),
                ))
                .to_string(),
            });
        }
        state => {
            return Err(Refusal::AlreadyAnswered {
                id: req.request_id.to_string(),
                state: state.as_str().to_string(),
                by: req
                    .answered_by
                    .as_ref()
                    .map(AgentName::to_string)
                    .unwrap_or_default(),
            });
        }
    }
    let person_only = req.kind == MessageKind::PermissionRequest;
    if *who == USER || (!person_only && *who == req.to) {
        return Ok(());
    }
    Err(Refusal::NotAddressee {
        id: req.request_id.to_string(),
        to: if person_only { USER } else { req.to.clone() },
        who: who.clone(),
    })
}

/// Every request among `messages`, oldest first, with its state as of `now`.
pub fn derive(
    messages: &[Message],
    now: SystemTime,
    default_timeout: Duration,
) -> Vec<RequestInfo> {
    let mut answers: HashMap<&str, &Message> = HashMap::new();
    for m in messages.iter().filter(|m| m.is_response()) {
        let id = m.request_id.as_deref().unwrap_or_default();
        // The first answer wins; later ones were refused at write time or came from hand edits.
        let keep = answers
            .get(id)
            .is_none_or(|prev| parse_ts(&m.ts) < parse_ts(&prev.ts));
        if keep {
            answers.insert(id, m);
        }
    }
    let mut seen: HashMap<&str, ()> = HashMap::new();
    let mut out: Vec<RequestInfo> = Vec::new();
    for m in messages.iter().filter(|m| m.is_request()) {
        let id = m.request_id.as_deref().unwrap_or_default();
        if seen.insert(id, ()).is_some() {
            continue;
        }
        let created = parse_ts(&m.ts).unwrap_or(now);
        let timeout = m
            .extra
            .get("timeout_secs")
            .and_then(Value::as_u64)
            .map(Duration::from_secs)
            .unwrap_or(default_timeout);
        let deadline = created + timeout;
        let answer = answers
            .get(id)
            .filter(|a| parse_ts(&a.ts).is_none_or(|t| t <= deadline));
        let state = match answer.and_then(|a| a.approve) {
            Some(true) => RequestState::Approved,
            Some(false) => RequestState::Rejected,
            None if now > deadline => RequestState::Expired,
            None => RequestState::Pending,
        };
        out.push(RequestInfo {
            request_id: RequestId::from(id),
            kind: m.kind.clone(),
            from: m.from.clone(),
            to: m.to.clone(),
            text: m.text.clone(),
            created_at: m.ts.clone(),
            age_secs: now.duration_since(created).unwrap_or_default().as_secs(),
            timeout_secs: timeout.as_secs(),
            state,
            answered_by: answer.map(|a| a.from.clone()),
            answered_at: answer.map(|a| a.ts.clone()),
            note: answer.and_then(|a| a.text.clone()),
            request: m.clone(),
        });
    }
    out.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    out
}

impl Mailboxes {
    /// All messages in all inboxes (broken lines are skipped here; `read_all` shows them).
    pub fn all_messages(&self) -> Result<Vec<Message>, StoreError> {
        Ok(self
            .read_all()?
            .into_iter()
            .filter_map(|(_, e)| match e {
                Entry::Message { message, .. } => Some(message),
                Entry::Broken { .. } => None,
            })
            .collect())
    }

    pub fn requests(&self, default_timeout: Duration) -> Result<Vec<RequestInfo>, StoreError> {
        Ok(derive(
            &self.all_messages()?,
            SystemTime::now(),
            default_timeout,
        ))
    }

    /// Answers a pending request: the answer goes to the asker's inbox with the same
    /// `request_id`. Serialised by a lock so two people cannot both answer one request.
    /// A permission request is answered by the person (`user`) only.
    pub fn respond(
        &self,
        roster: &Roster,
        request_id: &str,
        who: &AgentName,
        approve: bool,
        note: Option<String>,
        default_timeout: Duration,
    ) -> Result<Message, StoreError> {
        roster.check("responder", who)?;
        std::fs::create_dir_all(self.dir()).map_err(|e| StoreError::io(self.dir(), e))?;
        with_lock(&self.dir().join(".requests.lock"), || {
            let requests = self.requests(default_timeout)?;
            let Some(req) = requests.iter().find(|r| r.request_id == request_id) else {
                return Err(Refusal::UnknownRequest(request_id.to_string()).into());
            };
            may_answer(req, who)?;
            let answer = Message {
                id: new_id("msg"),
                ts: now_rfc3339(),
                from: who.clone(),
                to: req.from.clone(),
                kind: req.kind.response(),
                text: note,
                request_id: Some(req.request_id.clone()),
                approve: Some(approve),
                extra: Default::default(),
            };
            self.append(&answer)?;
            Ok(answer)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(
        ts: &str,
        from: &str,
        to: &str,
        kind: MessageKind,
        id: &str,
        approve: Option<bool>,
    ) -> Message {
        Message {
            id: new_id("msg"),
            ts: ts.into(),
            from: from.parse().unwrap(),
            to: to.parse().unwrap(),
            kind,
            text: None,
            request_id: Some(id.into()),
            approve,
            extra: Default::default(),
        }
    }

    fn at(ts: &str) -> SystemTime {
        humantime::parse_rfc3339(ts).unwrap()
    }

    #[test]
    fn state_is_pending_then_answered_or_expired() {
        let req = msg(
            "2026-01-01T00:00:00Z",
            "lead",
            "alice",
            MessageKind::ShutdownRequest,
            "r1",
            None,
        );
        let minute = Duration::from_secs(60);
        let pending = derive(
            std::slice::from_ref(&req),
            at("2026-01-01T00:00:30Z"),
            minute,
        );
        assert_eq!(pending[0].state, RequestState::Pending);
        assert_eq!(pending[0].age_secs, 30);
        let expired = derive(
            std::slice::from_ref(&req),
            at("2026-01-01T00:01:01Z"),
            minute,
        );
        assert_eq!(expired[0].state, RequestState::Expired);

        let yes = msg(
            "2026-01-01T00:00:10Z",
            "alice",
            "lead",
            MessageKind::ShutdownResponse,
            "r1",
            Some(true),
        );
        let no = msg(
            "2026-01-01T00:00:20Z",
            "alice",
            "lead",
            MessageKind::ShutdownResponse,
            "r1",
            Some(false),
        );
        let answered = derive(&[no, req.clone(), yes], at("2026-01-01T00:05:00Z"), minute);
        assert_eq!(answered.len(), 1, "responses are not requests");
        assert_eq!(
            answered[0].state,
            RequestState::Approved,
            "the first answer wins"
        );

        let late = msg(
            "2026-01-01T00:02:00Z",
            "alice",
            "lead",
            MessageKind::ShutdownResponse,
            "r1",
            Some(true),
        );
        let too_late = derive(&[req, late], at("2026-01-01T00:05:00Z"), minute);
        assert_eq!(
            too_late[0].state,
            RequestState::Expired,
            "an answer after the timeout is too late"
        );
    }

    #[test]
    fn a_request_may_carry_its_own_timeout() {
        let mut req = msg(
            "2026-01-01T00:00:00Z",
            "alice",
            "lead",
            MessageKind::PermissionRequest,
            "r2",
            None,
        );
        req.extra
            .insert("timeout_secs".into(), serde_json::json!(5));
        let state = derive(&[req], at("2026-01-01T00:00:06Z"), Duration::from_secs(600));
        assert_eq!(state[0].state, RequestState::Expired);
    }
}
