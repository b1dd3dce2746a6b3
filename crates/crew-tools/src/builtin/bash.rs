//! `bash`: run a command line in the workspace with a scrubbed environment, a time limit
//! and an output cap; the whole process group is killed on timeout or cancellation.

use std::sync::OnceLock;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::{ToolContext, scrub_env};
use crate::permissions::bash_subject;
use crate::permissions::read_only::read_only_refusal;
use crate::process::{ProcessEnd, ProcessSpec, run_process};
use crate::tool::{Subject, ToolError, ToolKind, ToolOutput};
use crate::{ToolFuture, TypedTool};
use crew_sandbox as sandbox;

const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Bytes kept per stream in memory; past it output is counted and dropped.
pub const DEFAULT_OUTPUT_CAP: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct BashTool {
    output_cap: usize,
}

impl Default for BashTool {
    fn default() -> Self {
        Self {
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }
}

impl BashTool {
    /// A bash tool keeping at most `output_cap` bytes of each stream.
    pub fn with_output_cap(output_cap: usize) -> Self {
        Self { output_cap }
    }
}

/// `bash` where it exists, else POSIX `sh`; decided once.
fn shell() -> &'static str {
    static SHELL: OnceLock<&'static str> = OnceLock::new();
    SHELL.get_or_init(|| {
        if std::path::Path::new("/bin/bash").exists() {
            "/bin/bash"
        } else {
            "/bin/sh"
        }
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command line
    pub command: String,
    /// Time limit in milliseconds (default 120000)
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub timeout_ms: Option<u64>,
}

impl TypedTool for BashTool {
    type Input = BashInput;
    const NAME: &'static str = "bash";
    const KIND: ToolKind = ToolKind::Exec;

    fn description(&self) -> &str {
        "Run a shell command in the workspace. Its environment holds only PATH, HOME, the locale, \
         the terminal and toolchain variables (and what crew.toml's [permissions] env adds). \
         timeout_ms defaults to 120000 (max 600000); on timeout the command and everything it \
         started are killed. Prefer read/grep/glob for looking at files."
    }

    fn validate(&self, input: &BashInput, _ctx: &ToolContext) -> Result<(), String> {
        if input.command.trim().is_empty() {
            return Err("command is empty".to_string());
        }
        Ok(())
    }

    fn is_concurrency_safe(&self, input: &BashInput) -> bool {
        // Only read-only lines run side by side; a line that cannot be parsed is not one.
        read_only_refusal(&bash_subject::parse(&input.command), &|_| false).is_none()
    }

    fn permission_subject(&self, input: &BashInput) -> Subject {
        Subject::Command(input.command.clone())
    }

    fn run(&self, input: BashInput, ctx: ToolContext) -> ToolFuture {
        let output_cap = self.output_cap;
        Box::pin(async move {
            let command = input.command;
            let timeout_ms = input
                .timeout_ms
                .unwrap_or(DEFAULT_TIMEOUT_MS)
                .min(MAX_TIMEOUT_MS);
            // Only what the sandbox's allow-list names reaches the command, and no credential
            // even then, so a hand-built context cannot leak one either.
            let env = ctx.sandbox.environment(scrub_env(ctx.env.iter().cloned()));
            let prepared = ctx
                .sandbox
                .prepare(
                    &ctx.workspace,
                    shell(),
                    vec!["-c".to_string(), command],
                    env,
                )
                .map_err(|e| ToolError::io("the sandbox's temporary folder", e))?;
            let spec = ProcessSpec {
                program: prepared.program.clone(),
                args: prepared.args.clone(),
                cwd: ctx.workspace.clone(),
                env: Some(prepared.env.clone()),
                stdin: Vec::new(),
                timeout: Duration::from_millis(timeout_ms),
                output_cap,
            };
            let result = run_process(spec, &ctx.cancel)
                .await
                .map_err(|e| ToolError::io(shell(), e))?;
            // The command's private temporary folder goes only once the command is over.
            let prepared_confined = prepared.confined();
            drop(prepared);
            let mut text = String::from_utf8_lossy(&result.stdout).into_owned();
            if !result.stderr.is_empty() {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&String::from_utf8_lossy(&result.stderr));
            }
            if result.dropped > 0 {
                text.push_str(&format!(
                    "\n[output capped: {} bytes dropped]",
                    result.dropped
                ));
            }
            match result.end {
                ProcessEnd::Cancelled => Err(ToolError::Cancelled),
                ProcessEnd::TimedOut => Ok(ToolOutput::error(format!(
                    "{text}\n[timed out after {timeout_ms} ms; the command and its children were killed]"
                ))),
                ProcessEnd::Exited(status) if status.success() => Ok(ToolOutput::ok(text)),
                ProcessEnd::Exited(status) => {
                    let code = status.code().map_or_else(
                        || "killed by a signal".to_string(),
                        |c| format!("exit code {c}"),
                    );
                    let why = if prepared_confined {
                        format!("; {}", sandbox::CONFINED_HINT)
                    } else {
                        String::new()
                    };
                    Ok(ToolOutput::error(format!("{text}\n[{code}{why}]")))
                }
            }
        })
    }
}
