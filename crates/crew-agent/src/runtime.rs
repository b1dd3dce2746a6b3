//! The `Agent`: one conversation that lives across many turns, with its tools, limits,
//! prompt prefix and transcript.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::compaction::steps::FOLD_HEADER;
use crate::compaction::summary::reply_text;
use crate::compaction::{Compacted, Ladder, estimate_messages, probe, tokens_of_bytes};
use crate::config::{AgentConfig, CompactionThresholds, Limits};
use crate::context::{self, DEFAULT_RULES};
use crate::conversation::KeptConversation;
use crate::emitter::Emitter;
use crate::error::AgentError;
use crate::event::{AgentEvent, CompactionTrigger, EventSink};
use crate::instructions::{Instructions, user_crew_dir, user_instructions_file};
use crate::normalize::normalize;
use crate::observed::ObservedPrompter;
use crate::recovery::MAX_COMPACTION_FAILURES;
use crate::subagent::SubagentLink;
use crate::subagent::run::SubagentIdentity;
use crate::transcript::{TranscriptWriter, transcript_path};
use crew_model::{
    ChatMessage, ModelProvider, ModelRequest, RequestContext, Retrying, Role, SystemPrompt,
    ToolDefinition,
};
use crew_store::message::new_id;
use crew_store::{AgentMemory, Limits as StoreLimits, MemoryBook};
use crew_tools::memory::has_memory_tools;
use crew_tools::{Pipeline, SkillCatalogue, ToolContext};

pub struct Agent {
    pub(crate) name: crew_store::AgentName,
    pub(crate) role: String,
    pub(crate) model_name: String,
    /// The configured provider behind `Retrying`.
    pub(crate) model: Arc<dyn ModelProvider>,
    pub(crate) pipeline: Arc<Pipeline>,
    /// Shared by every call so what was read stays known across turns.
    pub(crate) tool_ctx: ToolContext,
    pub(crate) workspace: PathBuf,
    pub(crate) repo_root: PathBuf,
    pub(crate) limits: Limits,
    pub(crate) compaction: CompactionThresholds,
    pub(crate) emitter: Arc<Emitter>,
    pub(crate) history: Vec<ChatMessage>,
    tools: Vec<ToolDefinition>,
    /// Estimated tokens of the tool definitions (they are sent with every call).
    tools_tokens: u64,
    rules: String,
    pub(crate) static_prefix: String,
    pub(crate) team_facts: Vec<String>,
    task: Option<String>,
    /// Bumped by every compaction that rewrote the history.
    epoch: u64,
    pub(crate) fingerprint: String,
    pub(crate) turns: u64,
    compaction_failures: u32,
    session: String,
    transcript: PathBuf,
    /// Where the conversation lasts between jobs and processes, when it does.
    pub(crate) conversation: Option<KeptConversation>,
    /// Instruction files for the prompt: the user's, the project's, subfolders' as found.
    pub(crate) instructions: Instructions,
    /// Set when this agent may start subagents: what it sent last, for a fork to start from,
    /// and what its subagents spent.
    pub(crate) subagent_link: Option<Arc<SubagentLink>>,
    /// A fork's requests keep the system prompt, tools, model and output limit of the
    /// caller's request it was forked from, so the caller's prefix is reused byte for byte.
    pub(crate) fork_template: Option<ModelRequest>,
    /// Set when this agent is a subagent.
    pub(crate) subagent: Option<SubagentIdentity>,
    /// The context window and what the thresholds were before it was known (`window`).
    pub(crate) window: crate::window::Window,
}

impl Agent {
    /// Sets the agent up and opens its transcript
    /// (`<repo_root>/.crew/transcripts/<name>/<session>.jsonl`).
    pub fn new(config: AgentConfig, sink: EventSink) -> Result<Self, AgentError> {
        let session = new_id("session");
        let transcript = transcript_path(&config.repo_root, &config.name, &session);
        let model: Arc<dyn ModelProvider> =
            Arc::new(Retrying::new(Arc::clone(&config.model), config.retry));
        Self::assemble(config, model, sink, session, transcript)
    }

