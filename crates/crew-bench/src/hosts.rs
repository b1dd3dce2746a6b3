//! `crew-bench hosts --store postgres://…`: a scripted team spread over several "host"
//! processes on one PostgreSQL store, with chaos. Each host runs W workers (tokio tasks, each
//! its own agent name) that claim under a lease renewed by the host's heartbeat, work a few
//! milliseconds, complete, and tell the lead (this process, reading its inbox through its
//! cursor). The tasks form layers (task i waits for task i − 100), so claims keep meeting the
//! DAG. Chaos, by fraction of tasks completed: `--kill-host K` SIGKILLs host K mid-task;
//! `--freeze-host F` SIGSTOPs host F at a third (cut off: no heartbeat, no work) for twice the
//! lease, so its leases lapse and others take its tasks, then lets it go on, stale. The bench
//! prints "chaos: …" lines on stderr as it acts, so a caller can restart the server then too.
//!
//! At the end it checks what the issue asks: every task completed once (one "done" message
//! each, none from a stale owner), every message a live host sent is in the lead's inbox.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crew_store::{AgentName, Claimant, Draft, MessageKind, NewTask, Refusal, Status, TaskId};
use crew_store_pg::{PgStore, PgStoreError, Wakeups};

use crate::pg::{Scratch, nothing_left, runtime};

const LEAD: &str = "lead";
/// A layer: task i is blocked by task i − LAYER.
const LAYER: usize = 100;
/// Longest the team may go without one more task completed before the bench gives up.
const STALL: Duration = Duration::from_secs(120);

/// What the bench was asked to do.
pub struct Plan {
    pub hosts: usize,
    pub workers: usize,
    pub tasks: usize,
    pub lease_ms: u64,
    pub work_ms: u64,
    pub kill_host: Option<usize>,
    pub freeze_host: Option<usize>,
}

struct Host {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    killed: bool,
}

pub fn run(url: &str, plan: &Plan, as_json: bool) -> anyhow::Result<()> {
    if plan.hosts == 0 || plan.workers == 0 {
        bail!("--hosts and --workers must be at least 1");
    }
    for (what, host) in [
        ("--kill-host", plan.kill_host),
        ("--freeze-host", plan.freeze_host),
    ] {
        if let Some(h) = host
            && h >= plan.hosts
        {
            bail!("{what} {h}: there are hosts 0 to {}", plan.hosts - 1);
        }
    }
    let rt = runtime()?;
    let scratch = rt.block_on(Scratch::create(url))?;
    let result = rt.block_on(run_in(&scratch.url, plan));
    rt.block_on(scratch.drop_it())?;
    let report = result?;
    if as_json {
        println!("{report}");
    } else {
        for (key, value) in report.as_object().into_iter().flatten() {
            println!("{key}: {value}");
        }
    }
    Ok(())
}

