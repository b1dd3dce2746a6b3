//! The schema of `crew.toml` and its checks beyond syntax.

use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::ConfigError;
use crew_model::scripted::ScriptedProvider;
use crew_model::secret::{SECRET_NAME_RULE, is_secret_name};
use crew_model::{ContextWindow, ModelName, OutputTokens, OverloadCount, ThinkingSpec};
use crew_protocol::{AgentName, PermissionMode, USER, joined, validate_name};
use crew_store::{Roster, Teammate};

pub const ROLES: &[&str] = &["explorer", "planner", "reviewer", "implementer"];

/// The simulator's provider name: it plays a scenario, it is no model.
pub const SCRIPTED: &str = "scripted";

/// Every `provider` crew.toml accepts.
pub const PROVIDERS: &[&str] = &[
    SCRIPTED,
    "anthropic",
    "openai",
    "claude-code",
    "codex",
    "command",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamConfig {
    pub team: TeamSection,
    pub lead: AgentEntry,
    #[serde(default, rename = "teammate")]
    pub teammates: Vec<AgentEntry>,
    #[serde(default)]
    pub permissions: PermissionsConfig,
    #[serde(default)]
    pub worker: WorkerConfig,
    #[serde(default)]
    pub worktree: WorktreeConfig,
    /// `[merge_queue]`: how the queue of approved tasks tests them before they land.
    #[serde(default)]
    pub merge_queue: MergeQueueConfig,
    /// `[limits]`: how big subjects, descriptions, messages and memories may be.
    #[serde(default)]
    pub limits: crew_store::Limits,
    /// `[[hooks]]`: external commands run at the agent's events (PreToolUse, PostToolUse,
    /// PostToolUseFailure, Stop, SubagentStop, UserPromptSubmit, SessionStart, PreCompact,
    /// Notification), JSON in on stdin and out on stdout.
    #[serde(default)]
    pub hooks: Vec<crew_tools::HookSpec>,
    /// `[subagents]`: the `agent` tool every agent gets (on by default), its turn bound and
    /// the roles it offers.
    #[serde(default)]
    pub subagents: crew_agent::SubagentSettings,
    /// `[compaction]`: what comes back after old turns are summarised or folded away.
    #[serde(default)]
    pub compaction: CompactionConfig,
    /// `[budget]`: what the whole team may spend before new work pauses for the person.
    #[serde(default)]
    pub budget: Budget,
    /// `[roles]`: a file of duties per role (`implementer = "docs/implementer.md"`), relative to
    /// the repository; it replaces the role's shipped instructions.
    #[serde(default)]
    pub roles: std::collections::BTreeMap<String, Spanned<String>>,
    /// `[ui]`: the screen's own settings (bell, notify command), checked by the screen.
    #[serde(default)]
    pub ui: Option<toml::Table>,
    /// Where this was read from, for messages.
    #[serde(skip)]
    pub path: PathBuf,
}

/// `[compaction]`; see `agent::CompactionThresholds` for each field.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompactionConfig {
    pub reattach_files: usize,
    pub reattach_file_bytes: usize,
    pub reattach_total_bytes: usize,
    pub probe: bool,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        let d = crew_agent::CompactionThresholds::default();
        Self {
            reattach_files: d.reattach_files,
            reattach_file_bytes: d.reattach_file_bytes,
            reattach_total_bytes: d.reattach_total_bytes,
            probe: d.probe,
        }
    }
}

