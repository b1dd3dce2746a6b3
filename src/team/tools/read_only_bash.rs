//! A `bash` for roles that must not change anything: every command of the line must be one
//! the tools layer already counts as read-only, or start with one of the allowed prefixes
//! (e.g. the project's test command), and nothing may be redirected into a file.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::tools::builtin::BashTool;
use crate::tools::permissions::bash_subject;
use crate::tools::permissions::read_only::read_only_refusal;
use crate::tools::permissions::rule::Rule;
use crate::tools::tool::str_field;
use crate::tools::{Subject, Tool, ToolContext, ToolError, ToolKind, ToolOutput};

pub struct ReadOnlyBash {
    inner: BashTool,
    /// `bash(<prefix>:*)` rules: the permission layer's own prefix matching.
    allowed: Vec<Rule>,
    description: String,
}

impl ReadOnlyBash {
    /// A read-only bash that also runs commands starting with one of `extra_allow`
    /// (each a command prefix such as `cargo test`). A prefix that is not a valid rule is
    /// left out and logged.
    pub fn new(extra_allow: &[String]) -> Self {
        let allowed: Vec<Rule> = extra_allow
            .iter()
            .filter_map(
                |prefix| match format!("bash({}:*)", prefix.trim()).parse() {
                    Ok(rule) => Some(rule),
                    Err(e) => {
                        tracing::warn!(error = %e, "extra read-only bash prefix ignored");
                        None
                    }
                },
            )
            .collect();
        let mut description = "Run a read-only shell command in the workspace: only commands \
            that read (ls, cat, head, tail, wc, grep, rg, find without actions, git status, \
            git log, git diff, git show, …), no redirection into files"
            .to_string();
        if !extra_allow.is_empty() {
            description.push_str(&format!(
                ", plus commands starting with: {}",
                extra_allow.join(", ")
            ));
        }
        description.push('.');
        Self {
            inner: BashTool::default(),
            allowed,
            description,
        }
    }

    /// Why `command` may not run here, if it may not.
    fn check(&self, command: &str) -> Result<(), String> {
        let also_allowed = |argv: &[String]| self.allowed.iter().any(|r| r.matches_command(argv));
        match read_only_refusal(&bash_subject::parse(command), &also_allowed) {
            Some(why) => Err(format!("read-only bash: {why}")),
            None => Ok(()),
        }
    }
}

impl Tool for ReadOnlyBash {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }

    fn kind(&self) -> ToolKind {
        self.inner.kind()
    }

    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        self.inner.validate(input, ctx)?;
        self.check(str_field(input, "command").unwrap_or_default())
    }

    fn is_concurrency_safe(&self, input: &Value) -> bool {
        self.inner.is_concurrency_safe(input)
    }

    fn result_budget(&self) -> Option<usize> {
        self.inner.result_budget()
    }

    fn permission_subject(&self, input: &Value) -> Subject {
        self.inner.permission_subject(input)
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        // Checked again here so a caller that skipped validation still cannot write.
        if let Err(reason) = self.check(str_field(&input, "command").unwrap_or_default()) {
            return Box::pin(async move { Err(ToolError::Refused(reason)) });
        }
        self.inner.call(input, ctx)
    }
}
