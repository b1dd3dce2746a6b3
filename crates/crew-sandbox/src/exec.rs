//! `crew sandbox-exec`: the hidden command that confines itself and runs an agent's command
//! (see this crate's root). It runs before anything else in `main` (no logging, no threads):
//! namespaces and `fork` need a single-threaded process.

use crate::confine::{self, Finished, Run};
use crate::{Readiness, SandboxPolicy};

/// Exit code when the command could not be confined (it never ran).
const NOT_CONFINED: u8 = 126;
/// Exit code when the confined command could not be started.
const NOT_STARTED: u8 = 127;

/// How `crew sandbox-exec` ended, for the CLI to print and exit with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub code: u8,
    /// The probe's answer, as JSON.
    pub stdout: Option<String>,
    /// Why nothing ran.
    pub stderr: Option<String>,
}

impl Outcome {
    fn exit(code: u8) -> Self {
        Outcome {
            code,
            stdout: None,
            stderr: None,
        }
    }

    fn says(code: u8, stdout: String) -> Self {
        Outcome {
            stdout: Some(stdout),
            ..Outcome::exit(code)
        }
    }

    fn fails(code: u8, why: String) -> Self {
        Outcome {
            stderr: Some(format!("crew sandbox-exec: {why}")),
            ..Outcome::exit(code)
        }
    }
}

/// Runs `command` confined by `policy` (JSON); with `probe`, sets everything up, runs nothing
/// and answers what the kernel offers as JSON.
pub fn run(policy: &str, probe: bool, command: &[String]) -> Outcome {
    let policy: SandboxPolicy = match serde_json::from_str(policy) {
        Ok(policy) => policy,
        Err(e) => return Outcome::fails(2, format!("--policy is not a sandbox policy: {e}")),
    };
    let run = if probe {
        Run::Probe
    } else {
        Run::Command(command)
    };
    match confine::confine_and_run(&policy, run) {
        Ok(Finished::Exit(code)) => Outcome::exit(u8::try_from(code).unwrap_or(NOT_CONFINED)),
        Ok(Finished::Probed) => {
            let ready = Readiness::Ready {
                landlock_abi: confine::landlock_abi(),
            };
            Outcome::says(0, serde_json::to_string(&ready).unwrap_or_default())
        }
        Ok(Finished::NotStarted(e)) => {
            let program = command.first().map_or("", String::as_str);
            Outcome::fails(NOT_STARTED, format!("cannot run {program}: {e}"))
        }
        Err(missing) if probe => {
            let missing = Readiness::Missing(missing);
            Outcome::says(
                NOT_CONFINED,
                serde_json::to_string(&missing).unwrap_or_default(),
            )
        }
        Err(e) => Outcome::fails(
            NOT_CONFINED,
            format!("the command did not run: cannot confine it: {e}"),
        ),
    }
}