impl CompactionConfig {
    /// The agent's thresholds with these settings.
    pub fn thresholds(&self) -> crew_agent::CompactionThresholds {
        crew_agent::CompactionThresholds {
            reattach_files: self.reattach_files,
            reattach_file_bytes: self.reattach_file_bytes,
            reattach_total_bytes: self.reattach_total_bytes,
            probe: self.probe,
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamSection {
    pub name: Spanned<String>,
    #[serde(default = "default_base_branch")]
    pub base_branch: String,
    /// The project's test command: reviewers may run it with their read-only bash.
    #[serde(default)]
    pub test_command: Option<String>,
    /// The team's git remote (a bare repository: a path, or over ssh): teammates push their
    /// task branches there and the person pushes the base branch after a merge, so hosts that
    /// share no file system share commits.
    #[serde(default)]
    pub remote: Option<Spanned<String>>,
}

/// One agent as `crew.toml` declares it (`[lead]` or a `[[teammate]]` entry); the agent loop's
/// runtime settings are `agent::AgentConfig`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    pub name: Spanned<AgentName>,
    #[serde(default)]
    pub role: Option<Spanned<String>>,
    #[serde(default)]
    pub writes: bool,
    #[serde(default)]
    pub plan_mode_required: bool,
    /// Whether this agent's commands may open network sockets inside the sandbox.
    #[serde(default)]
    pub network: bool,
    /// Absent: no model (`ModelChoice::configured` is false); `model = {}` is the simulator.
    #[serde(default)]
    pub model: ModelChoice,
    /// `budget = { ... }`: what this agent may spend in all.
    #[serde(default)]
    pub budget: Budget,
}

/// Spending limits (`[budget]` for the team, `budget = {...}` for one agent); each is a total
/// over the workers' lives, and absent means no limit. `wall_secs` bounds one job of an agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default)]
    pub max_turns: Option<u64>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub max_usd: Option<f64>,
    #[serde(default)]
    pub wall_secs: Option<u64>,
}

/// Which model drives an agent. Keys are never stored here: `api_key_env` names the variable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelChoice {
    #[serde(default = "default_provider")]
    pub provider: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default, deserialize_with = "key_variable")]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub scenario: Option<String>,
    /// What the model costs, for a cost on the screen when the provider does not report one.
    #[serde(default)]
    pub price: Option<Price>,
    /// `thinking = { budget_tokens = N }`: extended thinking (anthropic).
    #[serde(default)]
    pub thinking: Option<Spanned<ThinkingSpec>>,
    /// The model that takes over after `fallback_after` overloads in a row (default 3).
    #[serde(default)]
    pub fallback_model: Option<Spanned<ModelName>>,
    #[serde(default)]
    pub fallback_after: Option<OverloadCount>,
    /// `openai`: `false` asks for whole replies instead of streamed ones (default `true`).
    #[serde(default)]
    pub stream: Option<Spanned<bool>>,
    /// The model's context window in tokens, when the server does not say it (llama.cpp's
    /// `/props`, Ollama's `/api/show` and vLLM's `/v1/models` do); the smaller counts.
    #[serde(default)]
    pub context_window: Option<ContextWindow>,
    /// The most tokens one reply may have (default 16384).
    #[serde(default)]
    pub max_output_tokens: Option<OutputTokens>,
    /// `claude-code`, `codex`: extra arguments for the CLI, after crew's own.
    #[serde(default)]
    pub args: Vec<String>,
    /// `claude-code`, `codex`: the CLI to run (default `claude` / `codex` from `PATH`).
    #[serde(default)]
    pub bin: Option<String>,
    /// `command`: the program and its arguments; `{prompt}` in an argument is replaced by the
    /// job's text, which otherwise goes to its stdin.
    #[serde(default)]
    pub cmd: Vec<String>,
}

impl ModelChoice {
    /// Whether the agent has a model at all: an agent written without a `model` line has none
    /// (what `crew init` writes when it finds nothing), and `crew up` refuses to start it.
    pub fn configured(&self) -> bool {
        !self.provider.is_empty()
    }
}

/// An `api_key_env` name the tools' environment scrubber removes; any other would hand the key
/// to every command a tool runs.
fn key_variable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    if is_secret_name(&name) {
        Ok(Some(name))
    } else {
        Err(serde::de::Error::custom(format!(
            "api_key_env = {name:?} would reach the tools' commands: crew hides only variables \
             with {SECRET_NAME_RULE}; name the variable so (e.g. {name}_KEY)"
        )))
    }
}

