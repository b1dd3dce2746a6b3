//! Inboxes as append-only rows, read through a cursor per reader and inbox; requests and their
//! answers are rows too, their state derived by crew-store's `requests::derive` as on files.
//!
//! Rows are taken in the order of their appending transactions, and only rows of transactions
//! older than every one still running: ids from a sequence commit out of order, so a cursor on
//! the sequence alone would step over a row that commits late. One sender's messages therefore
//! come in the order it sent them, and no row ever lands behind a cursor.

use std::time::{Duration, SystemTime};

use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crew_protocol::{AgentName, MessageKind, RequestId};
use crew_store::mailbox::checked_kind;
use crew_store::message::new_id;
use crew_store::requests::{derive, may_answer};
use crew_store::{Draft, Limits, Message, Refusal, RequestInfo, RequestState, secrets};

use crate::schema::OVER_LIMITS;
use crate::tasks::name_from_sql;
use crate::wakeups::notify_after;
use crate::{PgStore, PgStoreError};

/// Wakes the `LISTEN`ers when a message is appended; the payload is the recipient.
pub(crate) const INBOX_CHANNEL: &str = "crew_inbox";

/// Where a reader is in an inbox: just after the message at this position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    txid: i64,
    seq: i64,
}

/// The columns `message_from_row` reads, in its order.
const MESSAGE_COLUMNS: &str =
    "txid, seq, id, crew_ts(ts), sender, recipient, kind, body, request_id, approve, extra";

/// How long `unread` waits for older appends still committing before it returns without them.
const HELD_BACK_WAIT: Duration = Duration::from_secs(2);

impl PgStore {
    /// Appends a message (a request when `draft.request`) and wakes its recipient.
    pub async fn send(&self, draft: Draft) -> Result<Message, PgStoreError> {
        let mut message = Message {
            id: new_id("msg"),
            ts: String::new(),
            from: draft.from,
            to: draft.to,
            kind: checked_kind(draft.kind)?,
            text: draft.text,
            request_id: draft.request.then(RequestId::new),
            approve: None,
            extra: draft.extra,
        };
        message.ts = self.append(&message).await?;
        Ok(message)
    }

