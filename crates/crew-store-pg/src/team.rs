//! The team as the person published it: crew.toml's text (a host that joins reads its team
//! from here), the names on the team (a message to or from another is refused once published,
//! schema 5) and its `[limits]` (new tasks are held to them, as on files).

use tokio_postgres::types::ToSql;

use crew_protocol::AgentName;
use crew_store::{Limits, Roster};

use crate::json::{from_json, to_json};
use crate::tasks::name_from_sql;
use crate::{PgStore, PgStoreError};

/// What `publish_team` stored.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedTeam {
    /// crew.toml as the person's checkout had it.
    pub toml: String,
    /// The lead and teammates, and the person.
    pub roster: Roster,
    pub limits: Limits,
    /// When, by the server's clock.
    pub published_at: String,
}

impl PgStore {
    /// Publishes the team (the person's role only: agents may read it, not write it),
    /// replacing what was published before.
    pub async fn publish_team(
        &self,
        toml: &str,
        roster: &Roster,
        limits: Limits,
    ) -> Result<PublishedTeam, PgStoreError> {
        let names: Vec<&str> = roster.names().iter().map(AgentName::as_str).collect();
        let limits_json = to_json("team limits", "the team", &limits)?;
        self.retry(|| async {
            let params: [&(dyn ToSql + Sync); 3] = [&toml, &names, &limits_json];
            self.client()
                .await?
                .execute(
                    "INSERT INTO team_config (toml, roster, limits) VALUES ($1, $2, $3)
                     ON CONFLICT (only_row) DO UPDATE SET toml = excluded.toml,
                         roster = excluded.roster, limits = excluded.limits,
                         published_at = now()",
                    &params,
                )
                .await?;
            Ok(())
        })
        .await?;
        self.team()
            .await?
            .ok_or_else(|| PgStoreError::Pool("the published team is not there".into()))
    }

    /// The published team; `None` before the person published one.
    pub async fn team(&self) -> Result<Option<PublishedTeam>, PgStoreError> {
        self.retry(|| async { read_team(&self.client().await?).await })
            .await
    }
}

/// The published team, read on a connection the caller holds.
pub(crate) async fn read_team(
    client: &deadpool_postgres::Object,
) -> Result<Option<PublishedTeam>, PgStoreError> {
    let Some(row) = client
        .query_opt(
            "SELECT toml, roster, limits, crew_ts(published_at) FROM team_config",
            &[],
        )
        .await?
    else {
        return Ok(None);
    };
    let names: Vec<String> = row.try_get(1)?;
    let roster = Roster::new(
        names
            .iter()
            .map(|n| name_from_sql("team name", n))
            .collect::<Result<Vec<_>, _>>()?,
    );
    let limits = from_json("team limits", row.try_get(2)?)?;
    Ok(Some(PublishedTeam {
        toml: row.try_get(0)?,
        roster,
        limits,
        published_at: row.try_get(3)?,
    }))
}