/// US dollars per million tokens. Cache reads and writes cost the input price unless given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: Dollars,
    pub output: Dollars,
    #[serde(default)]
    pub cache_read: Option<Dollars>,
    #[serde(default)]
    pub cache_write: Option<Dollars>,
}

/// A price: finite and not negative (checked when crew.toml is read, so the error has a place).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Dollars(pub f64);

impl<'de> Deserialize<'de> for Dollars {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(d)?;
        if value.is_finite() && value >= 0.0 {
            Ok(Dollars(value))
        } else {
            Err(serde::de::Error::custom(format!(
                "a price is US dollars per million tokens (0 or more), not {value}"
            )))
        }
    }
}

impl Price {
    /// The cost of these token counts in millionths of a dollar: a price per million tokens
    /// is exactly millionths of a dollar per token.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "a float-to-int `as` saturates (NaN is 0): the right end for a cost"
    )]
    pub fn micros(&self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> u64 {
        let read = self.cache_read.unwrap_or(self.input).0;
        let write = self.cache_write.unwrap_or(self.input).0;
        (input as f64 * self.input.0
            + output as f64 * self.output.0
            + cache_read as f64 * read
            + cache_write as f64 * write)
            .round() as u64
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    #[serde(default = "default_mode")]
    pub mode: Spanned<String>,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    /// `bypass` mode needs this and a command-line flag.
    #[serde(default)]
    pub allow_bypass: bool,
    /// `auto` (the default): every command runs confined (see `tools::sandbox`); where the
    /// kernel lacks a piece, every command asks. `off`: unconfined, with a warning everywhere.
    #[serde(default)]
    pub sandbox: crew_protocol::SandboxMode,
    /// Variables the agents' commands and hooks get beyond the built-in allow-list (`PATH`,
    /// `HOME`, the locale, the terminal, toolchains; see `crew_sandbox::environment`).
    #[serde(default)]
    pub env: Vec<String>,
    /// The person's keys and tokens in HOME that confined commands may read after all
    /// (`"~/.ssh"`; every one of `crew_sandbox::policy::PERSONS_SECRETS` is hidden otherwise).
    #[serde(default)]
    pub readable_secrets: Vec<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    #[serde(default = "five")]
    pub idle_poll_secs: u64,
    #[serde(default = "sixty")]
    pub idle_timeout_secs: u64,
    #[serde(default = "two")]
    pub heartbeat_secs: u64,
    /// On a PostgreSQL store: how long a claimed task stays a host's without its heartbeat
    /// (then it goes back to the queue, for a host that went silent). See [`Self::lease`].
    #[serde(default)]
    pub lease_secs: Option<u64>,
    #[serde(default = "request_timeout")]
    pub request_timeout_secs: u64,
}

/// `[merge_queue]`: approved tasks are tested together, up to `batch` at a time, on the tree
/// merging them would make; a red batch is bisected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeQueueConfig {
    /// How many approved tasks one test run takes (1: one at a time).
    #[serde(default = "one", deserialize_with = "at_least_one")]
    pub batch: usize,
    /// How long one run of `test_command` may take before it counts as red.
    #[serde(default = "half_hour")]
    pub timeout_secs: u64,
}

impl Default for MergeQueueConfig {
    fn default() -> Self {
        MergeQueueConfig {
            batch: one(),
            timeout_secs: half_hour(),
        }
    }
}

fn one() -> usize {
    1
}

fn half_hour() -> u64 {
    1800
}

fn at_least_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let n = usize::deserialize(d)?;
    if n == 0 {
        return Err(serde::de::Error::custom(
            "batch must be at least 1 (1 tests one task at a time)",
        ));
    }
    Ok(n)
}

