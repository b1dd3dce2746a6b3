//! `crew demo [--dir DIR] --headless [--approve allow|deny] [--merge auto|queue]`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};

use crate::cli::args::{ApprovePolicy, DemoArgs, DemoMerge};
use crate::cli::output;
use crate::cli::progress::all_done;
use crew_config::{FILE_NAME, TeamConfig};
use crew_store::{DirWatcher, Workspace};
use crew_team::demo;
use crew_team::run::headless::{MergePolicy, Policy, TeamRun};

/// The whole demo should take seconds; this only stops a broken run from hanging.
const DEADLINE: Duration = Duration::from_secs(180);

pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    let dir = match args.dir {
        Some(dir) => dir,
        None => tempfile::Builder::new()
            .prefix("crew-demo-")
            .tempdir()
            .context("creating a scratch folder")?
            .keep(),
    };
    if dir.exists() && dir.read_dir()?.next().is_some() {
        return Err(anyhow!(
            "{} is not empty; give the demo an empty or new folder",
            dir.display()
        ));
    }
    std::fs::create_dir_all(&dir)?;
    demo::build(&dir)?;
    let dir = dir.canonicalize()?;
    let workspace = Workspace::new(&dir);
    let config = Arc::new(TeamConfig::load(&dir.join(FILE_NAME))?);
    crate::cli::logging::start(&dir);
    if !args.headless {
        crate::cli::attach::start_and_attach(
            &workspace,
            &config,
            Some(demo::GOAL),
            false,
            crew_tui::Options::default(),
        )?;
        let hint = if crew_team::run::daemon::running(&workspace).is_some() {
            format!(
                ": `crew -C {0}` attaches again, `crew -C {0} down` stops its team",
                dir.display()
            )
        } else {
            String::new()
        };
        println!("the demo repository is {}{hint}", dir.display());
        return Ok(());
    }
    let (policy, approve) = match args.approve {
        ApprovePolicy::Allow => (Policy::Allow, "allow"),
        ApprovePolicy::Deny => (Policy::Deny, "deny"),
    };
    let started = Instant::now();
    let mut team = TeamRun::start(
        workspace.clone(),
        config.clone(),
        std::env::current_exe()?,
        Some(policy),
        match args.merge {
            DemoMerge::Auto => MergePolicy::Auto,
            DemoMerge::Queue => MergePolicy::Manual,
        },
        false,
    )?;
    team.give_goal(demo::GOAL)?;
    let watcher = DirWatcher::new(&[&workspace.mailboxes_dir(), &workspace.tasks_dir()])?;
    let mut finished = false;
    while started.elapsed() < DEADLINE {
        team.tick()?;
        if matches!(args.merge, DemoMerge::Queue) {
            approve_at_once(&workspace, &config)?;
        }
        if all_done(&workspace.tasks().load_all()?.tasks) {
            finished = true;
            break;
        }
        team.wait(&watcher, Duration::from_millis(300));
    }
    team.stop(Duration::from_secs(15))?;
    let mut agents = vec![config.lead_name().clone()];
    agents.extend(config.teammate_names());
    let mut summary = demo::summarise(
        &workspace,
        config.request_timeout(),
        &agents,
        approve,
        started.elapsed().as_secs_f64(),
    )?;
    summary.simulator = config.simulated();
    let (pass, _) = demo::tests_pass(&dir);
    let failed = summary.tasks.get("failed").copied().unwrap_or(0);
    let verdicts_pass = summary
        .verdicts
        .values()
        .all(|v| v.as_str() == crew_team::verdict::label(Some(crew_protocol::Verdict::Pass)));
    // A failed task or a review that did not pass is not the goal reached, whatever the tests.
    summary.goal_reached = finished
        && pass
        && failed == 0
        && verdicts_pass
        && summary.tasks.get("completed").copied().unwrap_or(0) >= 3;
    if failed > 0 {
        summary.notes.push(format!("{failed} task(s) failed"));
    }
    if !verdicts_pass {
        summary
            .notes
            .push("a review's verdict was not a pass".to_string());
    }
    if !finished {
        summary.notes.push(format!(
            "the team did not finish within {}s",
            DEADLINE.as_secs()
        ));
    }
    if matches!(args.merge, DemoMerge::Queue) {
        for run in workspace.merge_queue().load()?.runs {
            summary.notes.push(format!(
                "merge queue run: {}",
                crate::cli::merge_queue::run_line(&run)
            ));
        }
    }
    output::json(&summary)?;
    if summary.goal_reached {
        Ok(())
    } else {
        Err(anyhow!(
            "the demo did not reach its goal; see the summary and {}",
            dir.join(".crew/logs").display()
        ))
    }
}

/// `--merge queue`: what a person at the review queue does. Once no task is being worked on,
/// every review not yet queued is approved together (the queue paused meanwhile, so it takes
/// them as one batch).
fn approve_at_once(workspace: &Workspace, config: &TeamConfig) -> anyhow::Result<()> {
    use crew_store::Status;
    let tasks = workspace.tasks().load_all()?.tasks;
    if tasks.iter().any(|t| t.status == Status::InProgress) {
        return Ok(());
    }
    let queue = workspace.merge_queue();
    let queued = queue.load()?;
    let waiting: Vec<_> = tasks
        .iter()
        .filter(|t| t.status == Status::Review)
        .filter(|t| {
            let head = t.commits.as_ref().map(|c| c.head.as_str());
            queued
                .entry(t.id)
                .is_none_or(|e| Some(e.head.as_str()) != head)
        })
        .map(|t| t.id)
        .collect();
    if waiting.is_empty() {
        return Ok(());
    }
    queue.set_paused(true)?;
    for id in waiting {
        if let Err(e) = crew_team::review::approve(workspace, config, id, &crew_store::USER) {
            tracing::warn!("{id} not approved into the merge queue: {e}");
        }
    }
    queue.set_paused(false)?;
    Ok(())
}
