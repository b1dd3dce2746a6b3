//! Reading a team kept in PostgreSQL for the screen: the published crew.toml, the tasks, every
//! inbox, each agent's status and its standing with the server (its leases), as the
//! same `Change`s the file loader makes. Woken by the store's NOTIFY; statuses and leases move
//! without one (a heartbeat, a lapse), so it also looks every `EVERY`. Only what changed since
//! the last look is handed on. In the person's checkout the transcripts of the agents that run
//! there are read from its files, as on a file team.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::Duration;

use crate::data::{Change, Loader, Standing};
use crate::event::Event;
use crate::uiconfig;
use crew_agent::transcript::{Row, conversation_rows};
use crew_config::TeamConfig;
use crew_store::{AgentName, AgentStatus, Entry, Task};
use crew_store_pg::{PgStore, PgStoreError, Wakeups};

/// How often the store is looked at without a notification.
const EVERY: Duration = Duration::from_secs(1);

/// What the screen was last told, to tell it only what changed.
#[derive(Default)]
pub struct StoreFeed {
    toml: Option<String>,
    tasks: Option<Vec<Task>>,
    /// Per inbox, the ids of the messages handed on: a message of a transaction that committed
    /// late sorts before later ones, so what is new is told by id, not by position.
    inbox_seen: BTreeMap<AgentName, HashSet<String>>,
    agents: BTreeMap<AgentName, AgentStatus>,
    standing: Option<BTreeMap<AgentName, Standing>>,
    /// Per agent shown from the store: its latest conversation's key and length.
    conversations: BTreeMap<AgentName, (String, usize)>,
}

impl StoreFeed {
    /// What changed in `store` since the last call (everything, the first time). After a
    /// failed look the next tells the tasks again, which clears the problem it showed.
    pub async fn changes(&mut self, store: &PgStore) -> Result<Vec<Change>, PgStoreError> {
        let looked = self.look(store).await;
        if looked.is_err() {
            self.tasks = None;
        }
        looked
    }

    async fn look(&mut self, store: &PgStore) -> Result<Vec<Change>, PgStoreError> {
        let mut changes = Vec::new();
        let Some(team) = store.team().await? else {
            return Ok(vec![Change::Config(Err(
                "no team is published in the store: run `crew store publish URL` in your repository"
                    .into(),
            ))]);
        };
        if self.toml.as_ref() != Some(&team.toml) {
            changes.push(Change::Config(published_config(&team.toml)));
            self.toml = Some(team.toml);
        }
        let tasks = store.tasks().await?;
        if self.tasks.as_ref() != Some(&tasks) {
            changes.push(Change::AllTasks(tasks.clone(), Vec::new()));
            self.tasks = Some(tasks);
        }
        for name in team.roster.names() {
            let seen = self.inbox_seen.entry(name.clone()).or_default();
            let fresh: Vec<Entry> = store
                .inbox(name)
                .await?
                .into_iter()
                .enumerate()
                .filter(|(_, m)| seen.insert(m.id.clone()))
                .map(|(at, message)| Entry::Message {
                    offset: at as u64,
                    message,
                })
                .collect();
            if !fresh.is_empty() {
                changes.push(Change::Inbox {
                    name: name.clone(),
                    entries: fresh,
                    reset: false,
                });
            }
        }
        let seen = store.agents_seen().await?;
        let mut standing = BTreeMap::new();
        for agent in seen {
            if let Some(status) = agent.status
                && self.agents.get(&agent.name) != Some(&status)
            {
                self.agents.insert(agent.name.clone(), status.clone());
                changes.push(Change::Agent(agent.name.clone(), Some(status)));
            }
            standing.insert(
                agent.name,
                Standing {
                    lapsed: agent
                        .leases
                        .iter()
                        .filter(|l| l.secs_left < 0.0)
                        .map(|l| l.task)
                        .collect(),
                },
            );
        }
        if self.standing.as_ref() != Some(&standing) {
            changes.push(Change::Standing(standing.clone()));
            self.standing = Some(standing);
        }
        Ok(changes)
    }

    /// The latest conversation of each of `names` (agents whose transcripts are not on this
    /// machine) as transcript rows, when it changed.
    pub async fn conversations(
        &mut self,
        store: &PgStore,
        names: impl Iterator<Item = AgentName>,
    ) -> Result<Vec<Change>, PgStoreError> {
        let mut changes = Vec::new();
        for name in names {
            let Some(key) = store.latest_conversation(&name).await? else {
                continue;
            };
            let messages = store.conversation(&name, &key).await?;
            let seen = (key, messages.len());
            if self.conversations.get(&name) == Some(&seen) {
                continue;
            }
            let mut lines = Vec::new();
            let mut kept = Vec::new();
            for value in messages {
                match serde_json::from_value::<crew_model::ChatMessage>(value) {
                    Ok(message) => kept.push(message),
                    Err(e) => {
                        lines.push(Row::plain(format!("?? a message that does not read: {e}")))
                    }
                }
            }
            lines.splice(0..0, conversation_rows(&kept));
            self.conversations.insert(name.clone(), seen);
            changes.push(Change::Transcript {
                name,
                lines,
                reset: true,
                tail: 0,
            });
        }
        Ok(changes)
    }
}

/// The team as published, with its `[ui]` table.
fn published_config(toml: &str) -> Result<(Box<TeamConfig>, uiconfig::UiConfig), String> {
    let path = Path::new("crew.toml (as published in the store)");
    let team = TeamConfig::parse(path, toml).map_err(|e| e.to_string())?;
    let ui = uiconfig::ui_of(&team, path.to_path_buf()).map_err(|e| e.to_string())?;
    Ok((Box::new(team), ui))
}

/// Feeds `tx` from `store` on `runtime` until the screen goes: the whole team first, then
/// what changes. A store that cannot be read shows as a problem and is tried again. In the
/// person's `checkout`, the transcripts of the agents running there are read from its files.
pub fn spawn(
    store: PgStore,
    checkout: Option<PathBuf>,
    tx: Sender<Event>,
    runtime: &tokio::runtime::Handle,
) {
    runtime.spawn(async move {
        let mut feed = StoreFeed::default();
        let mut transcripts = checkout.map(|root| Loader::new(&root));
        let mut wakeups = Wakeups::listen(&store).await.ok();
        loop {
            let mut changes = match feed.changes(&store).await {
                Ok(changes) => changes,
                Err(e) => vec![Change::TaskProblem(format!("the store: {e}"))],
            };
            if let Some(loader) = transcripts.as_mut() {
                changes.extend(loader.transcripts());
            }
            // The others' conversations, as their hosts keep them in the store.
            let elsewhere: Vec<AgentName> = feed
                .agents
                .keys()
                .filter(|n| !transcripts.as_ref().is_some_and(|l| l.has_transcripts(n)))
                .cloned()
                .collect();
            match feed.conversations(&store, elsewhere.into_iter()).await {
                Ok(more) => changes.extend(more),
                Err(e) => changes.push(Change::TaskProblem(format!("the store: {e}"))),
            }
            if !changes.is_empty() && tx.send(Event::Data(changes)).is_err() {
                return;
            }
            match wakeups.as_mut() {
                Some(wakeups) => {
                    wakeups.wait(EVERY).await;
                }
                None => tokio::time::sleep(EVERY).await,
            }
        }
    });
}
