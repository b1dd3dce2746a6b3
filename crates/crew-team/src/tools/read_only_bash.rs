//! A `bash` for roles that must not change anything: every command of the line must be one
//! the tools layer already counts as read-only, or start with one of the allowed prefixes
//! (e.g. the project's test command), and nothing may be redirected into a file. What the
//! check lets through runs with the workspace read-only too (`ToolContext::read_only`), so a
//! command the list counts as read-only by mistake still cannot write.

use crew_tools::builtin::BashTool;
use crew_tools::builtin::bash::BashInput;
use crew_tools::permissions::bash_subject;
use crew_tools::permissions::read_only::read_only_refusal;
use crew_tools::permissions::rule::Rule;
use crew_tools::{Subject, ToolContext, ToolError, ToolFuture, ToolKind, TypedTool};

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

impl TypedTool for ReadOnlyBash {
    type Input = BashInput;
    const NAME: &'static str = BashTool::NAME;
    const KIND: ToolKind = BashTool::KIND;
    const RESULT_BUDGET: Option<usize> = BashTool::RESULT_BUDGET;

    fn description(&self) -> &str {
        &self.description
    }

    fn validate(&self, input: &BashInput, ctx: &ToolContext) -> Result<(), String> {
        self.inner.validate(input, ctx)?;
        self.check(&input.command)
    }

    fn is_concurrency_safe(&self, input: &BashInput) -> bool {
        self.inner.is_concurrency_safe(input)
    }

    fn permission_subject(&self, input: &BashInput) -> Subject {
        self.inner.permission_subject(input)
    }

    fn run(&self, input: BashInput, ctx: ToolContext) -> ToolFuture {
        // Checked again here so a caller that skipped validation still cannot write.
        if let Err(reason) = self.check(&input.command) {
            return Box::pin(async move { Err(ToolError::Refused(reason)) });
        }
        self.inner.run(input, ctx.read_only())
    }
}
