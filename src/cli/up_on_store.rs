//! `crew --store URL up [--here NAMES] [--goal TEXT]` in the person's checkout: the team on a
//! PostgreSQL store in one command. It readies the store (schema, crew.toml published, a role
//! per agent), starts the lead and the teammates named `--here` as workers of this machine (each
//! logging in with its own role, detached, so the team outlives the screen), gives the lead the
//! goal, and opens the screen on the store, or with `--headless` tells the team's progress
//! while a policy stands in for the person. The other teammates join from their own hosts
//! (`crew worker --join`). `crew --store URL down` asks every agent still running to shut down.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use crate::cli::args::{UiArgs, UpArgs};
use crate::cli::exit::CliError;
use crate::cli::progress::{Progress, RunEnd, until_done};
use crate::cli::project::Project;
use crate::cli::store::{Say, reach_current, setup, to_stderr, to_stdout};
use crew_config::TeamConfig;
use crew_protocol::{AgentName, AgentState, USER};
use crew_store::requests::RequestState;
use crew_store::{BackendError, Draft, MessageKind};
use crew_store_pg::{AgentLogin, PgStore, Wakeups};
use crew_team::merge_queue::{QueueFiles, QueueRunner};
use crew_team::review::Desk;
use crew_team::run::headless::Happening;
use crew_team::run::link::TeamLink;
use crew_team::run::stand_in::StandIn;
use crew_team::run::supervisor::Supervisor;

