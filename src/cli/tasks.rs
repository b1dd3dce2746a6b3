//! `crew task ...`

use serde_json::json;

use crate::cli::args::{OwnerArgs, TaskCommand};
use crate::cli::exit::CliError;
use crate::cli::graph_text;
use crate::cli::output;
use crate::cli::project::Project;
use crew_config::ROLES;
use crew_store::dag::Graph;
use crew_store::{Actor, Loaded, NewTask, Task, TaskPatch};

pub fn run(project: &Project, cmd: TaskCommand) -> anyhow::Result<()> {
    let store = project.workspace.tasks();
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
            let task = store.create(NewTask {
                subject,
                description: desc.unwrap_or_default(),
                blocked_by,
                role,
            })?;
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
            let task = store.update(
                id,
                TaskPatch {
                    subject,
                    description: desc,
                    blocked_by,
                },
                Actor::Person,
            )?;
            print_task_line(&task, json, "updated")
        }
        TaskCommand::List { json } => {
            let loaded = store.load_all()?;
            report_problems(&loaded);
            if json {
                return output::json(&json!({
                    "tasks": loaded.tasks,
                    "problems": problems_json(&loaded),
                }));
            }
            let graph = Graph::new(&loaded.tasks);
            for task in graph.tasks() {
                println!("{}", graph_text::task_line(&graph, task));
            }
            Ok(())
        }
        TaskCommand::Show { id, json } => {
            let task = store.read(id)?;
            if json {
                return output::json(&task);
            }
            let loaded = store.load_all()?;
            let graph = Graph::new(&loaded.tasks);
            print!("{}", graph_text::task_detail(&graph, &task));
            Ok(())
        }
        TaskCommand::Graph { json } => {
            let loaded = store.load_all()?;
            report_problems(&loaded);
            let graph = Graph::new(&loaded.tasks);
            if json {
                return output::json(&graph_text::graph_json(&graph, &problems_json(&loaded)));
            }
            print!("{}", graph_text::graph(&graph));
            Ok(())
        }
        TaskCommand::Claim {
            id,
            next,
            who,
            role,
            json,
        } => {
            let claimant = project.claimant(&who, role.as_deref())?;
            let task = match (id, next) {
                (Some(id), false) => store.claim(id, claimant)?,
                (None, true) => store.claim_next(claimant)?,
                _ => return Err(CliError::Usage("give a task id or --next".into()).into()),
            };
            print_task_line(&task, json, &format!("claimed as {who}:"))
        }
        TaskCommand::Release(OwnerArgs { id, who, json }) => {
            project.claimant(&who, None)?;
            let task = store.release(id, &who)?;
            print_task_line(&task, json, "released")
        }
        TaskCommand::Assign { id, to, json, .. } => {
            let to = to.as_ref().map(|n| project.claimant(n, None)).transpose()?;
            let task = store.assign(id, to, Actor::Person)?;
            let verb = match &task.owner {
                Some(owner) => format!("assigned to {owner}:"),
                None => "unassigned:".to_string(),
            };
            print_task_line(&task, json, &verb)
        }
        TaskCommand::Done { owner, result } => {
            project.claimant(&owner.who, None)?;
            let task = store.complete(owner.id, Actor::PersonAs(&owner.who), result)?;
            print_task_line(&task, owner.json, "completed")
        }
        TaskCommand::Fail { owner, reason } => {
            project.claimant(&owner.who, None)?;
            let task = store.fail(owner.id, &owner.who, reason)?;
            print_task_line(&task, owner.json, "failed")
        }
    }
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
