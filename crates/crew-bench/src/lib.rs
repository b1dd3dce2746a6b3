//! crew-bench: measures crew's hot paths with real OS processes and prints JSON.
//! Numbers go in reports, never in test assertions.

mod agent_loop;
mod attach;
mod bash_rules;
mod claims;
mod git;
mod hosts;
mod interrupt;
mod mailbox;
mod memory;
mod pg;
mod proc;
mod queue;
mod render;
mod sandbox;
mod stats;
mod subagents;
mod team;
mod wake;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use crew_store::AgentName;

#[derive(Parser)]
#[command(
    name = "crew-bench",
    about = "Benchmarks for crew's store, screen, team and git work"
)]
struct Bench {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// N processes race to claim all M tasks.
    Claims {
        #[arg(long, default_value_t = 8)]
        procs: usize,
        #[arg(long, default_value_t = 5000)]
        tasks: usize,
        /// A PostgreSQL server (`postgres://user@host:port/db`) instead of the file store; the
        /// run uses a scratch database there.
        #[arg(long)]
        store: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// N processes append M messages in total to one inbox while a reader follows it.
    Mailbox {
        #[arg(long, default_value_t = 8)]
        procs: usize,
        #[arg(long, default_value_t = 20_000)]
        messages: usize,
        /// Messages per second from all processes together, evenly spaced; without it they
        /// append flat out (a burst: latency is then mostly queueing).
        #[arg(long)]
        rate: Option<u32>,
        /// A PostgreSQL server instead of the file store (flat out only: no `--rate`).
        #[arg(long, conflicts_with = "rate")]
        store: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Agent runtime overhead per turn (no model time) over a fixed-size history. With
    /// --resumed, each turn first resumes the conversation from its file (timed apart) and
    /// keeps it on disk as the product does.
    Loop {
        #[arg(long, default_value_t = 1000)]
        turns: usize,
        #[arg(long, default_value_t = 200)]
        history: usize,
        #[arg(long)]
        resumed: bool,
        #[arg(long)]
        json: bool,
    },
    /// Subagents: the share of a fork's and a fresh subagent's first prompt read from a
    /// simulated prompt cache, and a subagent's start latency.
    Subagents {
        #[arg(long, default_value_t = 50)]
        rounds: usize,
        /// Messages in the caller's history.
        #[arg(long, default_value_t = 200)]
        history: usize,
        #[arg(long)]
        json: bool,
    },
    /// Interrupt latency: a real worker in a `sleep` tool, interrupted through the store, until
    /// its status says IDLE (p50/p99 over N runs).
    Interrupt {
        #[arg(long, default_value_t = 50)]
        runs: usize,
        #[arg(long)]
        json: bool,
    },
    /// The screen on a big workspace: frame times, memory, change-to-frame latency.
    Render {
        #[arg(long, default_value_t = 16)]
        teammates: usize,
        #[arg(long, default_value_t = 10_000)]
        tasks: usize,
        #[arg(long, default_value_t = 100_000)]
        messages: usize,
        #[arg(long)]
        json: bool,
    },
    /// A team of real `crew worker` processes on trivial tasks: throughput, claim latency,
    /// idle CPU.
    Team {
        #[arg(long, default_value_t = 16)]
        teammates: usize,
        #[arg(long, default_value_t = 500)]
        tasks: usize,
        /// How long the idle workers' CPU is measured for.
        #[arg(long, default_value_t = 30)]
        idle_secs: u64,
        #[arg(long)]
        json: bool,
    },
    /// Idle `crew worker`s woken by one new task at a time: claimable → claimed latency
    /// (p50/p99/max over the rounds), then the idle workers' CPU.
    Wake {
        #[arg(long, default_value_t = 16)]
        teammates: usize,
        #[arg(long, default_value_t = 100)]
        rounds: usize,
        /// How long the idle workers' CPU is measured for.
        #[arg(long, default_value_t = 20)]
        idle_secs: u64,
        /// A PostgreSQL server instead of the file store: the waiters are idle store clients
        /// woken by NOTIFY (not `crew worker`s, which do not run on PostgreSQL yet).
        #[arg(long)]
        store: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// A teammate's worktree on a synthetic repository of N files with M changed: create, diff,
    /// commit + merge, discard; crew against the git CLI when it is installed.
    Git(git::GitBench),
    /// Deciding bash lines against permission rules: tree-sitter parse, walk, rule matching.
    Bash {
        #[arg(long, default_value_t = 1000)]
        rounds: usize,
        #[arg(long)]
        json: bool,
    },
    /// The sandbox's cost per command: bash `true` N times confined and N times not.
    Sandbox {
        #[arg(long, default_value_t = 100)]
        runs: usize,
        #[arg(long)]
        json: bool,
    },
    /// Long-term memory: the prompt's index of full scopes (rebuilt every model call) and a
    /// memory_write (which rewrites MEMORY.md).
    Memory {
        #[arg(long, default_value_t = 200)]
        memories: usize,
        #[arg(long, default_value_t = 2048)]
        body_bytes: usize,
        #[arg(long, default_value_t = 100)]
        rounds: usize,
        #[arg(long)]
        json: bool,
    },
    /// `crew attach claude`: Claude Code inbox versions deleted after each lifetime (ms),
    /// how many reach crew's log and how soon.
    Attach {
        #[arg(long, default_value_t = 200)]
        messages: usize,
        #[arg(long, value_delimiter = ',', default_value = "0,1,5,20")]
        lifetimes: Vec<u64>,
        #[arg(long)]
        json: bool,
    },
    /// The merge queue: test runs and wall time for N approved tasks with some bad ones,
    /// batched and bisected, against one test run per task.
    Queue(queue::QueueBench),
    /// Internal: one claiming process (waits for "go" on stdin).
    #[command(hide = true)]
    ClaimWorker {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        name: AgentName,
    },
    /// Internal: one appending process (waits for "go" on stdin).
    #[command(hide = true)]
    AppendWorker {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        name: AgentName,
        #[arg(long)]
        count: usize,
        /// Paced: one message every this many microseconds, starting after `--offset-us`.
        #[arg(long)]
        every_us: Option<u64>,
        #[arg(long, default_value_t = 0)]
        offset_us: u64,
    },
    /// Internal: one claiming process on PostgreSQL (waits for "go" on stdin).
    #[command(hide = true)]
    PgClaimWorker {
        #[arg(long)]
        store: String,
        #[arg(long)]
        name: AgentName,
    },
    /// Internal: one appending process on PostgreSQL (waits for "go" on stdin).
    #[command(hide = true)]
    PgAppendWorker {
        #[arg(long)]
        store: String,
        #[arg(long)]
        name: AgentName,
        #[arg(long)]
        count: usize,
    },
    /// A scripted team across several "host" processes on one PostgreSQL store, with chaos:
    /// SIGKILL a host mid-task, cut one off (SIGSTOP: no heartbeat) until its leases lapse.
    /// Checks every task completed once and no message lost.
    Hosts {
        #[arg(long)]
        store: String,
        #[arg(long, default_value_t = 4)]
        hosts: usize,
        /// Workers per host.
        #[arg(long, default_value_t = 16)]
        workers: usize,
        #[arg(long, default_value_t = 1000)]
        tasks: usize,
        /// How long a claim holds without its host's heartbeat.
        #[arg(long, default_value_t = 2000)]
        lease_ms: u64,
        /// How long each scripted task takes.
        #[arg(long, default_value_t = 5)]
        work_ms: u64,
        /// SIGKILL this host once a quarter of the tasks are completed.
        #[arg(long)]
        kill_host: Option<usize>,
        /// SIGSTOP this host at a third of the tasks, SIGCONT it after twice the lease.
        #[arg(long)]
        freeze_host: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Internal: one host of `hosts`.
    #[command(hide = true)]
    PgHost {
        #[arg(long)]
        store: String,
        #[arg(long)]
        host: usize,
        #[arg(long)]
        workers: usize,
        #[arg(long)]
        lease_ms: u64,
        #[arg(long)]
        work_ms: u64,
    },
    /// Internal: one idle waiter on PostgreSQL, until a message tells it to stop.
    #[command(hide = true)]
    PgWakeWorker {
        #[arg(long)]
        store: String,
        #[arg(long)]
        name: AgentName,
    },
    /// Internal: writes tasks and messages in a loop until killed (crash tests).
    #[command(hide = true)]
    Churn {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        name: AgentName,
    },
}

pub fn main() -> ExitCode {
    let bench = Bench::parse();
    let result = match bench.command {
        Command::Claims {
            procs,
            tasks,
            store: Some(url),
            json,
        } => pg::claims(&url, procs, tasks, json),
        Command::Claims {
            procs, tasks, json, ..
        } => claims::run(procs, tasks, json),
        Command::Mailbox {
            procs,
            messages,
            store: Some(url),
            json,
            ..
        } => pg::mailbox(&url, procs, messages, json),
        Command::Mailbox {
            procs,
            messages,
            rate,
            json,
            ..
        } => mailbox::run(procs, messages, rate, json),
        Command::Loop {
            turns,
            history,
            resumed,
            json,
        } => agent_loop::run(turns, history, resumed, json),
        Command::Interrupt { runs, json } => interrupt::run(runs, json),
        Command::Subagents {
            rounds,
            history,
            json,
        } => subagents::run(rounds, history, json),
        Command::Render {
            teammates,
            tasks,
            messages,
            json,
        } => render::run(teammates, tasks, messages, json),
        Command::Team {
            teammates,
            tasks,
            idle_secs,
            json,
        } => team::run(teammates, tasks, idle_secs, json),
        Command::Wake {
            teammates,
            rounds,
            store: Some(url),
            json,
            ..
        } => pg::wake(&url, teammates, rounds, json),
        Command::Wake {
            teammates,
            rounds,
            idle_secs,
            json,
            ..
        } => wake::run(teammates, rounds, idle_secs, json),
        Command::Git(bench) => git::run(bench),
        Command::Queue(bench) => queue::run(bench),
        Command::Bash { rounds, json } => bash_rules::run(rounds, json),
        Command::Sandbox { runs, json } => sandbox::run(runs, json),
        Command::Memory {
            memories,
            body_bytes,
            rounds,
            json,
        } => memory::run(memories, body_bytes, rounds, json),
        Command::Attach {
            messages,
            lifetimes,
            json,
        } => attach::run(messages, &lifetimes, json),
        Command::ClaimWorker { dir, name } => claims::worker(&dir, &name),
        Command::AppendWorker {
            dir,
            name,
            count,
            every_us,
            offset_us,
        } => mailbox::worker(&dir, &name, count, every_us, offset_us),
        Command::Churn { dir, name } => claims::churn(&dir, &name),
        Command::PgClaimWorker { store, name } => pg::claim_worker(&store, &name),
        Command::PgAppendWorker { store, name, count } => pg::append_worker(&store, &name, count),
        Command::PgWakeWorker { store, name } => pg::wake_worker(&store, &name),
        Command::Hosts {
            store,
            hosts,
            workers,
            tasks,
            lease_ms,
            work_ms,
            kill_host,
            freeze_host,
            json,
        } => hosts::run(
            &store,
            &hosts::Plan {
                hosts,
                workers,
                tasks,
                lease_ms,
                work_ms,
                kill_host,
                freeze_host,
            },
            json,
        ),
        Command::PgHost {
            store,
            host,
            workers,
            lease_ms,
            work_ms,
        } => hosts::host(&store, host, workers, lease_ms, work_ms),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crew-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
