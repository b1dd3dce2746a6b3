//! `crew status`, `crew down`: the team's processes.

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::cli::output;
use crate::cli::project::Project;
use crew_protocol::joined;
use crew_store::AgentState;
use crew_team::run::daemon::{self, Request};
use crew_team::run::supervisor::{Supervisor, TeamEvent};
use crew_team::run::team_control;

/// A status is only as good as its heartbeat: past this, a live state is shown as DEAD.
fn stale_after(project: &Project) -> Duration {
    (Duration::from_secs(project.config.worker.heartbeat_secs) * 5).max(Duration::from_secs(5))
}

pub fn status(project: &Project, as_json: bool) -> anyhow::Result<()> {
    let now = SystemTime::now();
    let mut rows = Vec::new();
    for agent in project.config.agents() {
        let name = agent.name.get_ref();
        let status = project.workspace.agents().read(name)?;
        let (state, dead) = match &status {
            Some(s) if s.looks_dead(now, stale_after(project)) => (AgentState::Dead.as_str(), true),
            Some(s) => (s.state.as_str(), false),
            None => ("NOT STARTED", false),
        };
        rows.push(json!({
            "name": name,
            "role": project.config.role_of(name),
            "state": state,
            "pid": status.as_ref().map(|s| s.pid),
            "task": status.as_ref().and_then(|s| s.task),
            "waiting_on": status.as_ref().and_then(|s| s.waiting_on.clone()),
            "heartbeat": status.as_ref().map(|s| s.heartbeat.clone()),
            "heartbeat_age_secs": status.as_ref().map(|s| s.heartbeat_age(now).as_secs()),
            "turns": status.as_ref().map_or(0, |s| s.turns),
            "tokens": status.as_ref().map_or(0, |s| s.tokens),
            "cost_micros": status.as_ref().and_then(|s| s.cost_micros),
            "cache": status.as_ref().map(|s| s.cache).unwrap_or_default(),
            "note": status.as_ref().and_then(|s| s.note.clone()).or(dead.then(|| "process gone or heartbeat stale".to_string())),
        }));
    }
    let tasks = project.workspace.tasks().load_all()?.tasks;
    let waiting = tasks
        .iter()
        .filter(|t| t.status == crew_store::Status::Review)
        .count();
    let verdicts = crew_team::verdict::of_reviews(&tasks);
    let team = daemon::running(&project.workspace);
    // Screens attached: only a daemon knows (a headless team has no screens of its own).
    let screens = team
        .as_ref()
        .filter(|t| !t.headless)
        .and_then(|_| daemon::control::ask(&project.workspace, &Request::Status).ok())
        .map(|s| s.screens);
    if as_json {
        return output::json(&json!({
            "team": team.as_ref().map(|t| json!({
                "running": true,
                "pid": t.pid,
                "since": humantime::format_rfc3339_seconds(t.started()).to_string(),
                "headless": t.headless,
                "screens": screens,
            })).unwrap_or(json!({ "running": false })),
            "simulator": project.config.simulated(),
            "simulated_agents": project.config.simulated_agents(),
            "agents": rows,
            "reviews_waiting": waiting,
            "tasks": tasks.iter().filter(|t| t.usage.is_some()).map(|t| json!({
                "id": t.id, "status": t.status, "usage": t.usage,
            })).collect::<Vec<_>>(),
            "verdicts": verdicts,
        }));
    }
    match &team {
        Some(t) => println!(
            "team: running {} (pid {}, since {}){}",
            if t.headless {
                "in the foreground (crew up --headless)"
            } else {
                "as a daemon"
            },
            t.pid,
            humantime::format_rfc3339_seconds(t.started()),
            screens.map_or(String::new(), |n| format!(", {n} screen(s) attached"))
        ),
        None => println!("team: not running (`crew up` starts it)"),
    }
    if let Some(line) = crate::cli::preflight::simulator_line(&project.config) {
        println!("{line}");
    }
    for r in rows {
        let field = |k: &str| {
            r[k].as_str()
                .map(str::to_string)
                .unwrap_or_else(|| "-".into())
        };
        let age = r["heartbeat_age_secs"]
            .as_u64()
            .map(output::age)
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<10} {:<12} {:<11} pid {:<7} task {:<8} beat {:<4} turns {:<4} tokens {:<8} {:<12} cache {}/{} {}",
            field("name"),
            field("role"),
            field("state"),
            r["pid"].as_u64().map_or("-".into(), |p| p.to_string()),
            field("task"),
            age,
            r["turns"],
            r["tokens"],
            r["cost_micros"]
                .as_u64()
                .map_or_else(|| "cost unknown".to_string(), crew_store::dollars),
            r["cache"]["read"],
            r["cache"]["written"],
            output::one_line(r["note"].as_str().unwrap_or(""))
        );
    }
    for task in &tasks {
        if let Some(usage) = &task.usage {
            println!("{} {}: {}", task.id, task.status, usage.text());
        }
    }
    println!("reviews waiting: {waiting} (crew review list)");
    for (task, verdict) in &verdicts {
        println!("{task} verdict: {}", output::one_line(verdict));
    }
    Ok(())
}

pub fn print_event(event: &TeamEvent) {
    match event {
        TeamEvent::Started { name, pid } => println!("started {name} (pid {pid})"),
        TeamEvent::Adopted { name, pid } => {
            println!("{name} still runs (pid {pid}); watching it again")
        }
        TeamEvent::Exited { name, code } => match code {
            Some(0) => println!("{name} stopped"),
            Some(code) => println!("{name} exited with code {code}"),
            None => println!("{name} was ended by a signal"),
        },
        TeamEvent::ShutDown { name } => println!("{name} shut down"),
        TeamEvent::Died {
            name,
            released,
            why,
        } => {
            let tasks = if released.is_empty() {
                "no task held".to_string()
            } else {
                format!("{} back to pending", joined(released, ", "))
            };
            println!("{name} died ({}); {tasks}", output::one_line(why))
        }
    }
}

pub fn down(project: &Project, timeout: u64, as_json: bool) -> anyhow::Result<()> {
    let grace = Duration::from_secs(timeout);
    if let Some(team) = team_control::stop(&project.workspace, grace)? {
        println!("stopping the team (pid {})...", team.pid);
        team_control::wait_stopped(&project.workspace, &team, grace, &mut |line| {
            println!("{line}")
        })?;
        println!("the team stopped");
        if as_json {
            return output::json(&json!({ "stopped": team.pid }));
        }
        return Ok(());
    }
    let mut sup = Supervisor::for_team(
        project.workspace.clone(),
        &project.config,
        std::env::current_exe()?,
    );
    let events = sup.shut_down(&project.config.teammate_names(), grace)?;
    if as_json {
        let list: Vec<_> = events.iter().map(|e| format!("{e:?}")).collect();
        return output::json(&json!({ "events": list }));
    }
    if events.is_empty() {
        println!("no worker was running");
    }
    for e in &events {
        print_event(e);
    }
    Ok(())
}
