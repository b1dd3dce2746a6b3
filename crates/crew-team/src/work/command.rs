//! Any CLI agent as a teammate (`model = { provider = "command", cmd = [...] }`).
//!
//! Like Claude Code, the CLI runs its own loop and tools, so it is a [`Work`]: the worker around
//! it still claims, commits, sends to review and releases tasks. Each job (a task or a message)
//! is one run of `cmd` in the teammate's working folder, with the job's text in place of
//! `{prompt}` (on stdin when no argument holds it); its output streams into the transcript and
//! exit code 0 is success. The CLI's own flags decide what it may do: crew cannot see or answer
//! its permission prompts. The run is confined by crew's sandbox as a `bash` command is (where
//! the kernel cannot confine it, the person is asked first, as for `bash`), and the person's
//! interrupt or the job's wall time kills its whole process group.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::run::link::{LinkedStore, TeamLink};
use crew_agent::emitter::Emitter;
use crew_agent::{AgentEvent, EventSink, Limits};
use crew_config::TeamConfig;
use crew_model::Usage;
use crew_sandbox::SandboxPlan;
use crew_store::message::new_id;
use crew_store::{AgentName, Task, TaskId};
use crew_tools::process::{ProcessEnd, ProcessSpec, run_process_streaming};
use crew_tools::{PermissionAnswer, PermissionAsk, Sandbox, Subject, scrub_env};

use crate::run::status::StatusHandle;
use crate::work::cli_agent::{TurnEnding, begin, conclude, failed};
use crate::work::task_branch::TaskBranch;
use crate::work::{
    Job, JobOutcome, SetupError, Work, open_transcript, person_prompter, task_packet, working_dir,
};

/// What `cmd` holds where the job's text goes.
pub(crate) const PROMPT_PLACEHOLDER: &str = "{prompt}";

/// Output kept (and streamed to the transcript) per run, both streams together.
const OUTPUT_CAP: usize = 1024 * 1024;

/// How much of the end of the output becomes the task's result.
const SUMMARY_CHARS: usize = 2000;

pub(crate) struct CommandWork<S: LinkedStore> {
    link: TeamLink<S>,
    /// This host's repository: the person's checkout, or a joined host's clone.
    root: PathBuf,
    config: Arc<TeamConfig>,
    name: AgentName,
    role: String,
    writes: bool,
    cmd: Vec<String>,
    sandbox: Sandbox,
    timeout: Duration,
    runtime: tokio::runtime::Runtime,
    /// This worker's transcript, opened at its first job.
    emitter: Option<Arc<Emitter>>,
    turns: u64,
    /// A task whose run the person interrupted: their next message continues it.
    interrupted_task: Option<Task>,
}

impl<S: LinkedStore> CommandWork<S> {
    pub(crate) fn new(
        link: TeamLink<S>,
        root: PathBuf,
        config: Arc<TeamConfig>,
        name: &str,
    ) -> Result<Self, SetupError> {
        let entry = config
            .agent(name)
            .ok_or_else(|| SetupError::UnknownAgent(name.to_string()))?;
        let wall_secs = entry.budget.wall_secs.or(config.budget.wall_secs);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(SetupError::Runtime)?;
        Ok(Self {
            role: config.role_of(name).unwrap_or("lead").to_string(),
            writes: entry.writes,
            cmd: entry.model.cmd.clone(),
            sandbox: config.sandbox_for(entry),
            timeout: wall_secs.map_or(Limits::default().wall_time, Duration::from_secs),
            name: entry.name.get_ref().clone(),
            link,
            root,
            config,
            runtime,
            emitter: None,
            turns: 0,
            interrupted_task: None,
        })
    }

