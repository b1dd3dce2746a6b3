//! `crew worker --join postgres://AGENT@host/db --name NAME`: a teammate on another machine (and
//! `crew --store URL worker --name NAME`, one beside the person's checkout, the lead too). It
//! shares nothing with the person's checkout but the PostgreSQL store and the team's git remote:
//! the team is the crew.toml the person published to the store, the code a clone of `[team]
//! remote` made here, the task's commits pushed back there when the task enters review. The
//! worker's lifecycle is the same as in a checkout (claims, inbox, heartbeats, which renew its
//! leases), on the store.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;

use crate::cli::args::WorkerArgs;
use crate::cli::exit::CliError;
use crate::cli::on_store::reach_team;
use crate::cli::project::Project;
use crate::cli::run_team::print_exit;
use crate::cli::{logging, preflight};
use crew_config::TeamConfig;
use crew_git::TeamRemote;
use crew_store::AgentName;
use crew_store_pg::{AgentLogin, PgStore};
use crew_team::run::headless::settings_for;
use crew_team::run::link::TeamLink;
use crew_team::run::worker::Worker;
use crew_team::work::work_on_joined_host;

pub fn run(args: WorkerArgs, start: &Path) -> anyhow::Result<()> {
    let url = args.join.clone().unwrap_or_default();
    let name = worker_name(&args)?;
    let (runtime, store, config) = reach_team(&url)?;
    check_member(&config, &name, false)?;
    let base = config.team.base_branch.clone();
    let Some(remote) = config.team.remote.as_ref().map(|r| r.get_ref().clone()) else {
        return Err(CliError::Refused(
            "the team published in the store has no `[team] remote`: a joined host gets the code from there and pushes its tasks' commits back (set `remote = \"ssh://…\"` or an absolute path in crew.toml, then `crew store publish URL`)".into(),
        )
        .into());
    };
    if TeamRemote::is_relative_path(&remote) {
        return Err(CliError::Refused(format!(
            "the team's remote = {remote:?} is a path relative to the person's checkout, which another host cannot see: give an absolute path or an ssh URL in crew.toml, then `crew store publish URL`"
        ))
        .into());
    }
    let root = clone_dir(args.into.clone(), start, config.team.name.get_ref());
    let remote = TeamRemote::new(&remote, &root);
    if root.join(".git").exists() {
        remote
            .update_base(&root, &base)
            .with_context(|| format!("bringing {} up to date", root.display()))?;
    } else {
        if std::fs::read_dir(&root).is_ok_and(|mut d| d.next().is_some()) {
            return Err(CliError::Refused(format!(
                "{} holds files but is not a clone of the team's remote: give --into an empty or new folder",
                root.display()
            ))
            .into());
        }
        remote.clone_into(&root, &base)?;
        println!("cloned {} into {}", remote.url(), root.display());
    }
    work(
        &runtime,
        store,
        config,
        &name,
        root,
        args.dangerously_bypass,
    )
}

/// `crew --store URL worker --name NAME` in the person's checkout: a teammate, or the lead, on
/// the team kept in the store, working in this checkout (no clone).
pub fn in_checkout(url: &str, args: WorkerArgs, start: &Path) -> anyhow::Result<()> {
    if args.into.is_some() {
        return Err(CliError::Usage("--into goes with --join".into()).into());
    }
    let name = worker_name(&args)?;
    let root = Project::find(start)
        .context("`crew --store URL worker` works in your checkout (`--join URL` clones one)")?
        .workspace
        .repository_root();
    let (runtime, store, config) = reach_team(url)?;
    check_member(&config, &name, true)?;
    work(
        &runtime,
        store,
        config,
        &name,
        root,
        args.dangerously_bypass,
    )
}

fn worker_name(args: &WorkerArgs) -> anyhow::Result<AgentName> {
    if args.action.is_some() {
        return Err(CliError::Usage(
            "`crew worker restart` works on a checkout's files, not on a store".into(),
        )
        .into());
    }
    args.name.clone().ok_or_else(|| {
        CliError::Usage("give --name NAME: the teammate this host runs".into()).into()
    })
}

