//! `crew sandbox-exec`: the hidden command that confines itself and runs an agent's command
//! (see this crate's root). It runs before anything else in `main` (no logging, no threads):
//! namespaces and `fork` need a single-threaded process.

use std::process::ExitCode;

use crate::confine::{self, Finished, Run};
use crate::{Readiness, SandboxPolicy};

/// Exit code when the command could not be confined (it never ran).
const NOT_CONFINED: u8 = 126;
/// Exit code when the confined command could not be started.
const NOT_STARTED: u8 = 127;

/// Runs `command` confined by `policy` (JSON); with `probe`, sets everything up, runs nothing
/// and prints what the kernel offers as JSON.
pub fn run(policy: &str, probe: bool, command: &[String]) -> ExitCode {
    let policy: SandboxPolicy = match serde_json::from_str(policy) {
        Ok(policy) => policy,
        Err(e) => {
            eprintln!("crew sandbox-exec: --policy is not a sandbox policy: {e}");
            return ExitCode::from(2);
        }
    };
    let run = if probe {
        Run::Probe
    } else {
        Run::Command(command)
    };
    match confine::confine_and_run(&policy, run) {
        Ok(Finished::Exit(code)) => ExitCode::from(u8::try_from(code).unwrap_or(NOT_CONFINED)),
        Ok(Finished::Probed) => {
            let ready = Readiness::Ready {
                landlock_abi: confine::landlock_abi(),
            };
            println!("{}", serde_json::to_string(&ready).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Ok(Finished::NotStarted(e)) => {
            let program = command.first().map_or("", String::as_str);
            eprintln!("crew sandbox-exec: cannot run {program}: {e}");
            ExitCode::from(NOT_STARTED)
        }
        Err(missing) if probe => {
            let missing = Readiness::Missing(missing);
            println!("{}", serde_json::to_string(&missing).unwrap_or_default());
            ExitCode::from(NOT_CONFINED)
        }
        Err(e) => {
            eprintln!("crew sandbox-exec: the command did not run: cannot confine it: {e}");
            ExitCode::from(NOT_CONFINED)
        }
    }
}