async fn run_in(url: &str, plan: &Plan) -> anyhow::Result<Value> {
    let store = PgStore::connect(url, 2)?;
    let mut ids: Vec<TaskId> = Vec::with_capacity(plan.tasks);
    for i in 0..plan.tasks {
        let blocked_by = i
            .checked_sub(LAYER)
            .map(|b| vec![ids[b]])
            .unwrap_or_default();
        let task = store
            .create_task(NewTask {
                subject: format!("scripted task {i}"),
                blocked_by,
                ..NewTask::default()
            })
            .await?;
        ids.push(task.id);
    }
    let mut hosts = spawn_hosts(url, plan)?;
    let lead = AgentName::parse(LEAD)?;
    let mut wakeups = Wakeups::listen(&store).await?;
    let start = Instant::now();
    for host in &mut hosts {
        let stdin = host
            .child
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("no stdin"))?;
        stdin.write_all(b"go\n")?;
        stdin.flush()?;
    }

    // The lead follows its inbox while the chaos happens.
    let mut done_messages: HashMap<String, Vec<String>> = HashMap::new();
    let mut inbox_ids: HashSet<String> = HashSet::new();
    let (mut frozen_at, mut thawed) = (None::<Instant>, false);
    let (mut completed, mut last_progress) = (0, Instant::now());
    let lease = Duration::from_millis(plan.lease_ms);
    while completed < plan.tasks {
        read_inbox(&store, &lead, &mut done_messages, &mut inbox_ids).await?;
        let now_completed = store
            .tasks()
            .await?
            .iter()
            .filter(|t| t.status == Status::Completed)
            .count();
        if now_completed > completed {
            last_progress = Instant::now();
        }
        completed = now_completed;
        if let Some(k) = plan.kill_host
            && !hosts[k].killed
            && completed >= plan.tasks / 4
        {
            hosts[k].child.kill()?;
            hosts[k].killed = true;
            chaos(&format!(
                "host {k} killed (SIGKILL) at {completed} completed"
            ));
        }
        if let Some(f) = plan.freeze_host
            && frozen_at.is_none()
            && completed >= plan.tasks / 3
        {
            signal(&hosts[f].child, libc::SIGSTOP)?;
            frozen_at = Some(Instant::now());
            chaos(&format!(
                "host {f} cut off (SIGSTOP) at {completed} completed"
            ));
        }
        if let (Some(f), Some(at)) = (plan.freeze_host, frozen_at)
            && !thawed
            && at.elapsed() > lease * 2
        {
            signal(&hosts[f].child, libc::SIGCONT)?;
            thawed = true;
            chaos(&format!("host {f} back (SIGCONT), its leases long lapsed"));
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "stalled: {completed} of {} tasks completed, none for {}s",
                plan.tasks,
                STALL.as_secs()
            );
        }
        wakeups.wait(Duration::from_millis(200)).await;
    }
    let seconds = start.elapsed().as_secs_f64();
    if let (Some(f), false) = (plan.freeze_host, thawed) {
        // The run ended while the host was still cut off: let it see the end too.
        signal(&hosts[f].child, libc::SIGCONT)?;
    }

    // Each live host reports what it completed and every message it sent, then exits.
    let mut reports = Vec::new();
    for (h, host) in hosts.iter_mut().enumerate() {
        if host.killed {
            let _ = host.child.wait();
            continue;
        }
        let mut line = String::new();
        host.out.read_line(&mut line)?;
        let status = host.child.wait()?;
        if !status.success() {
            bail!("host {h} failed: {status}");
        }
        reports.push(
            serde_json::from_str::<Value>(&line)
                .with_context(|| format!("host {h}'s report {line:?}"))?,
        );
    }
    while read_inbox(&store, &lead, &mut done_messages, &mut inbox_ids).await? {}
    let tasks = store.tasks().await?;
    judge(plan, seconds, &tasks, &done_messages, &inbox_ids, &reports)
}