    /// Sets an agent up with `model` as given (`config.model` and `config.retry` unused) and its
    /// transcript at `transcript`.
    pub(crate) fn assemble(
        config: AgentConfig,
        model: Arc<dyn ModelProvider>,
        sink: EventSink,
        session: String,
        transcript: PathBuf,
    ) -> Result<Self, AgentError> {
        let emitter = Arc::new(Emitter::new(
            sink,
            TranscriptWriter::open(transcript.clone())?,
        ));
        let mut pipeline = config.pipeline;
        if let Some(inner) = pipeline.prompter.take() {
            pipeline.prompter = Some(Arc::new(ObservedPrompter {
                inner,
                emitter: Arc::clone(&emitter),
            }));
        }
        let mut tool_ctx = ToolContext::new(
            &config.workspace,
            config.repo_root.join(".crew/tool-results"),
        );
        tool_ctx.sandbox = config.sandbox.clone();
        tool_ctx.memory = Some(Arc::new(MemoryBook::new(
            &config.repo_root.join(".crew"),
            &config.name,
        )));
        // Found once: the catalogue is part of the static prefix, which must not change.
        tool_ctx.skills = Arc::new(SkillCatalogue::discover(&SkillCatalogue::folders(
            &config.repo_root,
            user_crew_dir().as_deref(),
        )));
        let mut agent = Self {
            name: config.name,
            role: config.role,
            model_name: config.model_name,
            model,
            pipeline: Arc::new(pipeline),
            tool_ctx,
            workspace: config.workspace,
            repo_root: config.repo_root,
            limits: config.limits,
            compaction: config.compaction,
            emitter,
            history: Vec::new(),
            tools_tokens: 0,
            tools: Vec::new(),
            rules: DEFAULT_RULES.to_string(),
            static_prefix: String::new(),
            team_facts: Vec::new(),
            task: None,
            epoch: 0,
            fingerprint: String::new(),
            turns: 0,
            compaction_failures: 0,
            session,
            transcript,
            conversation: None,
            instructions: Instructions::new(user_instructions_file()),
            subagent_link: None,
            fork_template: None,
            subagent: None,
            window: crate::window::Window::new(&config.limits, &config.compaction),
        };
        agent.refresh_tools();
        Ok(agent)
    }

