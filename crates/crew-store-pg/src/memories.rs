//! Memories as rows (schema 9): what an agent learnt, kept where any host it runs on finds it.
//! The same rules as crew-store's `MemoryBook` (one per name in a scope, the agent's own read
//! before the team's, `[limits]` on each and on a scope's count), checked here first so a
//! refusal reads as on files, and by the database for an agent that writes rows itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use crew_protocol::AgentName;
use crew_store::{Limits, Memory, MemoryDraft, MemoryScope, MemoryType, Refusal, no_such_memory};
use tokio_postgres::Row;

use crate::{PgStore, PgStoreError};

const MEMORY_COLUMNS: &str =
    "scope, name, kind, description, body, extract(epoch FROM updated_at)::float8";

impl PgStore {
    /// Keeps `draft` in `who`'s memory or the team's; whether one of its name was replaced.
    pub async fn write_memory(
        &self,
        who: &AgentName,
        draft: &MemoryDraft,
    ) -> Result<bool, PgStoreError> {
        let limits = self.memory_limits(who).await?;
        let (description, body) = draft.checked::<PgStoreError>(&limits)?;
        let scope = scope_key(who, draft.scope);
        let kind = draft.kind.as_str();
        let key = uuid::Uuid::now_v7().simple().to_string();
        let written = self
            .retry(|| async {
                let client = self.client().await?;
                let row = client
                    .query_one(
                        "INSERT INTO memories (scope, name, kind, description, body, first_key)
                         VALUES ($1, $2, $3, $4, $5, $6)
                         ON CONFLICT (scope, name) DO UPDATE SET kind = EXCLUDED.kind,
                             description = EXCLUDED.description, body = EXCLUDED.body
                         RETURNING first_key <> $6",
                        &[&scope, &draft.name, &kind, &description, &body, &key],
                    )
                    .await?;
                Ok(row.try_get::<_, bool>(0)?)
            })
            .await;
        match written {
            Err(PgStoreError::NotPermitted(why)) if why.contains("memories_per_scope") => {
                Err(Refusal::MemoriesFull {
                    scope: draft.scope.label(who),
                    count: limits.memories_per_scope,
                }
                .into())
            }
            other => other,
        }
    }

    /// Memory `name` as `who` sees it: from `scope`, else its own first, then the team's.
    pub async fn memory(
        &self,
        who: &AgentName,
        scope: Option<MemoryScope>,
        name: &str,
    ) -> Result<Memory, PgStoreError> {
        crew_protocol::validate_name("memory name", name)?;
        let scopes: Vec<String> = match scope {
            Some(scope) => vec![scope_key(who, scope)],
            None => vec![scope_key(who, MemoryScope::Agent), String::new()],
        };
        let row = self
            .retry(|| async {
                let client = self.client().await?;
                // The agent's own scope sorts after the team's '': DESC reads it first.
                Ok(client
                    .query_opt(
                        &format!(
                            "SELECT {MEMORY_COLUMNS} FROM memories
                             WHERE name = $1 AND scope = ANY($2) ORDER BY scope DESC LIMIT 1"
                        ),
                        &[&name, &scopes],
                    )
                    .await?)
            })
            .await?;
        match row {
            Some(row) => memory_from_row(&row),
            None => Err(no_such_memory(who, scope, name).into()),
        }
    }

    /// Forgets memory `name` of `who`'s `scope`.
    pub async fn forget_memory(
        &self,
        who: &AgentName,
        scope: MemoryScope,
        name: &str,
    ) -> Result<(), PgStoreError> {
        crew_protocol::validate_name("memory name", name)?;
        let key = scope_key(who, scope);
        let tried = AtomicBool::new(false);
        self.retry(|| async {
            let again = tried.swap(true, Ordering::Relaxed);
            let client = self.client().await?;
            let gone = client
                .execute(
                    "DELETE FROM memories WHERE scope = $1 AND name = $2",
                    &[&key, &name],
                )
                .await?;
            // A try after a lost reply finds it gone, as the first try left it.
            if gone == 0 && !again {
                return Err(no_such_memory(who, Some(scope), name).into());
            }
            Ok(())
        })
        .await
    }

    /// Every memory of `who`'s `scope`, by name.
    pub async fn memories(
        &self,
        who: &AgentName,
        scope: MemoryScope,
    ) -> Result<Vec<Memory>, PgStoreError> {
        let key = scope_key(who, scope);
        let rows = self
            .retry(|| async {
                let client = self.client().await?;
                Ok(client
                    .query(
                        &format!(
                            "SELECT {MEMORY_COLUMNS} FROM memories WHERE scope = $1 ORDER BY name COLLATE \"C\""
                        ),
                        &[&key],
                    )
                    .await?)
            })
            .await?;
        rows.iter().map(memory_from_row).collect()
    }

    /// The team's `[limits]` (crew's defaults before it is published), once `who` is found on
    /// it: a stranger's memory is refused as on files, not kept.
    async fn memory_limits(&self, who: &AgentName) -> Result<Limits, PgStoreError> {
        match self.team().await? {
            Some(team) => {
                team.roster.check("memory owner", who)?;
                Ok(team.limits)
            }
            None => Ok(Limits::default()),
        }
    }
}

/// The `scope` column of `who`'s memory in `scope`: its name, or '' for the team's.
fn scope_key(who: &AgentName, scope: MemoryScope) -> String {
    match scope {
        MemoryScope::Agent => who.to_string(),
        MemoryScope::Team => String::new(),
    }
}

fn memory_from_row(row: &Row) -> Result<Memory, PgStoreError> {
    let scope: String = row.try_get(0)?;
    let kind: String = row.try_get(2)?;
    let kind: MemoryType = serde_json::from_value(serde_json::Value::String(kind.clone()))
        .map_err(|e| PgStoreError::BadRow {
            what: "memory kind",
            value: kind,
            reason: e.to_string(),
        })?;
    let secs: f64 = row.try_get(5)?;
    Ok(Memory {
        name: row.try_get(1)?,
        kind,
        description: row.try_get(3)?,
        body: row.try_get(4)?,
        scope: if scope.is_empty() {
            MemoryScope::Team
        } else {
            MemoryScope::Agent
        },
        modified: SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs.max(0.0)),
    })
}
