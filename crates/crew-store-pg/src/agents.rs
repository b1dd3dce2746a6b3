//! Agent statuses as rows: each agent's latest `AgentStatus` whole (as JSON, the document the
//! file store keeps in `.crew/agents/NAME.json`), and the server's time it was last written,
//! which is what a supervisor on another host can trust.

use crew_protocol::AgentName;
use crew_store::AgentStatus;

use crate::{PgStore, PgStoreError};

impl PgStore {
    /// Keeps `status` as its agent's latest, replacing the one before.
    pub async fn write_status(&self, status: &AgentStatus) -> Result<(), PgStoreError> {
        let name = status.name.to_string();
        let json = serde_json::to_value(status).map_err(|e| PgStoreError::BadRow {
            what: "agent status",
            value: name.clone(),
            reason: e.to_string(),
        })?;
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
            let json: serde_json::Value = row.try_get(0)?;
            serde_json::from_value(json.clone())
                .map(Some)
                .map_err(|e| PgStoreError::BadRow {
                    what: "agent status",
                    value: json.to_string(),
                    reason: e.to_string(),
                })
        })
        .await
    }
}
