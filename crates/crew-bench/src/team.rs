//! `crew-bench team`: a real team of `crew worker` processes (scripted "echo" model, trivial
//! tasks, no worktrees) working through M tasks that all become claimable at one instant:
//! throughput, claimable → claimed latency, then the CPU the idle workers use.
//!
//! The instant: every task is created blocked by one gate task, which the lead holds from the
//! start (so no teammate takes it); once every worker is IDLE the gate is completed.
//! Claims are seen by watching `.tasks` with `store::DirWatcher`: on each wake-up the bench
//! reads the task files it has not yet seen claimed, and stamps each with the instant it first
//! read it `in_progress` (or already finished). Latencies include that watcher's own delay.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde_json::json;

use crew_config::TeamConfig;
use crew_git::{Author, exclude_from_git, init_with_files};
use crew_store::{
    Actor, AgentName, AgentState, Claimant, DirWatcher, NewTask, Status, TaskId, Workspace,
    pid_alive,
};
use crew_team::run::supervisor::{Supervisor, TeamEvent};

use crate::stats::{percentile, round3};

/// The defaults of crew.toml, written out: the idle measurement is of what users run.
const IDLE_POLL_SECS: u64 = 5;
const HEARTBEAT_SECS: u64 = 2;
/// Longest the team may go without finishing one more task before the bench gives up.
const STALL: Duration = Duration::from_secs(120);
/// Longest for every worker to start (or settle) and report IDLE.
const SETTLE: Duration = Duration::from_secs(120);

struct Measured {
    completed: usize,
    seconds: f64,
    claim_ms: Vec<f64>,
    first_claim_ms: Vec<f64>,
    idle_cpu_percent: f64,
    idle_window: f64,
}

pub fn run(teammates: usize, tasks: usize, idle_secs: u64, as_json: bool) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("creating a scratch folder")?;
    let root = dir.path();
    let config = make_repo(root, teammates, idle_secs)?;
    let workspace = Workspace::new(root);
    let (gate, ids) = make_tasks(&workspace, config.lead_name(), tasks)?;

    let (mut supervisor, names, started) = start_workers(&workspace, &config)?;
    let measured =
        started.and_then(|pids| measure(&workspace, &config, &names, &pids, gate, &ids, idle_secs));
    // Always through the protocol, even when the measurement failed: no worker is left behind.
    let events = supervisor.shut_down(&names, Duration::from_secs(15))?;
    let m = measured?;
    let killed: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            TeamEvent::Died { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    report(teammates, tasks, &m, &killed, as_json)
}

/// A supervisor with crew.toml's teammates (`w0`…) started, their names, and their pids — or
/// why one did not start (shut the supervisor's workers down either way).
pub fn start_workers(
    workspace: &Workspace,
    config: &TeamConfig,
) -> anyhow::Result<(Supervisor, Vec<AgentName>, anyhow::Result<Vec<u32>>)> {
    let mut supervisor = Supervisor::new(
        workspace.clone(),
        config.roster(),
        config.lead_name(),
        crew_exe()?,
        Duration::from_secs(HEARTBEAT_SECS),
    );
    let names: Vec<AgentName> = config.teammate_names();
    let mut pids = Vec::new();
    for name in &names {
        match supervisor.start(name, &[]) {
            Ok(pid) => pids.push(pid),
            Err(e) => return Ok((supervisor, names, Err(e.into()))),
        }
    }
    Ok((supervisor, names, Ok(pids)))
}

/// The `crew` executable built beside this one (workers are started from it).
pub fn crew_exe() -> anyhow::Result<std::path::PathBuf> {
    Ok(std::env::current_exe()
        .context("locating crew-bench")?
        .with_file_name("crew"))
}

/// A git repository with a crew.toml: a lead and N read-only implementers, all the scripted
/// "echo" scenario, which answers any task with text at once (no tool, so no permission).
pub fn make_repo(root: &Path, teammates: usize, idle_secs: u64) -> anyhow::Result<TeamConfig> {
    let model = r#"model = { provider = "scripted", scenario = "echo" }"#;
    let mut toml = format!(
        "# crew-bench team: every agent is the scripted simulator, not a model.\n\
         [team]\nname = \"bench\"\nbase_branch = \"main\"\n\n\
         [lead]\nname = \"lead\"\n{model}\n"
    );
    for k in 0..teammates {
        toml.push_str(&format!(
            "\n[[teammate]]\nname = \"w{k}\"\nrole = \"implementer\"\nwrites = false\n{model}\n"
        ));
    }
    // The idle timeout only has to outlast the run and the idle window.
    toml.push_str(&format!(
        "\n[permissions]\nmode = \"read-only\"\n\n\
         [worker]\nidle_poll_secs = {IDLE_POLL_SECS}\nheartbeat_secs = {HEARTBEAT_SECS}\n\
         idle_timeout_secs = {}\n",
        idle_secs + 3600
    ));
    init_with_files(
        root,
        "main",
        &[("crew.toml", &toml)],
        &Author::new("crew bench", "bench@crew.invalid"),
        "crew-bench team",
    )?;
    exclude_from_git(root, crew_store::workspace::RUNTIME_FOLDERS)?;
    Ok(TeamConfig::parse(&root.join("crew.toml"), &toml)?)
}