    fn branch(&self) -> TaskBranch<'_, S> {
        TaskBranch {
            link: &self.link,
            root: &self.root,
            config: &self.config,
            name: &self.name,
        }
    }

    fn emitter(&mut self, status: &StatusHandle) -> Result<Arc<Emitter>, String> {
        if let Some(emitter) = &self.emitter {
            return Ok(Arc::clone(emitter));
        }
        let emitter = open_transcript(&self.root, &self.name, status)?;
        self.emitter = Some(Arc::clone(&emitter));
        Ok(emitter)
    }

    /// One run of `cmd` for `input` in `workdir`, its output streamed to `emitter`; `Err` is why
    /// it failed.
    fn execute(
        &self,
        input: &str,
        workdir: &Path,
        emitter: &Arc<Emitter>,
        cancel: &CancellationToken,
    ) -> Result<TurnEnding, String> {
        let program = find_program(&self.cmd[0], &self.root)?;
        let has_placeholder = self.cmd.iter().any(|a| a.contains(PROMPT_PLACEHOLDER));
        let args: Vec<String> = self.cmd[1..]
            .iter()
            .map(|a| a.replace(PROMPT_PLACEHOLDER, input))
            .collect();
        // The CLI needs its own API key, which crew took out of its environment: it gets the
        // keys back (redacted from everything crew writes), the commands of crew's tools never.
        let mut env = scrub_env(std::env::vars());
        for (name, value) in crew_model::secret::sealed_vars() {
            crew_store::secrets::register(value);
            env.push((name.clone(), value.clone()));
        }
        let plan = self.sandbox.plan();
        // As for a bash command: where the sandbox cannot confine it, the person decides.
        if let SandboxPlan::Unavailable(missing) = &plan
            && let Err(reason) = self.ask_unconfined(workdir, emitter, &missing.to_string())
        {
            return Err(format!("not run unconfined: {reason}"));
        }
        let prepared =
            match self
                .sandbox
                .prepare(workdir, &program.display().to_string(), args, env)
            {
                Ok(prepared) => prepared,
                Err(e) => return Err(format!("the sandbox's temporary folder: {e}")),
            };
        emitter.emit(AgentEvent::ToolUse {
            id: new_id("cmd"),
            name: "command".into(),
            input: json!({"cmd": self.cmd, "cwd": workdir, "sandbox": sandbox_words(&plan)}),
            early: false,
        });
        emitter.emit(AgentEvent::MessageStart { call: 1 });
        let spec = ProcessSpec {
            program: prepared.program.clone(),
            args: prepared.args.clone(),
            cwd: workdir.to_path_buf(),
            env: Some(prepared.env.clone()),
            stdin: if has_placeholder {
                Vec::new()
            } else {
                input.as_bytes().to_vec()
            },
            timeout: self.timeout,
            output_cap: OUTPUT_CAP,
        };
        let events = Arc::clone(emitter);
        let sink = Arc::new(move |bytes: &[u8]| {
            events.emit(AgentEvent::MessageDelta {
                text: String::from_utf8_lossy(bytes).into_owned(),
            });
        });
        let result = self
            .runtime
            .block_on(run_process_streaming(spec, cancel, sink));
        drop(prepared);
        let result = match result {
            Ok(result) => result,
            Err(e) => return Err(format!("cannot start `{}`: {e}", self.cmd[0])),
        };
        let mut output = String::from_utf8_lossy(&result.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&result.stderr));
        let tail = tail_of(output.trim(), SUMMARY_CHARS);
        match result.end {
            ProcessEnd::Exited(status) if status.success() => Ok(one_run(tail, false)),
            ProcessEnd::Exited(status) => Err(format!(
                "`{}` failed ({status}){}",
                self.cmd[0],
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            )),
            ProcessEnd::TimedOut => Err(format!(
                "`{}` ran longer than {} s (budget.wall_secs); it and its children were killed",
                self.cmd[0],
                self.timeout.as_secs()
            )),
            ProcessEnd::Cancelled => Ok(one_run(String::new(), true)),
        }
    }
}

impl<S: LinkedStore> CommandWork<S> {
    /// Asks the person whether `cmd` may run without the sandbox, which lacks `missing`.
    fn ask_unconfined(
        &self,
        workdir: &Path,
        emitter: &Arc<Emitter>,
        missing: &str,
    ) -> Result<(), String> {
        let events = Arc::clone(emitter);
        let prompter = person_prompter(
            &self.link,
            &self.config,
            &self.name,
            EventSink::new(move |e| events.emit(e)),
        );
        let input = json!({"cmd": self.cmd});
        let reason = format!("the sandbox is unavailable ({missing}): it would run unconfined");
        emitter.emit(AgentEvent::PermissionAsked {
            tool: "command".into(),
            input: input.clone(),
            reason: reason.clone(),
        });
        let answer = self.runtime.block_on(prompter.ask(PermissionAsk {
            tool: "command".into(),
            input,
            subject: Subject::Command(self.cmd.join(" ")),
            reason,
            workspace: workdir.to_path_buf(),
            purpose: None,
        }));
        let verdict = match answer {
            PermissionAnswer::Allow | PermissionAnswer::AllowAlways(_) => Ok(()),
            PermissionAnswer::Deny(reason) => Err(reason),
        };
        emitter.emit(AgentEvent::PermissionAnswered {
            tool: "command".into(),
            allowed: verdict.is_ok(),
            detail: verdict.clone().err().unwrap_or_default(),
        });
        verdict
    }
}