pub fn up(url: &str, args: UpArgs, start: &Path) -> anyhow::Result<()> {
    let unsupported = [
        (args.daemon, "--daemon"),
        (args.dangerously_bypass, "--dangerously-bypass"),
    ];
    if let Some((_, flag)) = unsupported.iter().find(|(given, _)| *given) {
        return Err(CliError::Usage(format!(
            "{flag} is not for a team in the store yet: `crew --store URL up` opens the screen, \
             where you answer and review (or runs headless with --headless)"
        ))
        .into());
    }
    // What stands in for the person, or tells a program the progress, is for a run without
    // the screen: said, rather than ignored.
    let headless_only = [
        (args.json, "--json"),
        (args.approve.is_some(), "--approve"),
        (args.until_done, "--until-done"),
        (
            !matches!(args.merge, crate::cli::args::MergeArg::Manual),
            "--merge",
        ),
    ];
    if !args.headless
        && let Some((_, flag)) = headless_only.iter().find(|(given, _)| *given)
    {
        return Err(CliError::Usage(format!(
            "{flag} is for a run without the screen: give --headless too"
        ))
        .into());
    }
    let project = Project::find(start)?;
    crate::cli::preflight::team(
        &project.config,
        project.workspace.root(),
        args.goal.is_some(),
        args.simulator,
    )?;
    let lead = project.config.lead_name().clone();
    let mut here = vec![lead.clone()];
    for name in &args.here {
        if project.config.agent(name).is_none() {
            return Err(CliError::Usage(format!(
                "--here {name}: no agent of that name in {} (the team: {})",
                project
                    .workspace
                    .root()
                    .join(crew_config::FILE_NAME)
                    .display(),
                crew_protocol::joined(project.roster.names(), ", ")
            ))
            .into());
        }
        if !here.contains(name) {
            here.push(name.clone());
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the store client")?;
    // Made before the workers start, so the lead's first turn is read from its transcript. With
    // --json, stdout carries the progress alone: what readying the store says goes to stderr.
    let mut progress = Progress::new(args.json)
        .with_agents(&project.workspace, &lead)
        .lead_elsewhere();
    let say: Say = if args.json { to_stderr } else { to_stdout };
    let (starting, shown) = runtime.block_on(async {
        setup(url, start, say).await?;
        let store = reach_current(url).await?;
        let running = running(&store, project.config.worker.lease()).await?;
        let roles: BTreeMap<AgentName, String> = store
            .agent_roles()
            .await?
            .into_iter()
            .map(|r| (r.agent, r.role))
            .collect();
        let mut starting = Vec::new();
        for name in &here {
            match running.get(name) {
                Some(host) => progress.say(
                    "agent",
                    json!({"event": "running", "name": name, "host": host}),
                    format!("{name}: already runs on {host}"),
                ),
                None => match roles.get(name) {
                    Some(role) => {
                        can_log_in(&store, name, role, &progress).await?;
                        starting.push((name.clone(), store.url_as(role)));
                    }
                    None => anyhow::bail!("{name} has no role in the store"),
                },
            }
        }
        if let Some(goal) = &args.goal {
            store
                .send(Draft {
                    // Worded as the file team's `up --goal` gives it.
                    text: Some(format!("Goal: {goal}")),
                    ..Draft::new(USER, lead.clone())
                })
                .await?;
        }
        anyhow::Ok((starting, store.shown_url()))
    })?;
    progress = progress.calling(format!("crew --store {shown}"));
    let exe = std::env::current_exe().context("finding the crew executable")?;
    let mut supervisor = Supervisor::for_team(project.workspace.clone(), &project.config, exe)
        .detached()
        .withholding(&["PGPASSWORD"]);
    for (name, role_url) in &starting {
        let pid = supervisor.start(name, &["--store".into(), role_url.clone()])?;
        progress.say(
            "agent",
            json!({"event": "started", "name": name, "pid": pid, "role": role_url}),
            format!("{name}: started here (pid {pid}) as {role_url}; log in .crew/logs/{name}.log"),
        );
    }
    settle(&mut supervisor, &starting, &project, url)?;
    supervisor.reap_in_background();
    if args.headless {
        return headless(url, &args, &project, progress);
    }
    crate::cli::on_store::screen(
        url,
        UiArgs {
            theme: "default".into(),
            keymap: "default".into(),
        },
        start,
    )?;
    println!(
        "the team runs on: `crew --store {shown} ui` to watch it again, `crew --store {shown} down` to stop it"
    );
    Ok(())
}

/// Makes sure `name`'s worker, started here, can log in with its `role`: on a server that asks
/// for a password the role lacks (or this machine's password file has not), crew makes one,
/// keeps it in the person's password file, where the workers of this machine read it, and
/// gives the role it. Never the person's own password: the worker is not handed it.
async fn can_log_in(
    store: &PgStore,
    name: &AgentName,
    role: &str,
    progress: &Progress,
) -> anyhow::Result<()> {
    if store.agent_login(role).await? == AgentLogin::Works {
        return Ok(());
    }
    let file = store.give_agent_a_password(role).await?;
    if let AgentLogin::NeedsPassword(why) = store.agent_login(role).await? {
        return Err(CliError::Refused(format!(
            "{name}: its role {role} still cannot log in with the password crew gave it and \
             keeps in {}: {why}",
            file.display()
        ))
        .into());
    }
    progress.say(
        "password",
        json!({"name": name, "role": role, "kept_in": file}),
        format!(
            "{name}: the server asks its role {role} for a password: crew made one and keeps it \
             in {} (yours alone to read), where this machine's workers read it; a teammate on \
             another host needs its own (`crew store add-agent URL NAME --password-env VAR`, and \
             its line in ~/.pgpass there)",
            file.display()
        ),
    );
    Ok(())
}

/// How long a worker has to be heard from before the screen opens.
const SETTLE: Duration = Duration::from_secs(20);

/// Waits until the store hears from each worker just started; one that stops at once (its role
/// cannot log in, say) is an error naming it with the end of its log, before the screen hides it.
fn settle(
    supervisor: &mut Supervisor,
    starting: &[(AgentName, String)],
    project: &Project,
    url: &str,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the store client")?;
    let store = runtime.block_on(reach_current(url))?;
    let deadline = std::time::Instant::now() + SETTLE;
    let mut waiting: Vec<&(AgentName, String)> = starting.iter().collect();
    while !waiting.is_empty() {
        let heard = runtime.block_on(running(&store, project.config.worker.lease()))?;
        waiting.retain(|(name, _)| !heard.contains_key(name));
        for (name, role_url) in &waiting {
            if let Some(status) = supervisor.exited(name) {
                let log = project
                    .workspace
                    .crew_dir()
                    .join("logs")
                    .join(format!("{name}.log"));
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let last: Vec<&str> = text.lines().rev().take(3).collect();
                let last: Vec<&str> = last.into_iter().rev().collect();
                return Err(CliError::Refused(format!(
                    "{name} stopped at once ({status}), logging in as {role_url}: {}\n(its log: {}; a worker logs in with its own role, its password from PGPASSFILE or ~/.pgpass here, never yours: give the role one as the store's owner, e.g. `\\password ROLE` in psql, and add its line there)",
                    crew_protocol::terminal_text::one_line(&last.join(" / ")),
                    log.display(),
                ))
                .into());
            }
        }
        if std::time::Instant::now() >= deadline {
            let names: Vec<&AgentName> = waiting.iter().map(|(n, _)| n).collect();
            eprintln!(
                "crew: not heard from yet: {} (still starting; their logs are in .crew/logs)",
                crew_protocol::joined(&names, ", ")
            );
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// The agents the store heard from within `lease`, not shut down, and on which host.
async fn running(store: &PgStore, lease: Duration) -> anyhow::Result<BTreeMap<AgentName, String>> {
    Ok(store
        .agents_seen()
        .await?
        .into_iter()
        .filter_map(|a| {
            let status = a.status?;
            let live = !matches!(status.state, AgentState::Shutdown | AgentState::Dead)
                && a.heard_secs.is_some_and(|s| s < lease.as_secs_f64());
            live.then(|| {
                let host = status.host.unwrap_or_else(|| "a host".into());
                (
                    a.name,
                    crew_protocol::terminal_text::one_line(&host).into_owned(),
                )
            })
        })
        .collect())
}

/// `crew --store URL down`: a `shutdown_request` from the person to every agent still running,
/// on any host, and their pending permission requests denied (an agent waiting on one would
/// see the request only once it is answered or expires); waits (at most `timeout`) for each to
/// shut down, and names those that did not.
pub async fn down(store: &PgStore, config: &TeamConfig, timeout: Duration) -> anyhow::Result<()> {
    stop_team(store, config, timeout, &mut |line| println!("{line}")).await
}

/// [`down`], each step told to `tell`.
async fn stop_team(
    store: &PgStore,
    config: &TeamConfig,
    timeout: Duration,
    tell: &mut dyn FnMut(String),
) -> anyhow::Result<()> {
    let lease = config.worker.lease();
    let running = running(store, lease).await?;
    if running.is_empty() {
        tell("no agent of the team is running".into());
        return Ok(());
    }
    let mut asked = BTreeMap::new();
    for (name, host) in &running {
        let request = ask_to_shut_down(store, name).await?;
        tell(format!("asked {name} on {host} to shut down ({request})"));
        asked.insert(name.clone(), request);
    }
    let request_timeout = config.request_timeout();
    for request in store.requests(request_timeout).await? {
        if request.state != RequestState::Pending
            || request.kind != MessageKind::PermissionRequest
            || !running.contains_key(&request.from)
        {
            continue;
        }
        let note = Some("the person stops the team".to_string());
        match store
            .respond(&request.request_id, &USER, false, note, request_timeout)
            .await
        {
            Ok(_) => tell(format!(
                "denied {}'s pending request {} (the team stops)",
                request.from, request.request_id
            )),
            // Answered or expired meanwhile.
            Err(e) if e.refusal().is_some() => {}
            Err(e) => return Err(e.into()),
        }
    }
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let still: Vec<AgentName> = self::running(store, lease)
            .await?
            .into_keys()
            .filter(|n| running.contains_key(n))
            .collect();
        if still.is_empty() {
            tell("every agent shut down".into());
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(CliError::Refused(format!(
                "still running after {} s: {} (each stops at its next turn's end; a host gone silent loses its tasks after its lease)",
                timeout.as_secs(),
                crew_protocol::joined(&still, ", ")
            ))
            .into());
        }
        // A teammate finishing a task refuses ("busy, ask again when it is done"): once it is
        // idle it is asked again, as the file team's stop does.
        let answers = store.requests(request_timeout).await?;
        for name in &still {
            let Some(request) = asked.get(name) else {
                continue;
            };
            let refused = answers
                .iter()
                .any(|r| &r.request_id == request && r.state == RequestState::Rejected);
            let idle = store
                .agent_status(name)
                .await?
                .is_some_and(|s| s.state == AgentState::Idle);
            if refused && idle {
                let again = ask_to_shut_down(store, name).await?;
                tell(format!("asked {name} again, now that it is idle ({again})"));
                asked.insert(name.clone(), again);
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A shutdown request from the person to `name`; its request id.
async fn ask_to_shut_down(
    store: &PgStore,
    name: &AgentName,
) -> anyhow::Result<crew_store::RequestId> {
    let asked = store
        .send(Draft {
            kind: MessageKind::ShutdownRequest,
            text: Some("the person stops the team".into()),
            request: true,
            ..Draft::new(USER, name.clone())
        })
        .await?;
    Ok(asked.request_id.unwrap_or_default())
}

/// `crew --store URL up --headless`: the team's progress told here (lines, or JSON with
/// `--json`) until Ctrl-C or, with `--until-done`, every task ended (or the lead gave up);
/// permission requests answered by `--approve`, reviews taken by `--merge`, the merge queue
/// run in this checkout; then every agent, on any host, is asked to shut down.
fn headless(
    url: &str,
    args: &UpArgs,
    project: &Project,
    mut progress: Progress,
) -> anyhow::Result<()> {
    let (runtime, store, config) = crate::cli::on_store::reach_team(url)?;
    let config = Arc::new(config);
    let root = project.workspace.repository_root();
    let files = QueueFiles::on_store(&project.workspace.crew_dir())?;
    let (policy, merge) = crate::cli::run_team::policies(args);
    let mut stand_in = StandIn::new(policy, merge);
    let queue = QueueRunner::start_on(
        TeamLink::postgres(store.clone(), runtime.handle().clone()),
        root.clone(),
        files.clone(),
        config.clone(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    crate::cli::run_team::signal_stop(stop.clone())?;
    let timeout = config.request_timeout();
    let look = |store: &PgStore| {
        runtime.block_on(async {
            let tasks = store.tasks().await?;
            let requests = store.requests(timeout).await?;
            anyhow::Ok((tasks, requests))
        })
    };
    // LISTEN before the first look: nothing that happens between the two is missed.
    let mut wakeups = runtime.block_on(Wakeups::listen(&store))?;
    let mut unfinished = None;
    while !stop.load(Ordering::Relaxed) {
        let desk = Desk::new(store.clone(), root.clone(), &config);
        let mut happened = progress.agents();
        happened.extend(runtime.block_on(stand_in.act(&store, &desk, &files.queue(), timeout))?);
        happened.extend(
            queue
                .said()
                .into_iter()
                .map(|text| Happening::Queue { text }),
        );
        progress.happenings(&happened);
        let (tasks, requests) = look(&store)?;
        progress.look(&tasks, &requests);
        if args.until_done
            && let Some(end) = until_done(&happened, &tasks)
        {
            unfinished = match end {
                RunEnd::GaveUp(why) => Some(why),
                RunEnd::Done(failed) => failed,
            };
            break;
        }
        runtime.block_on(wakeups.wait(Duration::from_millis(500)));
    }
    drop(queue);
    let (tasks, requests) = look(&store)?;
    progress.look(&tasks, &requests);
    let stopped = runtime.block_on(stop_team(&store, &config, STOP_GRACE, &mut |line| {
        progress.say("stopping", json!({ "text": line }), line.clone())
    }));
    if let Err(e) = stopped {
        eprintln!("crew: {e}");
    }
    progress.summary(&tasks);
    match unfinished {
        Some(why) => Err(CliError::Unfinished(why).into()),
        None => Ok(()),
    }
}

/// How long a headless run's end waits for the agents to shut down.
const STOP_GRACE: Duration = Duration::from_secs(15);
