//! One run of the team's `test_command` on the queue's scratch tree, in crew's sandbox as any
//! agent command: it may write only the scratch tree and a private temporary folder, with no
//! network. Its output streams to a log the screen shows live; a base that moves during the
//! run ends it at once, since its result could no longer land.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crew_config::TeamConfig;
use crew_sandbox::SandboxPlan;
use crew_tools::process::{ProcessEnd, ProcessSpec, run_process_streaming};
use crew_tools::scrub_env;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TestEnd {
    Passed,
    Failed,
    /// The base branch moved: the run was ended.
    BaseMoved,
    /// crew is stopping.
    Stopped,
    /// The command could not run; why.
    NotRun(String),
}

#[derive(Debug, Clone)]
pub(crate) struct TestRun {
    pub(crate) end: TestEnd,
    /// The end of the output (both streams, as they came).
    pub(crate) output: String,
    pub(crate) millis: u64,
}

/// Bytes of output kept in the log; the rest is counted and dropped.
const OUTPUT_CAP: usize = 1 << 20;
/// Characters of output kept for a note.
const TAIL_CHARS: usize = 3000;
/// How often the base is looked at during a run.
const BASE_POLL: Duration = Duration::from_millis(300);

/// Runs `test_command` in `dir`, writing its output to `log`; `base_moved` is asked during the
/// run whether the base left the commit the tree was built on.
pub(crate) fn run_tests(
    runtime: &Runtime,
    config: &TeamConfig,
    dir: &Path,
    log: &Path,
    base_moved: impl Fn() -> bool,
    stop: &CancellationToken,
) -> TestRun {
    let started = Instant::now();
    let not_run = |why: String| TestRun {
        end: TestEnd::NotRun(why),
        output: String::new(),
        millis: 0,
    };
    let Some(command) = config.team.test_command.as_deref() else {
        return TestRun {
            end: TestEnd::Passed,
            output: "no test_command in crew.toml: merged without running tests".into(),
            millis: 0,
        };
    };
    // The team's sandbox as its agents' commands get it: the tests are an agent's code, so
    // `[limits]` hold them too (a fork bomb in a branch must not take the person's machine),
    // and what `readable_secrets` lets through is let through here as well.
    let sandbox = config.sandbox(false, true);
    if let SandboxPlan::Unavailable(missing) = sandbox.plan() {
        return not_run(format!(
            "the sandbox is unavailable ({missing}), and the queue runs the tests only confined \
             unless crew.toml says sandbox = \"off\""
        ));
    }
    let args = vec!["-c".to_string(), command.to_string()];
    let prepared = match sandbox.prepare(dir, "/bin/sh", args, scrub_env(std::env::vars())) {
        Ok(prepared) => prepared,
        Err(e) => return not_run(format!("the sandbox's temporary folder: {e}")),
    };
    let file = match std::fs::File::create(log) {
        Ok(file) => Arc::new(Mutex::new(file)),
        Err(e) => return not_run(format!("{}: {e}", log.display())),
    };
    let spec = ProcessSpec {
        program: prepared.program.clone(),
        args: prepared.args.clone(),
        cwd: dir.to_path_buf(),
        env: Some(prepared.env.clone()),
        stdin: Vec::new(),
        timeout: Duration::from_secs(config.merge_queue.timeout_secs),
        output_cap: OUTPUT_CAP,
    };
    let sink = {
        let file = Arc::clone(&file);
        Arc::new(move |bytes: &[u8]| {
            let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
            // A log that cannot be written loses only what the screen shows live.
            let _ = file.write_all(bytes);
        })
    };
    let ran = runtime.block_on(async {
        let watch = async {
            loop {
                tokio::time::sleep(BASE_POLL).await;
                if base_moved() {
                    return;
                }
            }
        };
        // Dropping the run's future kills its whole process group.
        tokio::select! {
            ran = run_process_streaming(spec, stop, sink) => Some(ran),
            () = watch => None,
        }
    });
    drop(prepared);
    let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let output = tail(&std::fs::read_to_string(log).unwrap_or_default());
    let end = match ran {
        None => TestEnd::BaseMoved,
        Some(Err(e)) => return not_run(format!("cannot start `{command}`: {e}")),
        Some(Ok(result)) => match result.end {
            ProcessEnd::Exited(status) if status.success() => TestEnd::Passed,
            ProcessEnd::Exited(_) => TestEnd::Failed,
            ProcessEnd::TimedOut => {
                let note = format!(
                    "\n[timed out after {} s ([merge_queue] timeout_secs)]",
                    config.merge_queue.timeout_secs
                );
                return TestRun {
                    end: TestEnd::Failed,
                    output: format!("{output}{note}"),
                    millis,
                };
            }
            ProcessEnd::Cancelled => TestEnd::Stopped,
        },
    };
    TestRun {
        end,
        output,
        millis,
    }
}

/// The last [`TAIL_CHARS`] characters of `text`, trimmed.
fn tail(text: &str) -> String {
    let text = text.trim();
    let skip = text.chars().count().saturating_sub(TAIL_CHARS);
    if skip == 0 {
        return text.to_string();
    }
    let rest: String = text.chars().skip(skip).collect();
    format!("…{rest}")
}
