//! `crew task ...`

use serde_json::json;

use crate::cli::args::{OwnerArgs, TaskCommand};
use crate::cli::exit::CliError;
use crate::cli::graph_text;
use crate::cli::output;
use crate::cli::project::Project;
use crew_config::ROLES;
use crew_config::TeamConfig;
use crew_store::dag::Graph;
use crew_store::{
    Actor, AgentName, Claimant, FileStore, Loaded, NewTask, Task, TaskPatch, TeamStore,
};

pub fn run(project: &Project, cmd: TaskCommand) -> anyhow::Result<()> {
    let store = project.workspace.tasks();
    match cmd {
        // On files a task file may be broken: reported, and the rest still shown.
        TaskCommand::List { json } => {
            let loaded = store.load_all()?;
            report_problems(&loaded);
            print_list(&loaded.tasks, &problems_json(&loaded), json)
        }
        TaskCommand::Graph { json } => {
            let loaded = store.load_all()?;
            report_problems(&loaded);
            print_graph(&loaded.tasks, &problems_json(&loaded), json)
        }
        // The file store's operations are ready at once; a runtime only to wait on them.
        cmd => tokio::runtime::Builder::new_current_thread()
            .build()?
            .block_on(on_store(
                &FileStore::new(project.workspace.clone(), project.roster.clone()),
                &project.config,
                cmd,
            )),
    }
}

/// `crew task …` on `store` (the team's files, or its PostgreSQL store with `--store`), as the
/// person, the team being `config`.
pub(crate) async fn on_store<S: TeamStore>(
    store: &S,
    config: &TeamConfig,
    cmd: TaskCommand,
) -> anyhow::Result<()> {
    let claimant = |name, role| claimant(config, name, role);
    match cmd {
        TaskCommand::Add {
            subject,
            desc,
            blocked_by,
            role,
            json,
        } => {
            if let Some(role) = &role {
                check_role(role)?;
            }
            let task = store
                .create_task(NewTask {
                    subject,
                    description: desc.unwrap_or_default(),
                    blocked_by,
                    role,
                })
                .await?;
            if json {
                output::json(&task)
            } else {
                println!("{}", task.id);
                Ok(())
            }
        }
        TaskCommand::Update {
            id,
            subject,
            desc,
            blocked_by,
            clear_blocked_by,
            json,
        } => {
            let blocked_by = if clear_blocked_by {
                Some(Vec::new())
            } else if blocked_by.is_empty() {
                None
            } else {
                Some(blocked_by)
            };
            let patch = TaskPatch {
                subject,
                description: desc,
                blocked_by,
            };
            let task = store.update(id, patch, Actor::Person).await?;
            print_task_line(&task, json, "updated")
        }
        TaskCommand::List { json } => print_list(&store.tasks().await?, &[], json),
        TaskCommand::Graph { json } => print_graph(&store.tasks().await?, &[], json),
        TaskCommand::Show { id, json } => {
            let task = store.task(id).await?;
            if json {
                return output::json(&task);
            }
            let tasks = store.tasks().await?;
            print!("{}", graph_text::task_detail(&Graph::new(&tasks), &task));
            Ok(())
        }
        TaskCommand::Claim {
            id,
            next,
            who,
            role,
            json,
        } => {
            let claimant = claimant(&who, role.as_deref())?;
            let task = match (id, next) {
                (Some(id), false) => store.claim(id, claimant).await?,
                (None, true) => store.claim_next(claimant).await?,
                _ => return Err(CliError::Usage("give a task id or --next".into()).into()),
            };
            print_task_line(&task, json, &format!("claimed as {who}:"))
        }
        TaskCommand::Release(OwnerArgs { id, who, json }) => {
            claimant(&who, None)?;
            let task = store.release(id, &who).await?;
            print_task_line(&task, json, "released")
        }
        TaskCommand::Assign { id, to, json, .. } => {
            let to = to.as_ref().map(|n| claimant(n, None)).transpose()?;
            let task = store.assign(id, to, Actor::Person).await?;
            let verb = match &task.owner {
                Some(owner) => format!("assigned to {owner}:"),
                None => "unassigned:".to_string(),
            };
            print_task_line(&task, json, &verb)
        }
        TaskCommand::Done { owner, result } => {
            claimant(&owner.who, None)?;
            let task = store
                .complete(owner.id, Actor::PersonAs(&owner.who), result)
                .await?;
            print_task_line(&task, owner.json, "completed")
        }
        TaskCommand::Fail { owner, reason } => {
            claimant(&owner.who, None)?;
            let task = store.fail(owner.id, &owner.who, reason).await?;
            print_task_line(&task, owner.json, "failed")
        }
    }
}

/// Agent `name` on `config`'s team, claiming as `role` or its own.
fn claimant<'a>(
    config: &'a TeamConfig,
    name: &'a AgentName,
    role: Option<&'a str>,
) -> anyhow::Result<Claimant<'a>> {
    config
        .roster()
        .check("agent", name)
        .map_err(crew_store::StoreError::from)?;
    Ok(Claimant {
        name,
        role: role.or_else(|| config.role_of(name)),
    })
}

fn print_list(tasks: &[Task], problems: &[serde_json::Value], json: bool) -> anyhow::Result<()> {
    if json {
        return output::json(&json!({ "tasks": tasks, "problems": problems }));
    }
    let graph = Graph::new(tasks);
    for task in graph.tasks() {
        println!("{}", graph_text::task_line(&graph, task));
    }
    Ok(())
}

fn print_graph(tasks: &[Task], problems: &[serde_json::Value], json: bool) -> anyhow::Result<()> {
    let graph = Graph::new(tasks);
    if json {
        return output::json(&graph_text::graph_json(&graph, problems));
    }
    print!("{}", graph_text::graph(&graph));
    Ok(())
}

pub(crate) fn check_role(role: &str) -> anyhow::Result<()> {
    if role == "lead" || ROLES.contains(&role) {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "unknown role {role:?}; roles are: lead, {}",
            ROLES.join(", ")
        ))
        .into())
    }
}

fn print_task_line(task: &Task, json: bool, verb: &str) -> anyhow::Result<()> {
    if json {
        output::json(task)
    } else {
        println!(
            "{verb} {} ({}) {}",
            task.id,
            task.status,
            output::one_line(&task.subject)
        );
        Ok(())
    }
}

/// Bad task files are reported on stderr; the rest of the graph still shows.
fn report_problems(loaded: &Loaded) {
    for problem in &loaded.problems {
        eprintln!("crew: warning: {}", output::one_line(&problem.to_string()));
    }
}

fn problems_json(loaded: &Loaded) -> Vec<serde_json::Value> {
    loaded
        .problems
        .iter()
        .map(|p| json!({ "error": p.to_string() }))
        .collect()
}
