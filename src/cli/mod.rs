//! Clap commands, `--json` output and exit codes: the only code that prints.
//!
//! Exit codes, the same for every command: 0 done; 2 usage; 3 refused by the protocol
//! (with one line saying exactly why); 1 anything else.

mod agents_found;
mod args;
mod attach;
mod attach_claude;
mod cc_teammate;
mod claude_setup;
mod demo;
mod exit;
mod graph_text;
mod init;
mod join;
pub(crate) mod logging;
mod mcp;
mod memory;
mod merge_queue;
mod messages;
mod on_store;
mod output;
mod person;
mod preflight;
mod progress;
mod project;
mod review;
mod run_team;
mod skills;
mod store;
mod tasks;
mod team;
mod up_on_store;
mod worktrees;

use std::process::ExitCode;

use clap::Parser;

pub use args::Cli;
use args::Command;
pub use exit::exit_code;

/// Parses the command line, runs the command, prints errors to stderr and returns the exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // A bad id or name reads as it does wherever else crew refuses one.
            if let Some(invalid) = std::error::Error::source(&e)
                .and_then(|source| source.downcast_ref::<crew_protocol::InvalidName>())
            {
                eprintln!("crew: {invalid}");
                return ExitCode::from(2);
            }
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let cli = match cli.command {
        Some(Command::SandboxExec(args)) => {
            let ended = crew_sandbox::exec::run(&args.policy, args.probe, &args.command);
            if let Some(out) = ended.stdout {
                println!("{out}");
            }
            if let Some(why) = ended.stderr {
                eprintln!("{why}");
            }
            return ExitCode::from(ended.code);
        }
        // Before the keys are sealed: the teammate's `claude` needs them as Claude Code gave them.
        Some(Command::CcTeammate(args)) => {
            return cc_teammate::run(&args.args, args.merge_when_done);
        }
        command => Cli { command, ..cli },
    };
    // Before any thread starts: the keys leave the environment, and no process of ours can be
    // read through /proc (environ, mem) by a tool's process.
    crew_model::secret::seal_process();
    if only_prints(cli.command.as_ref()) {
        // `crew review diff X | head` ends quietly when the reader goes, as other commands
        // do (Rust ignores SIGPIPE, so println! would panic). The team's own processes keep
        // ignoring it: a CLI agent that dies must not take its worker with it.
        // SAFETY: setting a signal's disposition to the default has no preconditions.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Errors name files and quote text agents wrote.
            eprintln!("crew: {}", output::block(&exit::describe(&e)));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// Commands that print and end, starting no process of the team.
fn only_prints(command: Option<&Command>) -> bool {
    !matches!(
        command,
        None | Some(
            Command::Up(_)
                | Command::Worker(_)
                | Command::Demo(_)
                | Command::Ui(_)
                | Command::Mcp(_)
                | Command::Attach(_)
                | Command::SandboxExec(_)
                | Command::CcTeammate(_)
                | Command::CcTeammateHook(_)
        )
    )
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    let start = match &cli.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    person::check(cli.command.as_ref())?;
    if let Some(url) = &cli.store {
        let command = cli.command.unwrap_or(Command::Up(args::UpArgs::default()));
        // A worker on the store, in this checkout (`--join` clones one instead).
        if let Command::Worker(args) = command {
            return match args.join {
                Some(_) => join::run(args, &start),
                None => join::in_checkout(url, args, &start),
            };
        }
        if let Command::Up(args) = command {
            return up_on_store::up(url, args, &start);
        }
        if on_store::touches_the_team(&command) {
            return on_store::run(url, command, &start);
        }
        return run_command(command, &start);
    }
    let Some(command) = cli.command else {
        return run_team::up(project::Project::find(&start)?, args::UpArgs::default());
    };
    run_command(command, &start)
}

fn run_command(command: Command, start: &std::path::Path) -> anyhow::Result<()> {
    let start = start.to_path_buf();
    match command {
        Command::Init(args) => init::run(&start, args),
        Command::Task(cmd) => tasks::run(&project::Project::find(&start)?, cmd),
        Command::Send(args) => messages::send(&project::Project::find(&start)?, args),
        Command::Inbox(args) => messages::inbox(&project::Project::find(&start)?, args),
        Command::Requests(args) => messages::requests(&project::Project::find(&start)?, args),
        Command::Respond(args) => messages::respond(&project::Project::find(&start)?, args),
        Command::Status { json } => team::status(&project::Project::find(&start)?, json),
        Command::Down { timeout, json } => {
            team::down(&project::Project::find(&start)?, timeout, json)
        }
        Command::Interrupt { name } => messages::interrupt(&project::Project::find(&start)?, &name),
        Command::Worktree(cmd) => worktrees::run(&project::Project::find(&start)?, cmd),
        Command::Review(cmd) => review::run(&project::Project::find(&start)?, cmd),
        Command::Queue(cmd) => merge_queue::run(&project::Project::find(&start)?, cmd),
        Command::Up(args) => run_team::up(project::Project::find(&start)?, args),
        // A host that joins through the store has no checkout of the person's.
        Command::Worker(args) if args.join.is_some() => join::run(args, &start),
        Command::Worker(args) => run_team::worker(project::Project::find(&start)?, args),
        Command::Replay { file } => run_team::replay(&file),
        Command::Skills(cmd) => skills::run(&project::Project::find(&start)?, cmd),
        Command::Memory(cmd) => memory::run(&project::Project::find(&start)?, cmd),
        Command::Store(cmd) => store::run(cmd, &start),
        Command::Demo(args) => demo::run(args),
        Command::Mcp(args) => mcp::run(project::Project::find(&start)?, &args.name),
        Command::SandboxExec(args) => {
            // Handled in `main` before anything else runs; here only for completeness.
            anyhow::bail!(
                "sandbox-exec {:?} must be the whole command line",
                args.command
            )
        }
        Command::Ui(args) => run_team::ui(
            project::Project::find(&start)?,
            crew_tui::Options {
                theme: args.theme,
                keymap: args.keymap,
                attached: None,
            },
        ),
        Command::Attach(args::AttachCommand::Claude { team, ui }) => {
            attach_claude::claude(team.as_deref(), ui)
        }
        Command::Claude(args::ClaudeCommand::Setup { undo, merge }) => {
            claude_setup::run(&start, undo, merge)
        }
        Command::CcTeammateHook(args) => cc_teammate::hook(&args),
        Command::CcTeammate(args) => {
            // Handled in `main` before anything else runs; here only for completeness.
            anyhow::bail!("cc-teammate {:?} must be the whole command line", args.args)
        }
    }
}
