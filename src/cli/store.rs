//! `crew store migrate | status | add-agent | agents | publish URL`: the team store on a
//! PostgreSQL server (issue #24; crew's team still runs on the file store). Each tries the
//! server once first, so a wrong or unreachable URL is said at once, naming the server, not
//! after a minute of retries.

use std::cmp::Ordering;
use std::path::Path;

use anyhow::Context;

use crate::cli::args::StoreCommand;
use crew_protocol::AgentName;
use crew_store_pg::{AgentRights, Connection, PgStore, SCHEMA_VERSION};

pub fn run(cmd: StoreCommand, start: &Path) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the store client")?;
    runtime.block_on(async {
        match cmd {
            StoreCommand::Migrate { url } => migrate(&url, to_stdout).await,
            StoreCommand::Status { url } => status(&url).await,
            StoreCommand::AddAgent {
                url,
                name,
                no_code,
                lead,
                password_env,
            } => {
                let rights = AgentRights {
                    writes: !no_code,
                    leads: lead,
                };
                add_agent(&url, &name, rights, password_env.as_deref()).await
            }
            StoreCommand::Agents { url } => agents(&url).await,
            StoreCommand::Publish { url } => publish(&url, start, to_stdout).await,
            StoreCommand::Setup { url } => setup(&url, start, to_stdout).await,
        }
    })
}

/// Where a command's lines go: stdout, or stderr when stdout carries JSON
/// (`crew --store URL up --headless --json`).
pub(crate) type Say = fn(&str);

pub(crate) fn to_stdout(line: &str) {
    println!("{line}");
}

pub(crate) fn to_stderr(line: &str) {
    eprintln!("{line}");
}

/// The store at `url`, once it answered.
async fn reach(url: &str) -> anyhow::Result<PgStore> {
    // One connection is all a command needs.
    let store = PgStore::connect(url, 1)?;
    store.reach().await?;
    Ok(store)
}

/// The store at `url`, once it answered and is at this crew's schema version (what every
/// command but `migrate` and `status` needs).
pub(crate) async fn reach_current(url: &str) -> anyhow::Result<PgStore> {
    let store = reach(url).await?;
    let version = store.status().await?.version;
    match version.cmp(&SCHEMA_VERSION) {
        Ordering::Equal => Ok(store),
        Ordering::Less => anyhow::bail!(
            "the store is at schema version {version}, this crew's is {SCHEMA_VERSION}: run `crew store migrate {url}` first"
        ),
        Ordering::Greater => anyhow::bail!(
            "the store is at schema version {version}, newer than this crew's {SCHEMA_VERSION}: upgrade crew"
        ),
    }
}

async fn migrate(url: &str, say: Say) -> anyhow::Result<()> {
    let store = reach(url).await?;
    let found = store.migrate().await?;
    if found == SCHEMA_VERSION {
        say(&format!("schema version {SCHEMA_VERSION}: already current"));
    } else {
        say(&format!(
            "schema version {SCHEMA_VERSION} (migrated from {found})"
        ));
    }
    Ok(())
}

async fn status(url: &str) -> anyhow::Result<()> {
    let store = reach(url).await?;
    let status = store.status().await?;
    let note = match (status.version, status.version.cmp(&SCHEMA_VERSION)) {
        (0, _) => " (never migrated: crew store migrate URL)",
        (_, Ordering::Less) => " (older than this crew's: crew store migrate URL)",
        (_, Ordering::Greater) => " (newer than this crew's: upgrade crew)",
        (_, Ordering::Equal) => "",
    };
    println!("schema version: {}{note}", status.version);
    println!("this crew's schema version: {SCHEMA_VERSION}");
    println!("tasks: {}", status.tasks);
    println!("messages: {}", status.messages);
    let connection = match &status.connection {
        Connection::Plain => "not encrypted (the server offers no TLS)".to_string(),
        Connection::Encrypted => {
            "TLS, the server not verified (set PGSSLROOTCERT to its CA to verify it)".to_string()
        }
        Connection::Verified(roots) => {
            format!("TLS, the server verified against {}", roots.display())
        }
    };
    println!("connection: {connection}");
    if status.version > 0 {
        print_agents(&store.agents_seen().await?);
    }
    Ok(())
}