    /// Takes the tool list from the pipeline (and with it the prefix).
    pub(crate) fn refresh_tools(&mut self) {
        self.tools = self.pipeline.registry.definitions();
        self.tools_tokens =
            tokens_of_bytes(serde_json::to_string(&self.tools).map_or(0, |s| s.len()));
        self.refresh_prefix();
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The conversation so far (normalised at the end of every turn).
    pub fn history(&self) -> &[ChatMessage] {
        &self.history
    }

    /// Replaces the conversation (resuming a session); it is normalised first.
    pub fn load_history(&mut self, messages: &[ChatMessage]) {
        self.history = normalize(messages);
    }

    /// This session's id (names the transcript file).
    pub fn session(&self) -> &str {
        &self.session
    }

    pub fn transcript_path(&self) -> &Path {
        &self.transcript
    }

    /// The static part of the system prompt (what providers cache).
    pub fn static_prefix(&self) -> &str {
        &self.static_prefix
    }

    /// The fingerprint of the cacheable prefix as it stands now.
    pub fn prefix_fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Replaces the rules section of the static prefix: an explicit change of the prefix.
    pub fn set_rules(&mut self, rules: impl Into<String>) {
        self.rules = rules.into();
        self.refresh_prefix();
    }

    /// Team facts for the dynamic suffix (who the lead is, teammates, current plan…).
    pub fn set_team_facts(&mut self, facts: Vec<String>) {
        self.team_facts = facts;
    }

    /// Bounds the agent's memory folders by crew.toml's `[limits]`.
    pub fn set_memory_limits(&mut self, limits: StoreLimits) {
        let book = MemoryBook::new(&self.repo_root.join(".crew"), &self.name).with_limits(limits);
        self.tool_ctx.memory = Some(Arc::new(book));
    }

    /// Keeps the agent's memories in `memory` instead of its memory folders (the team's store,
    /// for an agent on another host).
    pub fn set_memory(&mut self, memory: Arc<dyn AgentMemory>) {
        self.tool_ctx.memory = Some(memory);
    }

    /// The agent's memories.
    pub fn memory(&self) -> Option<&dyn AgentMemory> {
        self.tool_ctx.memory.as_deref()
    }

    /// The skills the agent was offered when it started.
    pub fn skills(&self) -> &SkillCatalogue {
        &self.tool_ctx.skills
    }

    fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// The task the agent works on (sent as request context).
    pub fn set_task(&mut self, task: Option<String>) {
        self.task = task;
    }

    /// The static prefix: the rules, then (with their tools) how memory works and the skills'
    /// catalogue, then the tool list.
    fn refresh_prefix(&mut self) {
        let mut rules = self.rules.clone();
        let names = self.tool_names();
        if has_memory_tools(&names) {
            rules.push_str("\n\n");
            rules.push_str(context::MEMORY_RULES);
        }
        if names.contains(&"skill_load")
            && let Some(catalogue) = self.tool_ctx.skills.prompt_section()
        {
            rules.push_str("\n\n");
            rules.push_str(&catalogue);
        }
        self.static_prefix = context::static_prefix(&self.name, &self.role, &rules, &self.tools);
        self.fingerprint = context::fingerprint(&self.static_prefix, &self.tools, self.epoch);
    }

    /// Estimated tokens sent with every call besides the messages.
    pub(crate) fn fixed_tokens(&self, suffix: &str) -> u64 {
        tokens_of_bytes(self.static_prefix.len() + suffix.len()) + self.tools_tokens
    }

    /// The request for the current history.
    pub(crate) fn request(&self, suffix: &str) -> ModelRequest {
        let tools = match &self.fork_template {
            Some(fork) => fork.tools.clone(),
            None => self.tools.clone(),
        };
        ModelRequest {
            messages: self.history.clone(),
            tools,
            ..self.template(suffix, self.limits.max_output_tokens)
        }
    }

    fn template(&self, suffix: &str, max_tokens: u32) -> ModelRequest {
        let (model, system) = match &self.fork_template {
            Some(fork) => (fork.model.clone(), fork.system.clone()),
            None => (
                self.model_name.clone(),
                SystemPrompt {
                    static_prefix: self.static_prefix.clone(),
                    dynamic_suffix: suffix.to_string(),
                },
            ),
        };
        ModelRequest {
            model,
            system,
            messages: Vec::new(),
            tools: Vec::new(),
            max_tokens,
            context: RequestContext {
                agent: self.name.to_string(),
                role: self.role.clone(),
                task: self.task.clone(),
            },
        }
    }

    /// Whether compaction may still be tried (three failures in a row stop it).
    pub(crate) fn may_compact(&self) -> bool {
        self.compaction_failures < MAX_COMPACTION_FAILURES
    }

    /// Runs the ladder towards `target` tokens; a change starts a new prefix lineage. When old
    /// turns were folded or summarised away, the recent files and the checklist are put back;
    /// after a summary the probe checks the agent still knows its goal, and if it does not,
    /// the summary is discarded for the last good state: the history as the cheaper rungs
    /// (spill, drop, fold) left it just before the summary, files and checklist put back if
    /// it was folded. Not fitting then counts as a failed compaction.
    pub(crate) async fn compact(
        &mut self,
        suffix: &str,
        target: u64,
        trigger: CompactionTrigger,
        cancel: &CancellationToken,
    ) -> Compacted {
        let template = self.template(suffix, self.compaction.summary_max_tokens);
        let spill_dir = self.tool_ctx.spill_dir.clone();
        let goal = self.task.clone().or_else(|| {
            self.history
                .iter()
                .find(|m| m.role == Role::User && m.tool_results().is_empty())
                .map(ChatMessage::text)
        });
        let files = self.recent_files();
        let mut history = std::mem::take(&mut self.history);
        let ladder = Ladder {
            thresholds: self.compaction,
            registry: &self.pipeline.registry,
            spill_dir: &spill_dir,
            model: self.model.as_ref(),
            template: &template,
            cancel,
            emitter: &self.emitter,
        };
        let mut result = ladder
            .run(&mut history, self.fixed_tokens(suffix), target, trigger)
            .await;
        if result.rewrote_turns {
            self.carry_over(&mut history, &files);
        }
        self.history = history;
        if let Some(mut before) = result.before_summary.take()
            && let Some(goal) = goal
            && !self.probe(&goal, suffix, cancel).await
        {
            if before
                .first()
                .is_some_and(|m| m.text().starts_with(FOLD_HEADER))
            {
                self.carry_over(&mut before, &files);
            }
            self.history = before;
            result.fits = self.fixed_tokens(suffix) + estimate_messages(&self.history) <= target;
        }
        if result.changed {
            self.epoch += 1;
            self.refresh_prefix();
        }
        if result.fits {
            self.compaction_failures = 0;
        } else {
            self.compaction_failures += 1;
        }
        result
    }

    /// Asks the model what it is working on and checks the answer names `goal` (see
    /// `compaction::probe`). True when it does, when the goal has nothing to check, or when
    /// probing is off; the answer is recorded as an event.
    async fn probe(&self, goal: &str, suffix: &str, cancel: &CancellationToken) -> bool {
        let words = probe::key_words(goal);
        if !self.compaction.probe || words.is_empty() {
            return true;
        }
        let mut request = self.request(suffix);
        request.max_tokens = probe::PROBE_MAX_TOKENS;
        request
            .messages
            .push(ChatMessage::user_text(probe::PROBE_QUESTION));
        let request = ModelRequest {
            messages: normalize(&request.messages),
            ..request
        };
        let (passed, answer) = match reply_text(self.model.as_ref(), request, cancel).await {
            Ok(answer) => (probe::names_goal(&words, &answer), answer),
            Err(reason) => (false, format!("(no answer: {reason})")),
        };
        self.emitter.emit(AgentEvent::CompactionProbe {
            passed,
            answer,
            expected: words,
        });
        passed
    }

    pub(crate) fn dynamic_suffix(&self) -> String {
        let files = self.instructions.files(&self.workspace, &self.repo_root);
        let mut suffix = context::dynamic_suffix_with(
            &self.workspace,
            &self.repo_root,
            &files,
            &self.team_facts,
        );
        if let Some(book) = self.tool_ctx.memory.as_deref()
            && has_memory_tools(&self.tool_names())
        {
            suffix.push_str("\n\n");
            suffix.push_str(&context::memory_index(book, &self.workspace));
        }
        suffix
    }
}
