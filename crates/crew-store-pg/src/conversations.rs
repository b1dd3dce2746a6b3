//! Conversations as rows (schema 10): an agent's history, a row per message at its position,
//! and the key it kept last, so a teammate resumes on whichever host runs it next. The same
//! meaning as the file store's `.crew/conversations/` (`TeamStore::keep_conversation`).

use crew_protocol::{AgentName, validate_name};
use crew_store::{Refusal, secrets};

use crate::{PgStore, PgStoreError};

impl PgStore {
    /// Keeps `who`'s conversation `key`: `messages` from position `at` on, what it held from
    /// `at` dropped, and `key` its latest, in one transaction (a retry keeps the same again).
    pub async fn keep_conversation(
        &self,
        who: &AgentName,
        key: &str,
        at: usize,
        messages: &[serde_json::Value],
    ) -> Result<(), PgStoreError> {
        validate_name("conversation key", key)?;
        let messages: Vec<serde_json::Value> = messages
            .iter()
            .cloned()
            .map(|mut m| {
                secrets::redact_json(&mut m);
                m
            })
            .collect();
        let from = position(at)?;
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // One writer at a time per conversation: the count and the rows agree.
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('crew conversation ' || $1 || '/' || $2, 0))",
                &[&who.as_str(), &key],
            )
            .await?;
            let held: i64 = tx
                .query_one(
                    "SELECT count(*) FROM conversations WHERE agent = $1 AND key = $2",
                    &[&who.as_str(), &key],
                )
                .await?
                .try_get(0)?;
            if i64::from(from) > held {
                return Err(Refusal::ConversationGap {
                    agent: who.clone(),
                    key: key.to_string(),
                    held: usize::try_from(held).unwrap_or(usize::MAX),
                    at,
                }
                .into());
            }
            tx.execute(
                "DELETE FROM conversations WHERE agent = $1 AND key = $2 AND position >= $3",
                &[&who.as_str(), &key, &from],
            )
            .await?;
            tx.execute(
                "INSERT INTO conversations (agent, key, position, message)
                 SELECT $1, $2, $3 + o::integer - 1, m FROM unnest($4::jsonb[]) WITH ORDINALITY AS u(m, o)",
                &[&who.as_str(), &key, &from, &messages],
            )
            .await?;
            tx.execute(
                "INSERT INTO conversation_latest (agent, key) VALUES ($1, $2)
                 ON CONFLICT (agent) DO UPDATE SET key = EXCLUDED.key, kept_at = now()
                 WHERE conversation_latest.key <> EXCLUDED.key",
                &[&who.as_str(), &key],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// `agent`'s conversation `key`, oldest first; empty if there is none (or, for an agent's
    /// role, if it is another agent's).
    pub async fn conversation(
        &self,
        agent: &AgentName,
        key: &str,
    ) -> Result<Vec<serde_json::Value>, PgStoreError> {
        validate_name("conversation key", key)?;
        self.retry(|| async {
            let rows = self
                .client()
                .await?
                .query(
                    "SELECT message FROM conversations WHERE agent = $1 AND key = $2
                     ORDER BY position",
                    &[&agent.as_str(), &key],
                )
                .await?;
            rows.iter()
                .map(|r| Ok(r.try_get::<_, serde_json::Value>(0)?))
                .collect()
        })
        .await
    }

    /// The key of the conversation `agent` kept last.
    pub async fn latest_conversation(
        &self,
        agent: &AgentName,
    ) -> Result<Option<String>, PgStoreError> {
        self.retry(|| async {
            let row = self
                .client()
                .await?
                .query_opt(
                    "SELECT key FROM conversation_latest WHERE agent = $1",
                    &[&agent.as_str()],
                )
                .await?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        })
        .await
    }
}

/// A position as the table keeps it.
fn position(at: usize) -> Result<i32, PgStoreError> {
    i32::try_from(at).map_err(|_| PgStoreError::BadRow {
        what: "conversation position",
        value: at.to_string(),
        reason: "more messages than a conversation keeps".into(),
    })
}