/// What a writing teammate's worktree gets from the main checkout when it is made.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeConfig {
    /// Files copied in (e.g. `.env`).
    #[serde(default)]
    pub copy: Vec<String>,
    /// Folders linked in (e.g. `node_modules`).
    #[serde(default)]
    pub link: Vec<String>,
    /// Merge a teammate's worktree into the base branch as soon as it finishes a task, instead
    /// of waiting for a person to review the diff (the headless demo does this).
    #[serde(default)]
    pub merge_when_done: bool,
    /// A reviewer teammate that reviews each task entering review (on a temporary checkout of
    /// the base with the task's commits merged in, running `test_command`) before the person.
    #[serde(default)]
    pub review_by: Option<toml::Spanned<AgentName>>,
    /// A reviewer's FAIL sends the task back to its teammate without waiting for the person.
    #[serde(default)]
    pub auto_send_back_on_fail: bool,
}

/// What is wrong with `[team] remote`, if anything: git would read a leading `-` as an option,
/// and `transport::` (`ext::`, `fd::`) runs a command rather than reaching a repository.
fn remote_fault(url: &str) -> Option<&'static str> {
    if url.trim().is_empty() {
        Some("is empty: give a path or an ssh URL of a bare repository")
    } else if url.starts_with('-') {
        Some("starts with '-', which git would take as an option")
    } else if url.chars().any(char::is_control) {
        Some("holds a control character")
    } else if url.contains("::") {
        Some("names a git transport helper (`x::`); give a path or an ssh URL")
    } else {
        None
    }
}

fn default_base_branch() -> String {
    "main".into()
}
/// Providers that run a coding-agent CLI (its own loop and tools) instead of crew's agent loop.
pub fn is_cli(provider: &str) -> bool {
    matches!(provider, "claude-code" | "codex")
}

fn default_provider() -> String {
    SCRIPTED.into()
}
fn default_mode() -> Spanned<String> {
    Spanned::new(0..0, "ask".into())
}
fn five() -> u64 {
    5
}
fn sixty() -> u64 {
    60
}
fn two() -> u64 {
    2
}
fn request_timeout() -> u64 {
    300
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        PermissionsConfig {
            mode: default_mode(),
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            allow_bypass: false,
            sandbox: Default::default(),
            env: Vec::new(),
            readable_secrets: Vec::new(),
        }
    }
}

impl WorkerConfig {
    /// `lease_secs`, else 30 s or three heartbeats, whichever is longer.
    pub fn lease(&self) -> std::time::Duration {
        let secs = self
            .lease_secs
            .unwrap_or_else(|| 30.max(3 * self.heartbeat_secs.max(1)));
        std::time::Duration::from_secs(secs)
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            idle_poll_secs: five(),
            idle_timeout_secs: sixty(),
            heartbeat_secs: two(),
            lease_secs: None,
            request_timeout_secs: request_timeout(),
        }
    }
}

