//! `crew --store postgres://… COMMAND`: the person's commands on a team kept
//! in PostgreSQL, from any machine that reaches the server: the tasks (every `crew task`
//! command, the same code as on files),
//! messages (send, inbox, requests, respond), each agent's standing (status) and what agents
//! remember (memory list, show), `down` (a shutdown request to every agent still running, on
//! any host) and the screen (`ui`). The team is the
//! one the person published (`crew store publish`), so no checkout is needed, except for
//! reviews (list, show, diff, merge, send-back, discard), which merge into the person's checkout
//! where they run (a teammate's commits fetched from the team's remote). The rest of the
//! commands still work on the files of a checkout only, and say so.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use crate::cli::args::{Command, InboxArgs, QueueCommand};
use crate::cli::exit::CliError;
use crate::cli::merge_queue::on_queue;
use crate::cli::messages::{draft_of, message_line, print_answer, print_requests, print_sent};
use crate::cli::output;
use crate::cli::project::Project;
use crate::cli::review::{Approvals, on_desk};
use crate::cli::store::{print_agents, reach_current};
use crate::cli::tasks::on_store;
use crew_config::TeamConfig;
use crew_store_pg::{PgStore, Wakeups};
use crew_team::merge_queue::{QueueFiles, QueueRunner};
use crew_team::review::Desk;
use crew_team::run::link::TeamLink;