/// The gate (held by the lead, so no teammate claims it) and M tasks blocked by it.
fn make_tasks(
    workspace: &Workspace,
    lead: &AgentName,
    tasks: usize,
) -> anyhow::Result<(TaskId, Vec<TaskId>)> {
    let store = workspace.tasks();
    let gate = store.create(NewTask {
        subject: "bench gate: completing it makes every task claimable".into(),
        ..NewTask::default()
    })?;
    let gate_id = gate.id;
    store.claim(
        gate_id,
        Claimant {
            name: lead,
            role: None,
        },
    )?;
    let mut ids = Vec::with_capacity(tasks);
    for i in 0..tasks {
        let task = store.create(NewTask {
            subject: format!("bench task {i}: say ping"),
            blocked_by: vec![gate.id],
            ..NewTask::default()
        })?;
        ids.push(task.id);
    }
    Ok((gate_id, ids))
}

fn measure(
    workspace: &Workspace,
    config: &TeamConfig,
    names: &[AgentName],
    pids: &[u32],
    gate: TaskId,
    ids: &[TaskId],
    idle_secs: u64,
) -> anyhow::Result<Measured> {
    wait_all_idle(workspace, names, pids)?;
    let store = workspace.tasks();
    let watcher = DirWatcher::new(&[&workspace.tasks_dir()])?;
    // Taken before the gate's write, so each latency includes that write.
    let opened = Instant::now();
    store.complete(
        gate,
        Actor::Lead(config.lead_name()),
        Some("gate open".into()),
    )?;
    let claims = watch_claims(workspace, &watcher, ids, names.len(), opened)?;
    let seconds = opened.elapsed().as_secs_f64();

    wait_all_idle(workspace, names, pids)?;
    let (idle_cpu_percent, idle_window) = idle_cpu(pids, Duration::from_secs(idle_secs))?;
    let mut claim_ms: Vec<f64> = claims.latency_ms.values().copied().collect();
    claim_ms.sort_by(f64::total_cmp);
    let mut first_claim_ms: Vec<f64> = claims.first_by_owner.values().copied().collect();
    first_claim_ms.sort_by(f64::total_cmp);
    Ok(Measured {
        completed: claims.completed,
        seconds,
        claim_ms,
        first_claim_ms,
        idle_cpu_percent,
        idle_window,
    })
}

/// Waits (on events in `.crew/agents`, at most `SETTLE`) until every worker says IDLE with no
/// task; fails at once, with the end of its log, if a worker process is gone.
pub fn wait_all_idle(
    workspace: &Workspace,
    names: &[AgentName],
    pids: &[u32],
) -> anyhow::Result<()> {
    let agents = workspace.agents();
    let watcher = DirWatcher::new(&[&workspace.crew_dir().join("agents")])?;
    let deadline = Instant::now() + SETTLE;
    loop {
        let mut all_idle = true;
        for (name, pid) in names.iter().zip(pids) {
            if !pid_alive(*pid) {
                bail!("worker {name} exited: {}", log_tail(workspace, name));
            }
            let idle = agents
                .read(name)?
                .is_some_and(|s| s.state == AgentState::Idle && s.task.is_none() && s.pid == *pid);
            all_idle &= idle;
        }
        if all_idle {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("the workers were not all IDLE within {}s", SETTLE.as_secs());
        }
        watcher.wait(Duration::from_millis(200));
    }
}

fn log_tail(workspace: &Workspace, name: &str) -> String {
    let path = workspace
        .crew_dir()
        .join("logs")
        .join(format!("{name}.log"));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(5)..].join(" | ")
        }
        Err(e) => format!("no log at {} ({e})", path.display()),
    }
}

struct Claims {
    completed: usize,
    /// Per task: gate opened → first seen claimed.
    latency_ms: BTreeMap<TaskId, f64>,
    /// Per worker: gate opened → its first claim seen (how fast an idle worker wakes).
    first_by_owner: HashMap<AgentName, f64>,
}

