//! `crew-bench interrupt`: how soon an agent stops after the person interrupts it. One real
//! `crew worker` (the scripted simulator) runs a task whose tool call is `sleep 30`; the bench
//! sends the interrupt through the store, as `crew interrupt` and the screen do, and times it to
//! the worker's status saying IDLE with the note "interrupted by the person". A message then
//! lets the agent finish the task, and the next run starts.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crew_git::{Author, exclude_from_git, init_with_files};
use crew_store::{AgentName, AgentState, Draft, NewTask, Status, Workspace};
use crew_team::run::supervisor::Supervisor;

use crate::stats::{percentile, round3};
use crew_store::USER;

const NAME: &str = "alice";
const SCENARIO: &str = r#"
[[rule]]
task_contains = "sleep"
turn = 0
text = "Sleeping."
[[rule.tool_call]]
name = "bash"
input = { command = "sleep 30" }

[[rule]]
text = "Done."
"#;
/// Longest any one step may take before the bench gives up.
const STEP: Duration = Duration::from_secs(60);

pub fn run(runs: usize, as_json: bool) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("creating a scratch folder")?;
    let root = dir.path();
    let config = make_repo(root)?;
    let workspace = Workspace::new(root);
    let name = AgentName::parse(NAME)?;
    let mut supervisor = Supervisor::new(
        workspace.clone(),
        config.roster(),
        config.lead_name(),
        crate::team::crew_exe()?,
        Duration::from_secs(1),
    );
    supervisor.start(&name, &[])?;
    let measured = measure(&workspace, &config.roster(), &name, runs);
    supervisor.shut_down(&[name], Duration::from_secs(15))?;
    let mut ms = measured?;
    ms.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&ms, 0.50), percentile(&ms, 0.99));
    if as_json {
        println!(
            "{}",
            json!({"runs": runs, "p50_ms": round3(p50), "p99_ms": round3(p99)})
        );
    } else {
        println!(
            "{runs} interrupts of a running `sleep 30`: interrupt → IDLE p50 {p50:.1} ms, p99 {p99:.1} ms"
        );
    }
    Ok(())
}

fn make_repo(root: &Path) -> anyhow::Result<crew_config::TeamConfig> {
    let model = r#"model = { provider = "scripted", scenario = "interrupt.toml" }"#;
    let toml = format!(
        "# crew-bench interrupt: the scripted simulator, not a model.\n\
         [team]\nname = \"bench\"\nbase_branch = \"main\"\ntest_command = \"sleep 30\"\n\n\
         [lead]\nname = \"lead\"\n{model}\n\n\
         [[teammate]]\nname = \"{NAME}\"\nrole = \"implementer\"\nwrites = false\n{model}\n\n\
         [permissions]\nmode = \"ask\"\nallow = [\"bash(sleep 30)\"]\nsandbox = \"off\"\n\n\
         [worker]\nidle_poll_secs = 1\nheartbeat_secs = 1\nidle_timeout_secs = 3600\n"
    );
    init_with_files(
        root,
        "main",
        &[("crew.toml", &toml), ("interrupt.toml", SCENARIO)],
        &Author::new("crew bench", "bench@crew.invalid"),
        "crew-bench interrupt",
    )?;
    exclude_from_git(root, crew_store::workspace::RUNTIME_FOLDERS)?;
    Ok(crew_config::TeamConfig::parse(
        &root.join("crew.toml"),
        &toml,
    )?)
}

fn measure(
    workspace: &Workspace,
    roster: &crew_store::Roster,
    name: &AgentName,
    runs: usize,
) -> anyhow::Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(runs);
    for run in 0..runs {
        let task = workspace.tasks().create(NewTask {
            subject: format!("sleep, run {run}"),
            ..NewTask::default()
        })?;
        // Working, and its tool has had a moment to start.
        wait(&format!("{NAME} to work on {}", task.id), || {
            let s = workspace.agents().read(name)?;
            Ok(s.is_some_and(|s| s.state == AgentState::Work && s.task == Some(task.id)))
        })?;
        std::thread::sleep(Duration::from_millis(200));
        let asked = Instant::now();
        crew_team::run::interrupt::interrupt(workspace, roster, name)?;
        let until = asked + STEP;
        loop {
            let s = workspace.agents().read(name)?;
            if s.is_some_and(|s| {
                s.state == AgentState::Idle
                    && s.note.as_deref().is_some_and(|n| n.contains("interrupted"))
            }) {
                break;
            }
            if Instant::now() > until {
                bail!("run {run}: {NAME} did not stop within {STEP:?}");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        ms.push(asked.elapsed().as_secs_f64() * 1_000.0);
        workspace.mailboxes().send(
            roster,
            Draft {
                text: Some("carry on".into()),
                ..Draft::new(USER, name.clone())
            },
        )?;
        let id = task.id;
        wait(&format!("{} to complete", task.id), || {
            Ok(workspace.tasks().read(id)?.status == Status::Completed)
        })?;
    }
    Ok(ms)
}

fn wait(what: &str, mut done: impl FnMut() -> anyhow::Result<bool>) -> anyhow::Result<()> {
    let until = Instant::now() + STEP;
    while !done()? {
        if Instant::now() > until {
            bail!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}