pub fn run(url: &str, command: Command, start: &Path) -> anyhow::Result<()> {
    if let Command::Ui(args) = command {
        return screen(url, args, start);
    }
    if let Command::Queue(QueueCommand::Run) = command {
        return run_queue(url, start);
    }
    if let Command::Mcp(args) = &command {
        return crate::cli::mcp::on_store(url, &args.name, start);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the store client")?;
    runtime.block_on(async {
        let store = reach_current(url).await?;
        let config = published(&store, url).await?;
        on(&store, &config, command, start).await
    })
}

/// `crew --store URL ui`: the screen on the team in the store, its reviews merging into the
/// checkout it runs in (if any). The store's connections run on a runtime of their own, which
/// the screen's threads share.
pub(crate) fn screen(
    url: &str,
    args: crate::cli::args::UiArgs,
    start: &Path,
) -> anyhow::Result<()> {
    let (runtime, store, _) = reach_team(url)?;
    let shown = store.shown_url();
    let checkout = match Project::find(start) {
        Ok(project) => Some(crew_tui::StoreCheckout {
            root: project.workspace.repository_root(),
            queue: QueueFiles::on_store(&project.workspace.crew_dir())?,
        }),
        Err(_) => None,
    };
    crew_tui::run_on_store(
        runtime.handle(),
        store,
        shown,
        checkout,
        crew_tui::Options {
            theme: args.theme,
            keymap: args.keymap,
            attached: None,
        },
    )
}

/// Said when a task is approved and no process runs the store's queue in this checkout.
const RUNS_THE_QUEUE: &str = "no merge queue runs in this checkout: `crew --store URL ui` or \
                              `crew --store URL queue run` here runs it";

/// The person's checkout `start` is in, where reviews and the merge queue land, and the
/// queue's files there; `command` for the error when this is not one.
fn checkout(start: &Path, command: &str) -> anyhow::Result<(std::path::PathBuf, QueueFiles)> {
    let project = Project::find(start).with_context(|| {
        format!("`crew --store URL {command}` merges into your checkout: run it there")
    })?;
    let files = QueueFiles::on_store(&project.workspace.crew_dir())?;
    Ok((project.workspace.repository_root(), files))
}

/// `crew --store URL queue run`: the store team's merge queue, run in this checkout until
/// Ctrl-C or SIGTERM, saying what it does. (The screen in the checkout runs it as well; only
/// one process at a time does.)
fn run_queue(url: &str, start: &Path) -> anyhow::Result<()> {
    let (runtime, store, config) = reach_team(url)?;
    let (root, files) = checkout(start, "queue run")?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::cli::run_team::signal_stop(stop.clone())?;
    let link = TeamLink::postgres(store, runtime.handle().clone());
    let runner = QueueRunner::start_on(link, root, files, std::sync::Arc::new(config));
    println!("merge queue runs here (Ctrl-C stops it)");
    let mut last = String::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let ended = runner.ended();
        for line in runner.said() {
            last = crate::cli::output::one_line(&line).into_owned();
            if !ended {
                println!("{last}");
            }
        }
        if ended {
            // It said why as its last word: another process runs it, say.
            return Err(CliError::Refused(last).into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(runner);
    println!("merge queue stopped");
    Ok(())
}

/// The store at `url` and the team published there, with the runtime that drives it
/// (multi-threaded: its threads drive the connections while the worker's own threads wait).
pub(crate) fn reach_team(
    url: &str,
) -> anyhow::Result<(tokio::runtime::Runtime, PgStore, TeamConfig)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the store client")?;
    let (store, config) = runtime.block_on(async {
        let store = reach_current(url).await?;
        let config = published(&store, url).await?;
        anyhow::Ok((store, config))
    })?;
    Ok((runtime, store, config))
}

/// The team as the person published it.
pub(crate) async fn published(store: &PgStore, url: &str) -> anyhow::Result<TeamConfig> {
    let team = store.team().await?.ok_or_else(|| {
        CliError::Usage(format!(
            "no team is published in the store: run `crew store publish {url}` in your repository first"
        ))
    })?;
    let path = Path::new("crew.toml (as published in the store)");
    Ok(TeamConfig::parse(path, &team.toml)?)
}

async fn on(
    store: &PgStore,
    config: &TeamConfig,
    command: Command,
    start: &Path,
) -> anyhow::Result<()> {
    let timeout = config.request_timeout();
    match command {
        Command::Task(cmd) => on_store(store, config, cmd).await,
        Command::Send(args) => {
            let message = store.send(draft_of(&args)).await?;
            print_sent(&message, &args)
        }
        Command::Inbox(args) => inbox(store, config, args).await,
        Command::Memory(cmd) => crate::cli::memory::on_store(store, config, cmd).await,
        // Reviews merge into a checkout: the person's, where this runs.
        Command::Review(cmd) => {
            let (root, files) = checkout(start, "review")?;
            let queue = Approvals {
                files,
                runs_it: RUNS_THE_QUEUE,
            };
            on_desk(&Desk::new(store.clone(), root, config), &queue, cmd).await
        }
        Command::Queue(cmd) => {
            let (root, files) = checkout(start, "queue")?;
            let desk = Desk::new(store.clone(), root, config);
            on_queue(&desk, &files, cmd, "crew --store URL").await
        }
        Command::Requests(args) => print_requests(store.requests(timeout).await?, &args),
        Command::Respond(args) => {
            let approve = matches!(args.answer, crate::cli::args::Answer::Approve);
            let answer = store
                .respond(
                    &args.request_id,
                    &args.who,
                    approve,
                    args.note.clone(),
                    timeout,
                )
                .await?;
            print_answer(&answer, &args)
        }
        Command::Status { json } => {
            let agents = store.agents_seen().await?;
            if json {
                let agents: Vec<_> = agents
                    .iter()
                    .map(|a| {
                        json!({
                            "name": a.name,
                            "status": a.status,
                            "heard_secs": a.heard_secs,
                            "leases": a.leases.iter().map(|l| json!({
                                "task": l.task,
                                "secs_left": l.secs_left,
                            })).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                return output::json(&json!({ "agents": agents }));
            }
            print_agents(&agents);
            Ok(())
        }
        Command::Down {
            timeout,
            json: false,
        } => {
            crate::cli::up_on_store::down(store, config, Duration::from_secs(timeout)).await
        }
        Command::Down { json: true, .. } => Err(CliError::Usage(
            "`crew --store URL down --json`: not on a team in the store yet; without --json it says who was asked and who stopped".into(),
        )
        .into()),
        other => Err(CliError::Usage(format!(
            "`crew {}` works on a checkout's files only for now; without --store it runs on \
             the team in this folder",
            command_name(&other)
        ))
        .into()),
    }
}

async fn inbox(store: &PgStore, config: &TeamConfig, args: InboxArgs) -> anyhow::Result<()> {
    config
        .roster()
        .check("inbox owner", &args.name)
        .map_err(crew_store::StoreError::from)?;
    let name = &args.name;
    // LISTEN before the first read: nothing appended between the two is missed.
    let mut wakeups = if args.follow {
        Some(Wakeups::listen(store).await?)
    } else {
        None
    };
    let first = if args.all {
        store.inbox(name).await?
    } else {
        read_unread(store, &args).await?
    };
    if args.json && !args.follow {
        return output::json(&json!({ "inbox": name, "messages": first }));
    }
    print_messages(&first, args.json)?;
    let Some(wakeups) = wakeups.as_mut() else {
        return Ok(());
    };
    let mut seen: std::collections::HashSet<String> = first.into_iter().map(|m| m.id).collect();
    loop {
        // Woken by NOTIFY; the timeout is only a safety net.
        wakeups.wait(Duration::from_secs(5)).await;
        let fresh: Vec<_> = read_unread(store, &args)
            .await?
            .into_iter()
            .filter(|m| seen.insert(m.id.clone()))
            .collect();
        print_messages(&fresh, args.json)?;
    }
}

/// Every unread message of the inbox, the owner's cursor moved past them unless `--peek`.
async fn read_unread(
    store: &PgStore,
    args: &InboxArgs,
) -> anyhow::Result<Vec<crew_store::Message>> {
    let unread = store.unread(&args.name, &args.name, i64::MAX).await?;
    if !args.peek
        && let Some((last, _)) = unread.last()
    {
        store.mark_read(&args.name, &args.name, *last).await?;
    }
    Ok(unread.into_iter().map(|(_, m)| m).collect())
}

fn print_messages(messages: &[crew_store::Message], json: bool) -> anyhow::Result<()> {
    for m in messages {
        if json {
            println!("{}", serde_json::to_string(m)?);
        } else {
            println!("{}", message_line(m));
        }
    }
    Ok(())
}

/// How the person typed `command` (its first word), for saying it does not work on a store
/// yet.
fn command_name(command: &Command) -> String {
    format!("{command:?}")
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_lowercase()
}

/// Whether `command` works on the team's store, so `--store` changes where it runs; the
/// commands that touch no team state (init, demo, replay, skills, store) run as ever.
pub fn touches_the_team(command: &Command) -> bool {
    !matches!(
        command,
        Command::Init(_)
            | Command::Demo(_)
            | Command::Replay { .. }
            | Command::Skills(_)
            | Command::Store(_)
            | Command::SandboxExec(_)
    )
}