/// Follows the tasks until every one is finished (completed or failed).
fn watch_claims(
    workspace: &Workspace,
    watcher: &DirWatcher,
    ids: &[TaskId],
    teammates: usize,
    opened: Instant,
) -> anyhow::Result<Claims> {
    let store = workspace.tasks();
    let mut claims = Claims {
        completed: 0,
        latency_ms: BTreeMap::new(),
        first_by_owner: HashMap::new(),
    };
    // In id order: workers claim the oldest claimable task, so claims advance roughly in order.
    let mut unseen: Vec<TaskId> = ids.to_vec();
    let mut running: Vec<TaskId> = Vec::new();
    let mut progress = Instant::now();
    while !(unseen.is_empty() && running.is_empty()) {
        let mut still_unseen = Vec::with_capacity(unseen.len());
        let mut pending_in_a_row = 0;
        for (k, &id) in unseen.iter().enumerate() {
            // A worker skips at most the tasks the others are locking (fewer than `teammates`),
            // so past that many pending in a row nothing is claimed yet: stop reading there.
            if pending_in_a_row > teammates {
                still_unseen.extend_from_slice(&unseen[k..]);
                break;
            }
            let task = store.read(id)?;
            let seen_ms = opened.elapsed().as_secs_f64() * 1000.0;
            if task.status == Status::Pending {
                pending_in_a_row += 1;
                still_unseen.push(id);
                continue;
            }
            pending_in_a_row = 0;
            claims.latency_ms.insert(id, seen_ms);
            if let Some(owner) = &task.owner {
                claims
                    .first_by_owner
                    .entry(owner.clone())
                    .or_insert(seen_ms);
            }
            running.push(id);
        }
        unseen = still_unseen;
        let before = running.len();
        let mut still_running = Vec::with_capacity(running.len());
        for id in running {
            match store.read(id)?.status {
                Status::Completed => claims.completed += 1,
                Status::Failed => {}
                _ => still_running.push(id),
            }
        }
        if still_running.len() < before {
            progress = Instant::now();
        }
        running = still_running;
        if unseen.is_empty() && running.is_empty() {
            break;
        }
        if progress.elapsed() > STALL {
            bail!(
                "no task finished for {}s ({} not yet claimed, {} running)",
                STALL.as_secs(),
                unseen.len(),
                running.len()
            );
        }
        watcher.wait(Duration::from_millis(500));
    }
    Ok(claims)
}

/// CPU (user + system) of the workers over `window`, as percent of one core for all together.
pub fn idle_cpu(pids: &[u32], window: Duration) -> anyhow::Result<(f64, f64)> {
    // SAFETY: sysconf only reads a configuration value.
    let ticks_per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks_per_sec <= 0 {
        bail!("sysconf(_SC_CLK_TCK) failed");
    }
    let before: u64 = pids
        .iter()
        .map(|&p| cpu_ticks(p))
        .sum::<anyhow::Result<u64>>()?;
    let start = Instant::now();
    // The measurement window itself: nothing to wait for, the workers are left alone.
    std::thread::sleep(window);
    let after: u64 = pids
        .iter()
        .map(|&p| cpu_ticks(p))
        .sum::<anyhow::Result<u64>>()?;
    let elapsed = start.elapsed().as_secs_f64();
    let busy = after.saturating_sub(before) as f64 / ticks_per_sec as f64;
    Ok((busy / elapsed * 100.0, elapsed))
}

/// utime + stime of a process (all its threads), in clock ticks, from `/proc/<pid>/stat`.
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_ticks(&text).ok_or_else(|| anyhow!("{path}: unexpected format: {text:?}"))
}

/// Fields 14 (utime) and 15 (stime); counted after the command name, which may hold spaces
/// and parentheses, so from its last ')'.
fn parse_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn report(
    teammates: usize,
    tasks: usize,
    m: &Measured,
    killed: &[&str],
    as_json: bool,
) -> anyhow::Result<()> {
    let per_sec = if m.seconds > 0.0 {
        m.completed as f64 / m.seconds
    } else {
        0.0
    };
    let report = json!({
        "teammates": teammates,
        "tasks": tasks,
        "completed": m.completed,
        "seconds": round3(m.seconds),
        "tasks_per_sec": round3(per_sec),
        "claim_latency_ms": {
            "p50": round3(percentile(&m.claim_ms, 0.50)),
            "p99": round3(percentile(&m.claim_ms, 0.99)),
        },
        "first_claim_per_teammate_ms": {
            "p50": round3(percentile(&m.first_claim_ms, 0.50)),
            "max": round3(percentile(&m.first_claim_ms, 1.0)),
        },
        "idle_cpu_percent_of_one_core": round3(m.idle_cpu_percent),
        "idle_window_secs": round3(m.idle_window),
        "killed_at_shutdown": killed,
    });
    if as_json {
        println!("{report}");
    } else {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_ticks;

    #[test]
    fn ticks_are_counted_after_the_last_parenthesis() {
        let stat = "42 (crew (w 1)) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 4 0";
        assert_eq!(parse_ticks(stat), Some(10));
    }

    #[test]
    fn a_short_line_is_no_number() {
        assert_eq!(parse_ticks("42 (crew) S 1 2"), None);
    }
}