    /// Inserts `message` keyed by its id (a retry after a lost reply inserts nothing) and
    /// returns the store's timestamp for it. A key this process read is stored redacted, as
    /// every inbox line is on files.
    async fn append(&self, message: &Message) -> Result<String, PgStoreError> {
        let mut extra = serde_json::Value::Object(message.extra.clone());
        secrets::redact_json(&mut extra);
        let text = message.text.as_deref().map(secrets::redact);
        let request_id = message.request_id.as_ref().map(RequestId::as_str);
        self.retry(|| async {
            let client = self.client().await?;
            let params: [&(dyn ToSql + Sync); 8] = [
                &message.id,
                &message.from.as_str(),
                &message.to.as_str(),
                &message.kind.as_str(),
                &text,
                &request_id,
                &message.approve,
                &extra,
            ];
            let insert = client
                .prepare_cached(
                    "INSERT INTO messages
                         (id, sender, recipient, kind, body, request_id, approve, extra)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                     ON CONFLICT (id) DO NOTHING
                     RETURNING crew_ts(ts)",
                )
                .await?;
            // A wake-up lost with the connection is retried whole; the append then adds
            // nothing.
            let (inserted, notified) = notify_after(
                &client,
                INBOX_CHANNEL,
                message.to.as_str(),
                client.query_opt(&insert, &params),
            )
            .await;
            let row = match inserted {
                Ok(Some(row)) => row,
                Ok(None) => {
                    client
                        .query_one(
                            "SELECT crew_ts(ts) FROM messages WHERE id = $1",
                            &[&message.id],
                        )
                        .await?
                }
                Err(e) if e.code().map(SqlState::code) == Some(NOT_ON_TEAM) => {
                    return Err(not_on_team(&client, &e, message).await);
                }
                Err(e) if e.code().map(SqlState::code) == Some(OVER_LIMITS) => {
                    drop(client);
                    return Err(self.over_limits(e, text.as_deref()).await);
                }
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    // The one-answer-per-request index: someone answered first. The
                    // connection goes back first: reading who needs one of its own.
                    drop(client);
                    return Err(self.already_answered(request_id.unwrap_or_default()).await);
                }
                Err(e) => return Err(e.into()),
            };
            notified?;
            Ok(row.try_get(0)?)
        })
        .await
    }

    /// Every message in `inbox`, in order.
    pub async fn inbox(&self, inbox: &AgentName) -> Result<Vec<Message>, PgStoreError> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE recipient = $1 ORDER BY txid, seq"
        );
        self.retry(|| async {
            let rows = self.client().await?.query(&sql, &[&inbox.as_str()]).await?;
            rows.iter()
                .map(|r| message_from_row(r).map(|(_, m)| m))
                .collect()
        })
        .await
    }

    /// The messages in `inbox` after `reader`'s cursor, oldest first, at most `limit`; the
    /// cursor does not move (see `mark_read`), so a reader that dies before handling them gets
    /// them again.
    pub async fn unread(
        &self,
        reader: &AgentName,
        inbox: &AgentName,
        limit: i64,
    ) -> Result<Vec<(Position, Message)>, PgStoreError> {
        let sql = format!(
            "WITH c AS (
                 SELECT coalesce(max(txid), -1) AS at_txid, coalesce(max(seq), -1) AS at_seq
                 FROM inbox_cursors WHERE reader = $1 AND inbox = $2)
             SELECT {MESSAGE_COLUMNS},
                 txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
             FROM messages, c
             WHERE recipient = $2 AND (txid, seq) > (at_txid, at_seq)
             ORDER BY txid, seq LIMIT $3"
        );
        let started = std::time::Instant::now();
        loop {
            let rows = self
                .retry(|| async {
                    let client = self.client().await?;
                    let select = client.prepare_cached(&sql).await?;
                    Ok(client
                        .query(&select, &[&reader.as_str(), &inbox.as_str(), &limit])
                        .await?)
                })
                .await?;
            let settled = rows
                .iter()
                .take_while(|r| r.get::<_, bool>(MESSAGE_COLUMN_COUNT))
                .count();
            // A later row held back by an older append still committing: it may come before
            // them, so none of those is handed out until it settles (usually microseconds).
            if settled < rows.len() && settled == 0 && started.elapsed() < HELD_BACK_WAIT {
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
            return rows[..settled].iter().map(message_from_row).collect();
        }
    }

    /// Moves `reader`'s cursor in `inbox` to just after `upto`; never back.
    pub async fn mark_read(
        &self,
        reader: &AgentName,
        inbox: &AgentName,
        upto: Position,
    ) -> Result<(), PgStoreError> {
        self.retry(|| async {
            self.client()
                .await?
                .execute(
                    "INSERT INTO inbox_cursors (reader, inbox, txid, seq) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (reader, inbox) DO UPDATE SET txid = excluded.txid, seq = excluded.seq
                     WHERE (inbox_cursors.txid, inbox_cursors.seq) < (excluded.txid, excluded.seq)",
                    &[&reader.as_str(), &inbox.as_str(), &upto.txid, &upto.seq],
                )
                .await?;
            Ok(())
        })
        .await
    }

    /// Every request with its state as of now, oldest first.
    pub async fn requests(
        &self,
        default_timeout: Duration,
    ) -> Result<Vec<RequestInfo>, PgStoreError> {
        let messages = self.request_messages(None).await?;
        Ok(derive(&messages, SystemTime::now(), default_timeout))
    }

    async fn request_messages(&self, id: Option<&str>) -> Result<Vec<Message>, PgStoreError> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages
             WHERE request_id IS NOT NULL AND ($1::text IS NULL OR request_id = $1)
             ORDER BY txid, seq"
        );
        self.retry(|| async {
            let rows = self.client().await?.query(&sql, &[&id]).await?;
            rows.iter()
                .map(|r| message_from_row(r).map(|(_, m)| m))
                .collect()
        })
        .await
    }

    /// Answers a pending request; the answer goes to the asker. A permission request is the
    /// person's (`user`) to answer; another request its addressee's or the person's. Of two
    /// answers at once the database keeps the first (a unique index), the second is refused.
    pub async fn respond(
        &self,
        request_id: &str,
        who: &AgentName,
        approve: bool,
        note: Option<String>,
        default_timeout: Duration,
    ) -> Result<Message, PgStoreError> {
        let messages = self.request_messages(Some(request_id)).await?;
        let requests = derive(&messages, SystemTime::now(), default_timeout);
        let Some(req) = requests.into_iter().next() else {
            return Err(Refusal::UnknownRequest(request_id.to_string()).into());
        };
        if req.state != RequestState::Pending && req.state != RequestState::Expired {
            // Who answered is read from the answer itself (the derived view may lag a race).
            return Err(self.already_answered(request_id).await);
        }
        may_answer(&req, who)?;
        let mut answer = Message {
            id: new_id("msg"),
            ts: String::new(),
            from: who.clone(),
            to: req.from,
            kind: req.kind.response(),
            text: note,
            request_id: Some(req.request_id),
            approve: Some(approve),
            extra: serde_json::Map::new(),
        };
        answer.ts = self.append(&answer).await?;
        Ok(answer)
    }

    /// The refusal for answering `request_id` again, naming the first answer.
    async fn already_answered(&self, request_id: &str) -> PgStoreError {
        let first = match self.request_messages(Some(request_id)).await {
            Ok(messages) => messages.into_iter().find(Message::is_response),
            Err(e) => return e,
        };
        Refusal::AlreadyAnswered {
            id: request_id.to_string(),
            state: match first.as_ref().and_then(|m| m.approve) {
                Some(true) => RequestState::Approved.as_str(),
                _ => RequestState::Rejected.as_str(),
            }
            .to_string(),
            by: first.map(|m| m.from.to_string()).unwrap_or_default(),
        }
        .into()
    }
}