impl TeamConfig {
    pub fn load(path: &Path) -> Result<TeamConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<TeamConfig, ConfigError> {
        let mut config: TeamConfig = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            at(path, text, span, e.message().to_string())
        })?;
        config.path = path.to_path_buf();
        config.check(text)?;
        Ok(config)
    }

    fn check(&self, text: &str) -> Result<(), ConfigError> {
        let err = |span: Range<usize>, message: String| at(&self.path, text, span, message);
        let budgets = std::iter::once(("[budget]".to_string(), &self.budget)).chain(
            self.agents()
                .map(|a| (format!("{}'s budget", a.name.get_ref()), &a.budget)),
        );
        for (place, budget) in budgets {
            if let Some(usd) = budget.max_usd.filter(|u| !u.is_finite() || *u < 0.0) {
                return Err(ConfigError::Invalid {
                    path: self.path.clone(),
                    message: format!(
                        "{place}: max_usd = {usd} is not a dollar amount of 0 or more"
                    ),
                });
            }
        }
        // A lease renewed less often than it lasts would lapse under a live host.
        if let Some(lease) = self.worker.lease_secs
            && lease < 3 * self.worker.heartbeat_secs.max(1)
        {
            return Err(ConfigError::Invalid {
                path: self.path.clone(),
                message: format!(
                    "[worker] lease_secs = {lease} must be at least three heartbeats (heartbeat_secs = {})",
                    self.worker.heartbeat_secs
                ),
            });
        }
        for secret in &self.permissions.readable_secrets {
            let path = secret.get_ref();
            if !(path.starts_with("~/") || path.starts_with('/')) {
                return Err(err(
                    secret.span(),
                    format!(
                        "readable_secrets: {path:?} is not a path from your home (\"~/.ssh\") or an absolute one"
                    ),
                ));
            }
        }
        validate_name("team name", self.team.name.get_ref())
            .map_err(|e| err(self.team.name.span(), e.to_string()))?;
        if let Some(remote) = &self.team.remote
            && let Some(why) = remote_fault(remote.get_ref())
        {
            return Err(err(
                remote.span(),
                format!("remote = {:?} {why}", remote.get_ref()),
            ));
        }
        let mut seen = HashSet::new();
        for agent in self.agents() {
            let name = agent.name.get_ref();
            if *name == USER {
                return Err(err(
                    agent.name.span(),
                    "\"user\" is reserved for the person at the screen".into(),
                ));
            }
            if name == crew_store::memory::TEAM_FOLDER {
                return Err(err(
                    agent.name.span(),
                    "\"team\" is reserved: .crew/memory/team/ holds the whole team's memories"
                        .into(),
                ));
            }
            if !seen.insert(name.clone()) {
                return Err(err(
                    agent.name.span(),
                    format!("agent name {name:?} is used twice"),
                ));
            }
        }
        for mate in &self.teammates {
            match &mate.role {
                Some(role) if !ROLES.contains(&role.get_ref().as_str()) => {
                    return Err(err(
                        role.span(),
                        format!(
                            "unknown role {:?}; roles are: {}",
                            role.get_ref(),
                            ROLES.join(", ")
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    return Err(err(
                        mate.name.span(),
                        format!(
                            "teammate {:?} needs a role ({})",
                            mate.name.get_ref(),
                            ROLES.join(", ")
                        ),
                    ));
                }
            }
        }
        if self.lead.model.provider == "command" {
            return Err(err(
                self.lead.name.span(),
                format!(
                    "lead {:?}: provider \"command\" runs teammates only (a lead needs crew's team tools, which a command cannot call)",
                    self.lead.name.get_ref()
                ),
            ));
        }
        if self.lead.model.provider == "codex" {
            return Err(err(
                self.lead.name.span(),
                format!(
                    "lead {:?}: provider \"codex\" runs teammates only for now (crew hands its team tools, through `crew mcp`, to a Claude Code lead only)",
                    self.lead.name.get_ref()
                ),
            ));
        }
        // A Claude Code lead plans through `crew mcp`; it runs in the repository's own checkout,
        // where the person works, so it must not change files there.
        if self.lead.model.provider == "claude-code" && self.lead.writes {
            return Err(err(
                self.lead.name.span(),
                format!(
                    "lead {:?}: a claude-code lead plans and does not change files (it runs in the repository's own checkout); remove `writes = true`",
                    self.lead.name.get_ref()
                ),
            ));
        }
        if let Some(by) = &self.worktree.review_by
            && !self
                .teammates
                .iter()
                .any(|t| t.name.get_ref() == by.get_ref())
        {
            return Err(err(
                by.span(),
                format!(
                    "review_by = {:?} is not a teammate; the teammates are: {}",
                    by.get_ref(),
                    joined(&self.teammate_names(), ", ")
                ),
            ));
        }
        if let Some(by) = &self.worktree.review_by
            && let Some(provider) = self
                .agent(by.get_ref())
                .map(|a| a.model.provider.as_str())
                .filter(|p| is_cli(p) || *p == "command")
        {
            return Err(err(
                by.span(),
                format!(
                    "review_by = {:?} is a {provider} teammate; reviews run on crew's own runtime for now (it reviews the merged code in a folder of its own)",
                    by.get_ref()
                ),
            ));
        }
        for agent in self.agents() {
            let model = &agent.model;
            if model.configured() && !PROVIDERS.contains(&model.provider.as_str()) {
                return Err(err(
                    value_after(text, agent.name.span(), &model.provider),
                    format!(
                        "{}: unknown provider {:?}; providers are: {}",
                        agent.name.get_ref(),
                        model.provider,
                        PROVIDERS.join(", ")
                    ),
                ));
            }
            // A scenario is a built-in name or a scenario file (TOML); a misspelt name would
            // otherwise only fail when the agent starts.
            if let Some(scenario) = &model.scenario
                && model.provider == SCRIPTED
                && !scenario.ends_with(".toml")
                && !ScriptedProvider::builtin_names().contains(&scenario.as_str())
            {
                return Err(err(
                    value_after(text, agent.name.span(), scenario),
                    format!(
                        "{}: unknown scenario {scenario:?}; the built-in scenarios are: {} (or give a scenario file, NAME.toml)",
                        agent.name.get_ref(),
                        ScriptedProvider::builtin_names().join(", ")
                    ),
                ));
            }
            if let Some(thinking) = &model.thinking
                && model.provider != "anthropic"
            {
                return Err(err(
                    thinking.span(),
                    format!(
                        "thinking is supported by provider \"anthropic\" only, not {:?}",
                        model.provider
                    ),
                ));
            }
            if let Some(stream) = &model.stream
                && model.provider != "openai"
            {
                return Err(err(
                    stream.span(),
                    format!(
                        "stream is a setting of provider \"openai\" only, not {:?}",
                        model.provider
                    ),
                ));
            }
            if let Some(fallback) = &model.fallback_model
                && !matches!(model.provider.as_str(), "anthropic" | "openai")
            {
                return Err(err(
                    fallback.span(),
                    format!(
                        "fallback_model needs provider \"anthropic\" or \"openai\", not {:?}",
                        model.provider
                    ),
                ));
            }
            if (model.bin.is_some() || !model.args.is_empty()) && !is_cli(&model.provider) {
                return Err(err(
                    agent.name.span(),
                    format!(
                        "{}: model `bin` and `args` are for provider \"claude-code\" or \"codex\", not {:?}",
                        agent.name.get_ref(),
                        model.provider
                    ),
                ));
            }
            let command = model.provider == "command";
            if command && model.cmd.first().is_none_or(|p| p.trim().is_empty()) {
                return Err(err(
                    agent.name.span(),
                    format!(
                        "{}: provider \"command\" needs `cmd`, the program and its arguments, e.g. cmd = [\"aider\", \"--yes\", \"--message\", \"{{prompt}}\"]",
                        agent.name.get_ref()
                    ),
                ));
            }
            if !command && !model.cmd.is_empty() {
                return Err(err(
                    agent.name.span(),
                    format!(
                        "{}: model `cmd` is for provider \"command\", not {:?}",
                        agent.name.get_ref(),
                        model.provider
                    ),
                ));
            }
        }
        let mode = &self.permissions.mode;
        let parsed = mode
            .get_ref()
            .parse::<PermissionMode>()
            .map_err(|e| err(mode.span(), e.to_string()))?;
        if parsed == PermissionMode::Plan && self.teammates.is_empty() {
            return Err(err(
                mode.span(),
                "plan mode needs a teammate to plan: the lead already only reads, and approves \
                 the teammates' plans"
                    .to_string(),
            ));
        }
        Ok(())
    }

    /// The lead first, then the teammates in file order.
    pub fn agents(&self) -> impl Iterator<Item = &AgentEntry> {
        std::iter::once(&self.lead).chain(self.teammates.iter())
    }

    pub fn agent(&self, name: &str) -> Option<&AgentEntry> {
        self.agents().find(|a| a.name.get_ref() == name)
    }

    /// The sandbox `entry`'s commands (and hooks) run in: the configured mode, its network and
    /// whether it writes, `[limits]`' resource limits and `[permissions] env`.
    pub fn sandbox_for(&self, entry: &AgentEntry) -> crew_tools::Sandbox {
        self.sandbox(entry.network, entry.writes)
    }

    /// The sandbox of an agent with this network and writing, whether or not crew.toml lists
    /// it (a Claude Code teammate crew runs).
    pub fn sandbox(&self, network: bool, writes: bool) -> crew_tools::Sandbox {
        let some = |value: u64| (value > 0).then_some(value);
        let limits = crew_tools::ResourceLimits {
            processes: some(self.limits.max_processes),
            memory_bytes: some(self.limits.max_memory_bytes),
            file_bytes: some(self.limits.max_file_bytes),
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let readable = self
            .permissions
            .readable_secrets
            .iter()
            .filter_map(|p| secret_path(p.get_ref(), home.as_deref()))
            .collect();
        crew_tools::Sandbox::new(self.permissions.sandbox, network, writes)
            .with_limits(limits)
            .with_env(self.permissions.env.clone())
            .with_readable_secrets(readable)
    }

    /// The teammates' names, in file order.
    pub fn teammate_names(&self) -> Vec<AgentName> {
        self.teammates
            .iter()
            .map(|t| t.name.get_ref().clone())
            .collect()
    }

    /// The teammates' names with their roles, in file order.
    pub fn teammate_roles(&self) -> Vec<Teammate> {
        self.teammates
            .iter()
            .map(|t| Teammate {
                name: t.name.get_ref().clone(),
                role: t.role.as_ref().map(|r| r.get_ref().clone()),
            })
            .collect()
    }

    pub fn lead_name(&self) -> &AgentName {
        self.lead.name.get_ref()
    }

    /// The role an agent claims tasks as: `lead` for the lead, else its configured role.
    pub fn role_of(&self, name: &str) -> Option<&str> {
        if *self.lead_name() == *name {
            return Some("lead");
        }
        self.teammates
            .iter()
            .find(|a| a.name.get_ref() == name)
            .and_then(|a| a.role.as_ref().map(|r| r.get_ref().as_str()))
    }

    pub fn roster(&self) -> Roster {
        Roster::new(self.agents().map(|a| a.name.get_ref().clone()))
    }

    pub fn request_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.worker.request_timeout_secs)
    }

    /// The agents the offline simulator plays (`provider = "scripted"`), lead first.
    pub fn simulated_agents(&self) -> Vec<AgentName> {
        self.agents()
            .filter(|a| a.model.provider == SCRIPTED)
            .map(|a| a.name.get_ref().clone())
            .collect()
    }

    /// The agents without a model (no `model` line), lead first.
    pub fn unconfigured_agents(&self) -> Vec<AgentName> {
        self.agents()
            .filter(|a| !a.model.configured())
            .map(|a| a.name.get_ref().clone())
            .collect()
    }

    /// Whether any agent of this team is the simulator rather than a model: what every place
    /// that says SIMULATOR (status, header, logs, the headless summary) asks.
    pub fn simulated(&self) -> bool {
        self.agents().any(|a| a.model.provider == SCRIPTED)
    }
}

/// Where the string `value` is written after the agent's name (a value the schema keeps
/// without its place, such as a model's provider), else the name itself.
fn value_after(text: &str, name: Range<usize>, value: &str) -> Range<usize> {
    let end = name.end;
    let rest = text.get(end..).unwrap_or_default();
    [format!("\"{value}\""), format!("'{value}'")]
        .iter()
        .filter_map(|quoted| rest.find(quoted.as_str()))
        .min()
        .map_or(name, |at| end + at..end + at + value.len() + 2)
}

/// A `readable_secrets` entry as a path: `~/` is `home`.
fn secret_path(entry: &str, home: Option<&Path>) -> Option<PathBuf> {
    match entry.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None => Some(PathBuf::from(entry)),
    }
}

/// A message at a byte span, turned into 1-based line and column.
fn at(path: &Path, text: &str, span: Range<usize>, message: String) -> ConfigError {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    ConfigError::At {
        path: path.to_path_buf(),
        line,
        column,
        message: message.trim().to_string(),
    }
}