fn judge(
    plan: &Plan,
    seconds: f64,
    tasks: &[crew_store::Task],
    done_messages: &HashMap<String, Vec<String>>,
    inbox_ids: &HashSet<String>,
    reports: &[Value],
) -> anyhow::Result<Value> {
    let killed_prefix = plan.kill_host.map(|k| format!("h{k}w"));
    let by_killed = |owner: Option<&AgentName>| {
        killed_prefix
            .as_deref()
            .is_some_and(|p| owner.is_some_and(|o| o.as_str().starts_with(p)))
    };
    let mut doubled = 0;
    let mut unannounced = 0;
    let mut wrong_sender = 0;
    for task in tasks {
        let said = done_messages
            .get(&task.id.to_string())
            .map_or(&[][..], Vec::as_slice);
        match said.len() {
            0 if by_killed(task.owner.as_ref()) => unannounced += 1,
            0 => {}
            1 => {}
            _ => doubled += 1,
        }
        // The one who said it is the one the store has as its owner.
        if let (Some(sender), Some(owner)) = (said.first(), task.owner.as_ref())
            && sender != owner.as_str()
        {
            wrong_sender += 1;
        }
    }
    let completed = tasks
        .iter()
        .filter(|t| t.status == Status::Completed)
        .count();
    let silent = tasks
        .iter()
        .filter(|t| done_messages.get(&t.id.to_string()).is_none() && !by_killed(t.owner.as_ref()))
        .count();
    let sent: Vec<&str> = reports
        .iter()
        .flat_map(|r| r["sent"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    let lost = sent.iter().filter(|id| !inbox_ids.contains(**id)).count();
    let takeovers = tasks
        .iter()
        .filter(|t| t.notes.iter().any(|n| n.contains("lease of")))
        .count();
    let stale: u64 = reports.iter().filter_map(|r| r["stale"].as_u64()).sum();
    let mut per_host: BTreeMap<String, usize> = BTreeMap::new();
    for task in tasks {
        if let Some(owner) = &task.owner {
            let host = owner.as_str().split('w').next().unwrap_or_default();
            *per_host.entry(host.to_string()).or_default() += 1;
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = completed as f64 / seconds.max(1e-9);
    Ok(json!({
        "store": "postgres",
        "hosts": plan.hosts,
        "workers": plan.hosts * plan.workers,
        "tasks": plan.tasks,
        "completed": completed,
        "seconds": crate::stats::round3(seconds),
        "tasks_per_second": crate::stats::round3(rate),
        "double_completions": doubled + wrong_sender,
        "messages_sent": sent.len(),
        "lost_messages": lost + silent,
        "killed_mid_announcement": unannounced,
        "lease_takeovers": takeovers,
        "stale_completions_refused": stale,
        "completed_per_host": per_host,
        "killed_host": plan.kill_host,
        "frozen_host": plan.freeze_host,
    }))
}

/// Reads one batch of the lead's unread messages (at most 1,000), moving its cursor past them;
/// whether there were any. One batch per look: while the hosts append faster than a batch is
/// read, reading until none are left would not return before the run ends, and the chaos is
/// decided between looks.
async fn read_inbox(
    store: &PgStore,
    lead: &AgentName,
    done: &mut HashMap<String, Vec<String>>,
    ids: &mut HashSet<String>,
) -> anyhow::Result<bool> {
    let batch = store.unread(lead, lead, 1000).await?;
    let Some((last, _)) = batch.last() else {
        return Ok(false);
    };
    store.mark_read(lead, lead, *last).await?;
    for (_, m) in batch {
        if !ids.insert(m.id.clone()) {
            bail!("message {} read twice through the lead's cursor", m.id);
        }
        if let Some(task) = m.extra.get("task").and_then(Value::as_str) {
            done.entry(task.to_string())
                .or_default()
                .push(m.from.to_string());
        }
    }
    Ok(true)
}

fn spawn_hosts(url: &str, plan: &Plan) -> anyhow::Result<Vec<Host>> {
    let exe = std::env::current_exe().context("locating crew-bench")?;
    let mut hosts = Vec::new();
    for h in 0..plan.hosts {
        let mut child = Command::new(&exe)
            .args(["pg-host", "--store", url, "--host", &h.to_string()])
            .args(["--workers", &plan.workers.to_string()])
            .args(["--lease-ms", &plan.lease_ms.to_string()])
            .args(["--work-ms", &plan.work_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting host {h}"))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let mut out = BufReader::new(stdout);
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim() != "ready" {
            bail!("host {h} did not get ready: {line:?}");
        }
        hosts.push(Host {
            child,
            out,
            killed: false,
        });
    }
    Ok(hosts)
}

fn signal(child: &Child, signal: libc::c_int) -> anyhow::Result<()> {
    let pid = libc::pid_t::try_from(child.id())?;
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    if unsafe { libc::kill(pid, signal) } != 0 {
        bail!(
            "signal {signal} to {pid}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

fn chaos(what: &str) {
    eprintln!("chaos: {what}");
}

/// One host: `workers` agents `h<host>w<k>` claiming from the store until every task is
/// completed; its heartbeat renews their leases. Prints a JSON report at the end.
pub fn host(
    url: &str,
    host: usize,
    workers: usize,
    lease_ms: u64,
    work_ms: u64,
) -> anyhow::Result<()> {
    let rt = runtime()?;
    let lease = Duration::from_millis(lease_ms);
    let store = PgStore::connect(url, workers.clamp(1, 8))?.with_lease(lease);
    let names: Vec<AgentName> = (0..workers)
        .map(|k| AgentName::parse(&format!("h{host}w{k}")))
        .collect::<Result<_, _>>()?;
    let mut wakeups = rt.block_on(async {
        store.tasks().await?;
        anyhow::Ok(Wakeups::listen(&store).await?)
    })?;
    crate::proc::ready_and_wait()?;
    let report = rt.block_on(async {
        let wake = Arc::new(Notify::new());
        let all_done = Arc::new(AtomicBool::new(false));
        let stale = Arc::new(AtomicUsize::new(0));
        // Wake-ups: one listener for the host, every idle worker woken by it.
        let forward = {
            let wake = wake.clone();
            tokio::spawn(async move {
                loop {
                    wakeups.wait(Duration::from_secs(1)).await;
                    wake.notify_waiters();
                }
            })
        };
        let heartbeat = {
            let (store, names, all_done) = (store.clone(), names.clone(), all_done.clone());
            tokio::spawn(async move {
                while !all_done.load(Ordering::Relaxed) {
                    for name in &names {
                        // A failure here is a missed beat; the next one tries again.
                        let _ = store.heartbeat(name, lease).await;
                    }
                    tokio::time::sleep(lease / 3).await;
                }
            })
        };
        let watcher = {
            let (store, all_done, wake) = (store.clone(), all_done.clone(), wake.clone());
            tokio::spawn(async move {
                loop {
                    if let Ok(tasks) = store.tasks().await
                        && tasks.iter().all(|t| t.status == Status::Completed)
                    {
                        all_done.store(true, Ordering::Relaxed);
                        wake.notify_waiters();
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
            })
        };
        let mut running = Vec::new();
        for name in names {
            let (store, wake, all_done, stale) =
                (store.clone(), wake.clone(), all_done.clone(), stale.clone());
            running.push(tokio::spawn(async move {
                work(&store, &name, &wake, &all_done, &stale, work_ms, lease).await
            }));
        }
        let mut completed = 0;
        let mut sent = Vec::new();
        for worker in running {
            let (n, ids) = worker.await??;
            completed += n;
            sent.extend(ids);
        }
        forward.abort();
        heartbeat.abort();
        watcher.abort();
        anyhow::Ok(json!({
            "host": host,
            "completed": completed,
            "stale": stale.load(Ordering::Relaxed),
            "sent": sent,
        }))
    })?;
    println!("{report}");
    Ok(())
}

/// One worker's life: claim, work, complete, tell the lead; idle until woken.
async fn work(
    store: &PgStore,
    name: &AgentName,
    wake: &Notify,
    all_done: &AtomicBool,
    stale: &AtomicUsize,
    work_ms: u64,
    lease: Duration,
) -> anyhow::Result<(usize, Vec<String>)> {
    let lead = AgentName::parse(LEAD)?;
    let who = Claimant { name, role: None };
    let (mut completed, mut sent) = (0, Vec::new());
    while !all_done.load(Ordering::Relaxed) {
        // Registered before the claim: a wake-up between the claim and the wait is kept.
        let woken = wake.notified();
        match store.claim_next(who, lease).await {
            Ok(task) => {
                tokio::time::sleep(Duration::from_millis(work_ms)).await;
                match store
                    .complete(task.id, name, Some(format!("done by {name}")))
                    .await
                {
                    Ok(_) => {
                        completed += 1;
                        let mut extra = serde_json::Map::new();
                        extra.insert("task".into(), json!(task.id.to_string()));
                        let message = store
                            .send(Draft {
                                kind: MessageKind::StatusUpdate,
                                text: Some(format!("{} done", task.id)),
                                extra,
                                ..Draft::new(name.clone(), lead.clone())
                            })
                            .await?;
                        sent.push(message.id);
                    }
                    // Its lease lapsed (the host was cut off) and another took the task.
                    Err(PgStoreError::Refused(
                        Refusal::NotOwner { .. } | Refusal::NotInProgress { .. },
                    )) => {
                        stale.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) if nothing_left(&e) => {
                // Lapsed leases send no notification: look again within a second anyway.
                let _ = tokio::time::timeout(Duration::from_secs(1), woken).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok((completed, sent))
}
