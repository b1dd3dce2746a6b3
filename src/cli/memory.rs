//! `crew memory list | show`: what agents remember, for the person (read-only), from the
//! checkout's `.crew/memory/` or, with `--store`, from the team's PostgreSQL store.

use serde_json::json;

use crate::cli::args::MemoryCommand;
use crate::cli::exit::CliError;
use crate::cli::output;
use crate::cli::project::Project;
use crew_config::TeamConfig;
use crew_store::{AgentMemory, AgentName, MemoryBook, MemoryScope};
use crew_store_pg::{PgStore, PgStoreError};

pub fn run(project: &Project, cmd: MemoryCommand) -> anyhow::Result<()> {
    match cmd {
        MemoryCommand::List { agent, json } => list(project, agent.as_ref(), json),
        MemoryCommand::Show { name, agent } => show(project, agent.as_ref(), &name),
    }
}

/// `agent` (the lead by default), which must be on the team.
fn whose<'a>(
    config: &'a TeamConfig,
    agent: Option<&'a AgentName>,
) -> anyhow::Result<&'a AgentName> {
    let name = agent.unwrap_or_else(|| config.lead_name());
    if config.agent(name).is_none() {
        return Err(CliError::Usage(format!(
            "no agent named {:?} in crew.toml",
            output::one_line(name)
        ))
        .into());
    }
    Ok(name)
}

/// The memory book of `agent` (the lead by default), which must be on the team.
fn book(project: &Project, agent: Option<&AgentName>) -> anyhow::Result<MemoryBook> {
    let name = whose(&project.config, agent)?;
    Ok(MemoryBook::new(&project.workspace.crew_dir(), name).with_limits(project.config.limits))
}

/// `crew --store URL memory …`: the same, from the store's rows (no files, so no paths and no
/// stale marks: those need the checkout).
pub async fn on_store(
    store: &PgStore,
    config: &TeamConfig,
    cmd: MemoryCommand,
) -> anyhow::Result<()> {
    match cmd {
        MemoryCommand::List { agent, json } => {
            let name = whose(config, agent.as_ref())?;
            let scopes = [MemoryScope::Agent, MemoryScope::Team];
            let mut kept = Vec::new();
            for scope in scopes {
                kept.push((scope, store.memories(name, scope).await?));
            }
            if json {
                let memories: Vec<_> = kept
                    .iter()
                    .flat_map(|(scope, found)| {
                        found.iter().map(move |m| {
                            json!({
                                "scope": scope,
                                "name": m.name,
                                "type": m.kind,
                                "description": m.description,
                            })
                        })
                    })
                    .collect();
                return output::json(&json!({"memories": memories, "broken": []}));
            }
            for (scope, found) in kept {
                println!("{}", scope.label(name));
                for memory in found {
                    println!("{}", output::one_line(&memory.index_line(None)));
                }
            }
            Ok(())
        }
        MemoryCommand::Show { name, agent } => {
            let who = whose(config, agent.as_ref())?;
            let memory = store.memory(who, None, &name).await.map_err(|e| match e {
                PgStoreError::Refused(why) => CliError::Refused(why.to_string()).into(),
                other => anyhow::Error::from(other),
            })?;
            println!("{}", output::one_line(&memory.index_line(None)));
            println!("{}\n", memory.scope.label(who));
            println!("{}", output::block(&memory.body));
            Ok(())
        }
    }
}

fn list(project: &Project, agent: Option<&AgentName>, as_json: bool) -> anyhow::Result<()> {
    let book = book(project, agent)?;
    let root = project.workspace.root();
    let scopes = [MemoryScope::Agent, MemoryScope::Team];
    if as_json {
        let mut memories = Vec::new();
        let mut broken = Vec::new();
        for scope in scopes {
            let (found, bad) = book.list(scope);
            memories.extend(found.iter().map(|m| {
                json!({
                    "scope": scope,
                    "name": m.name,
                    "type": m.kind,
                    "description": m.description,
                    "path": book.file(scope, &m.name),
                    "missing_paths": m.missing_paths(root),
                })
            }));
            broken.extend(bad.iter().map(|e| e.to_string()));
        }
        return output::json(&json!({"memories": memories, "broken": broken}));
    }
    for scope in scopes {
        println!(
            "{} ({})",
            book.scope_label(scope),
            book.scope_dir(scope).display()
        );
        print!(
            "{}",
            output::block(&book.prompt_index(scope, root, usize::MAX, usize::MAX))
        );
    }
    Ok(())
}

fn show(project: &Project, agent: Option<&AgentName>, name: &str) -> anyhow::Result<()> {
    let book = book(project, agent)?;
    let memory = book
        .read(None, name)
        .map_err(|e| CliError::Refused(e.to_string()))?;
    println!(
        "{}",
        output::one_line(&memory.index_line(Some(project.workspace.root())))
    );
    println!("{}\n", book.file(memory.scope, &memory.name).display());
    println!("{}", output::block(&memory.body));
    Ok(())
}