async fn add_agent(
    url: &str,
    name: &str,
    rights: AgentRights,
    password_env: Option<&str>,
) -> anyhow::Result<()> {
    let agent = AgentName::parse(name).with_context(|| format!("agent name {name:?}"))?;
    let password = password_env
        .map(|var| {
            std::env::var(var).with_context(|| {
                format!("--password-env {var}: the variable is not set (or not UTF-8)")
            })
        })
        .transpose()?;
    let store = reach_current(url).await?;
    let role = store.add_agent(&agent, rights, password.as_deref()).await?;
    let completes = if role.rights.writes {
        "writes code: its tasks are completed only by your merge"
    } else {
        "writes no code: completes its own tasks"
    };
    let leads = if role.rights.leads {
        "; the lead: assigns and edits tasks"
    } else {
        ""
    };
    println!(
        "agent {agent}: database role {} ({completes}{leads})",
        role.role
    );
    println!("it connects with {}", store.url_as(&role.role));
    match password_env {
        Some(var) => println!(
            "its password: the one in ${var} now; on its host put it in PGPASSWORD or ~/.pgpass"
        ),
        None => println!("its password: none set; the server's own auth (pg_hba.conf) decides"),
    }
    Ok(())
}

async fn agents(url: &str) -> anyhow::Result<()> {
    let roles = reach_current(url).await?.agent_roles().await?;
    if roles.is_empty() {
        println!("no agent has a role yet: crew store add-agent URL NAME");
    }
    for role in roles {
        let writes = if role.rights.writes {
            "writes code"
        } else {
            "no code"
        };
        let leads = if role.rights.leads { "\tlead" } else { "" };
        println!("{}\t{}\t{writes}{leads}", role.agent, role.role);
    }
    Ok(())
}

async fn publish(url: &str, start: &Path, say: Say) -> anyhow::Result<()> {
    let project = crate::cli::project::Project::find(start)?;
    let file = project.workspace.root().join(crew_config::FILE_NAME);
    let toml =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let store = reach_current(url).await?;
    let team = store
        .publish_team(&toml, &project.roster, project.config.limits)
        .await?;
    let names: Vec<&str> = team.roster.names().iter().map(AgentName::as_str).collect();
    say(&format!(
        "published {} to the store at {}: team {}",
        file.display(),
        team.published_at,
        names.join(", ")
    ));
    Ok(())
}

pub(crate) async fn setup(url: &str, start: &Path, say: Say) -> anyhow::Result<()> {
    let project = crate::cli::project::Project::find(start)?;
    migrate(url, say).await?;
    publish(url, start, say).await?;
    let store = reach_current(url).await?;
    let lead = project.config.lead_name().clone();
    for agent in project.config.agents() {
        let name = agent.name.get_ref();
        let rights = AgentRights {
            writes: agent.writes,
            leads: *name == lead,
        };
        let role = store.add_agent(name, rights, None).await?;
        let writes = if rights.writes {
            "writes code"
        } else {
            "no code"
        };
        let leads = if rights.leads { ", the lead" } else { "" };
        say(&format!(
            "{name}: {} ({writes}{leads}), connects with {}",
            role.role,
            store.url_as(&role.role)
        ));
    }
    let on_team: Vec<&AgentName> = project.config.agents().map(|a| a.name.get_ref()).collect();
    let gone: Vec<String> = store
        .agent_roles()
        .await?
        .into_iter()
        .filter(|r| !on_team.contains(&&r.agent))
        .map(|r| format!("{} ({})", r.agent, r.role))
        .collect();
    if !gone.is_empty() {
        say(&format!(
            "roles of agents no longer on the team, still able to log in: {} (remove them with DROP ROLE)",
            gone.join(", ")
        ));
    }
    say(&format!(
        "no password was set: the server's own auth (pg_hba.conf) decides, or give one with \
         `crew store add-agent {url} NAME --password-env VAR`"
    ));
    Ok(())
}

/// Each agent the store knows, by the server's clock: its state, how long since it was last
/// heard from, and each lease it holds — a lapsed one means its host went silent and the task
/// is claimable again.
pub(crate) fn print_agents(agents: &[crew_store_pg::AgentSeen]) {
    if agents.is_empty() {
        println!("agents: none heard from yet");
        return;
    }
    println!("agents:");
    for agent in agents {
        let mut line = format!("  {}", agent.name);
        match (&agent.status, agent.heard_secs) {
            (Some(status), Some(secs)) => {
                line.push_str(&format!("  {}  heard {}s ago", status.state, secs.round()));
                if let Some(host) = &status.host {
                    line.push_str(&format!("  on {}", crate::cli::output::one_line(host)));
                }
            }
            _ => line.push_str("  (no status)"),
        }
        for lease in &agent.leases {
            let secs = lease.secs_left.abs().round();
            if lease.secs_left >= 0.0 {
                line.push_str(&format!("  {} (lease {secs}s left)", lease.task));
            } else {
                line.push_str(&format!(
                    "  {} (lease lapsed {secs}s ago: claimable again)",
                    lease.task
                ));
            }
        }
        println!("{line}");
    }
}