/// The SQLSTATE of schema 5's trigger refusing a name that is not on the published team.
const NOT_ON_TEAM: &str = "CRW01";

impl PgStore {
    /// The refusal for a message the size trigger refused, worded as the file store words it
    /// when its text is what is too big (the team's `[limits]` say how big it may be); the
    /// database's own words otherwise (its extra fields).
    async fn over_limits(&self, e: tokio_postgres::Error, text: Option<&str>) -> PgStoreError {
        let limits = match self.team().await {
            Ok(team) => team.map_or_else(Limits::default, |t| t.limits),
            Err(read) => return read,
        };
        match limits.check_message(text.unwrap_or_default()) {
            Err(refusal) => PgStoreError::Refused(refusal),
            Ok(()) => PgStoreError::Postgres(e).permission_as_refusal(),
        }
    }
}

/// The refusal for `message`, which the team trigger refused, as the file store words it
/// (which side, the name, the valid names); the trigger names the side in its error's column.
async fn not_on_team(
    client: &deadpool_postgres::Object,
    e: &tokio_postgres::Error,
    message: &Message,
) -> PgStoreError {
    let (role, name) = match e.as_db_error().and_then(|db| db.column()) {
        Some("sender") => ("sender", &message.from),
        _ => ("recipient", &message.to),
    };
    match crate::team::read_team(client).await {
        Ok(team) => match team.map(|t| t.roster.check(role, name)) {
            Some(Err(refusal)) => refusal.into(),
            // Republished between the insert and this read: say what the database said.
            _ => PgStoreError::NotPermitted(e.to_string()),
        },
        Err(e) => e,
    }
}

/// The index of the column after `MESSAGE_COLUMNS` in `unread`'s query.
const MESSAGE_COLUMN_COUNT: usize = 11;

fn message_from_row(row: &Row) -> Result<(Position, Message), PgStoreError> {
    let kind: &str = row.try_get(6)?;
    let kind = MessageKind::from(kind);
    let from: String = row.try_get(4)?;
    let to: String = row.try_get(5)?;
    let request_id: Option<String> = row.try_get(8)?;
    let extra = match row.try_get::<_, serde_json::Value>(10)? {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    Ok((
        Position {
            txid: row.try_get(0)?,
            seq: row.try_get(1)?,
        },
        Message {
            id: row.try_get(2)?,
            ts: row.try_get(3)?,
            from: name_from_sql("message sender", &from)?,
            to: name_from_sql("message recipient", &to)?,
            kind,
            text: row.try_get(7)?,
            request_id: request_id.map(|r| RequestId::from(r.as_str())),
            approve: row.try_get(9)?,
            extra,
        },
    ))
}