/// A run that ended on its own (with `text`, the end of its output) or by the person's interrupt:
/// one turn, with no tokens or cost crew can count.
fn one_run(text: String, interrupted: bool) -> TurnEnding {
    TurnEnding {
        success: !interrupted,
        interrupted,
        text,
        turns: 1,
        usage: Usage::default(),
        cost_micros: None,
    }
}

/// The program to run: a path (relative to the repository) or a name found on `PATH`.
fn find_program(program: &str, repo_root: &Path) -> Result<PathBuf, String> {
    let missing = |why: &str| {
        format!(
            "cannot start `{program}`: {why} (install it, or give its path as the first word of `cmd`)"
        )
    };
    let executable = |path: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = repo_root.join(program);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(missing(&format!(
                "{} is not an executable file",
                path.display()
            )))
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|path| executable(path))
        .ok_or_else(|| missing("not found on PATH"))
}

fn sandbox_words(plan: &SandboxPlan) -> String {
    match plan {
        SandboxPlan::Confined => "confined".to_string(),
        SandboxPlan::Off => "off (crew.toml)".to_string(),
        SandboxPlan::Unavailable(missing) => format!("unavailable ({missing}): runs unconfined"),
    }
}

/// The last `chars` characters of `text`.
fn tail_of(text: &str, chars: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(chars)).collect()
}

impl<S: LinkedStore> Work for CommandWork<S> {
    fn entered_review(&mut self, task: &Task) {
        self.branch().ask_for_review(task);
    }

    fn run(&mut self, job: &Job, status: &StatusHandle, cancel: &CancellationToken) -> JobOutcome {
        let link = &self.link;
        let read = |id: TaskId| link.call(|store| async move { store.task(id).await }).ok();
        let (input, _) = task_packet(job, &read);
        let ready = working_dir(&self.root, &self.config, &self.name, self.writes)
            .map_err(|e| format!("no worktree: {e}"))
            .and_then(|dir| self.emitter(status).map(|emitter| (dir, emitter)));
        let (workdir, emitter) = match ready {
            Ok(ready) => ready,
            Err(e) => return failed(status, e),
        };
        let branch = TaskBranch {
            link: &self.link,
            root: &self.root,
            config: &self.config,
            name: &self.name,
        };
        if let Err(e) = begin(&branch, self.writes, job, &emitter, &mut self.turns, &input) {
            return failed(status, e);
        }
        let ended = self.execute(&input, &workdir, &emitter, cancel);
        // A reviewer's run passes only with a verdict line in its output.
        let reviewer = self.role == "reviewer" && matches!(job, Job::Task(_));
        let (mut outcome, result) = conclude(&self.name, reviewer, &input, ended, status);
        emitter.emit(AgentEvent::TurnEnd { result });
        let held = self.interrupted_task.take();
        self.interrupted_task = self.branch().settle(job, held, self.writes, &mut outcome);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_named_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let err = find_program("no-such-agent-cli", dir.path()).unwrap_err();
        assert!(
            err.contains("`no-such-agent-cli`: not found on PATH"),
            "{err}"
        );
        let err = find_program("./bin/agent", dir.path()).unwrap_err();
        assert!(err.contains("is not an executable file"), "{err}");
        assert!(find_program("sh", dir.path()).is_ok());
    }

    #[test]
    fn the_summary_is_the_end_of_the_output() {
        assert_eq!(tail_of("abcdef", 3), "def");
        assert_eq!(tail_of("ab", 3), "ab");
        assert_eq!(tail_of("日本語です", 2), "です");
    }
}