/// `name` must be on the team, and may be its lead only beside the person's checkout.
fn check_member(config: &TeamConfig, name: &AgentName, lead_ok: bool) -> anyhow::Result<()> {
    config
        .roster()
        .check("agent", name)
        .map_err(crew_store::StoreError::from)?;
    if !lead_ok && name == config.lead_name() {
        return Err(CliError::Refused(format!(
            "{name} is the team's lead: it runs beside the person's checkout (`crew --store URL worker --name {name}` there), not on a joined host"
        ))
        .into());
    }
    preflight::worker(config, name)?;
    Ok(())
}

/// Runs `name` on the store, in the repository at `root`, until it shuts down.
fn work(
    runtime: &tokio::runtime::Runtime,
    store: PgStore,
    config: TeamConfig,
    name: &AgentName,
    root: PathBuf,
    bypass: bool,
) -> anyhow::Result<()> {
    refuse_a_second_life(runtime, &store, name, config.worker.lease())?;
    cli_tools_can_log_in(runtime, &store, &config, name)?;
    let shown = store.shown_url();
    logging::start(&root);
    let config = Arc::new(config);
    let link = TeamLink::postgres(
        store.with_lease(config.worker.lease()),
        runtime.handle().clone(),
    );
    let mut work = work_on_joined_host(link.clone(), root.clone(), config.clone(), name, bypass)?;
    let worker = Worker::on(link, config.roster(), settings_for(&config, name))?;
    println!(
        "{name}: joined team {} through the store {shown}, working in {}",
        config.team.name.get_ref(),
        root.display()
    );
    let exit = worker.run(work.as_mut(), &AtomicBool::new(false))?;
    print_exit(name, exit);
    Ok(())
}

/// A Claude Code teammate's team tools are `crew --store ROLE_URL mcp`, a process its CLI
/// starts, which logs in with the agent's role from the password file: crew hands no password to
/// a third-party process (`PGPASSWORD` is sealed out of this one at start). Refused at start
/// when that login fails, rather than the CLI finding its tools gone.
fn cli_tools_can_log_in(
    runtime: &tokio::runtime::Runtime,
    store: &PgStore,
    config: &TeamConfig,
    name: &AgentName,
) -> anyhow::Result<()> {
    let provider = config.agent(name).map(|a| a.model.provider.as_str());
    if provider != Some("claude-code") {
        return Ok(());
    }
    let role = store.role();
    match runtime.block_on(store.agent_login(role))? {
        AgentLogin::Works => Ok(()),
        AgentLogin::NeedsPassword(why) => Err(CliError::Refused(format!(
            "{name}: a Claude Code teammate's team tools (`crew mcp`, started by the CLI) log in \
             with its role {role} from the password file on this host (PGPASSFILE, or \
             ~/.pgpass), never from PGPASSWORD, which crew hands to no CLI: add the role's line \
             there ({why})"
        ))
        .into()),
    }
}

/// Refuses to start `name` while the store heard from a live worker of that name within a lease
/// (on this host or another): two processes acting as one agent would work the same tasks.
fn refuse_a_second_life(
    runtime: &tokio::runtime::Runtime,
    store: &PgStore,
    name: &AgentName,
    lease: std::time::Duration,
) -> anyhow::Result<()> {
    let seen = runtime.block_on(store.agents_seen())?;
    let Some(agent) = seen.iter().find(|a| &a.name == name) else {
        return Ok(());
    };
    let (Some(status), Some(heard)) = (&agent.status, agent.heard_secs) else {
        return Ok(());
    };
    if status.state == crew_store::AgentState::Shutdown || heard >= lease.as_secs_f64() {
        return Ok(());
    }
    Err(CliError::Refused(format!(
        "{name} already runs on {} ({}, heard from {heard:.0} s ago): stop it first (`crew --store URL send --from user --to {name} --type shutdown_request --request …`), or, if that host is gone, start it again after its lease ({} s) lapses",
        status.host.as_deref().unwrap_or("an unnamed host"),
        status.state,
        lease.as_secs()
    ))
    .into())
}

/// `--into`, from where crew was started; else a folder named after the team there.
fn clone_dir(into: Option<PathBuf>, start: &Path, team: &str) -> PathBuf {
    match into {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => start.join(dir),
        None => start.join(team),
    }
}
