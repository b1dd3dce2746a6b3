//! Agent statuses as rows: each agent's latest `AgentStatus` whole (as JSON, the document the
//! file store keeps in `.crew/agents/NAME.json`), and the server's time it was last written,
//! which is what a supervisor on another host can trust.

use crew_protocol::AgentName;
use crew_store::AgentStatus;

use crate::json::{from_json, to_json};
use crate::tasks::{id_from_sql, name_from_sql};
use crate::{PgStore, PgStoreError};

impl PgStore {
    /// Keeps `status` as its agent's latest, replacing the one before.
    pub async fn write_status(&self, status: &AgentStatus) -> Result<(), PgStoreError> {
        let name = status.name.to_string();
        let json = to_json("agent status", &name, status)?;
        self.retry(|| async {
            let client = self.client().await?;
            let upsert = client
                .prepare_cached(
                    "INSERT INTO agents (name, status) VALUES ($1, $2)
                     ON CONFLICT (name) DO UPDATE SET status = EXCLUDED.status, heard_at = now()",
                )
                .await?;
            client.execute(&upsert, &[&name, &json]).await?;
            Ok(())
        })
        .await
    }

    /// Agent `name`'s latest status; `None` before its first.
    pub async fn agent_status(
        &self,
        name: &AgentName,
    ) -> Result<Option<AgentStatus>, PgStoreError> {
        let name = name.to_string();
        self.retry(|| async {
            let client = self.client().await?;
            let select = client
                .prepare_cached("SELECT status FROM agents WHERE name = $1")
                .await?;
            let Some(row) = client.query_opt(&select, &[&name]).await? else {
                return Ok(None);
            };
            from_json("agent status", row.try_get(0)?).map(Some)
        })
        .await
    }

    /// Every agent the store has heard from or that holds a task, by name: its latest status,
    /// how long since the server last heard from it, and the leases it holds, by the server's
    /// clock (the one every host shares).
    pub async fn agents_seen(&self) -> Result<Vec<AgentSeen>, PgStoreError> {
        self.retry(|| async {
            let client = self.client().await?;
            let statuses = client
                .query(
                    "SELECT name, status, extract(epoch FROM now() - heard_at)::float8
                     FROM agents ORDER BY name",
                    &[],
                )
                .await?;
            let held = client
                .query(
                    "SELECT owner, id, extract(epoch FROM lease_until - now())::float8
                     FROM tasks WHERE status = 'in_progress' AND owner IS NOT NULL ORDER BY id",
                    &[],
                )
                .await?;
            let mut seen: Vec<AgentSeen> = Vec::new();
            for row in &statuses {
                let name: String = row.try_get(0)?;
                seen.push(AgentSeen {
                    name: name_from_sql("agent name", &name)?,
                    status: Some(from_json("agent status", row.try_get(1)?)?),
                    heard_secs: Some(row.try_get(2)?),
                    leases: Vec::new(),
                });
            }
            for row in &held {
                let owner: String = row.try_get(0)?;
                let lease = Lease {
                    task: id_from_sql(row.try_get(1)?)?,
                    secs_left: row.try_get::<_, Option<f64>>(2)?.unwrap_or(0.0),
                };
                match seen.iter_mut().find(|a| a.name == *owner) {
                    Some(agent) => agent.leases.push(lease),
                    None => seen.push(AgentSeen {
                        name: name_from_sql("task owner", &owner)?,
                        status: None,
                        heard_secs: None,
                        leases: vec![lease],
                    }),
                }
            }
            seen.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(seen)
        })
        .await
    }
}

/// What `agents_seen` says of one agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSeen {
    pub name: AgentName,
    /// Its latest status; `None` for an owner that never wrote one.
    pub status: Option<AgentStatus>,
    /// Seconds since the server last heard from it.
    pub heard_secs: Option<f64>,
    /// The tasks it holds in progress.
    pub leases: Vec<Lease>,
}

/// A claim's lease as the server sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub task: crew_protocol::TaskId,
    /// Seconds until it lapses; negative once lapsed (the task is claimable again).
    pub secs_left: f64,
}
