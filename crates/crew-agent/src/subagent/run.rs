//! Building and running one subagent, and what goes back to the caller.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio_util::sync::CancellationToken;

use super::fork::SubagentLink;
use super::tool::{AgentInput, Withheld};
use super::{AGENT_TOOL, SubagentContext, SubagentRole, SubagentSettings};
use crate::config::{AgentConfig, CompactionThresholds, Limits};
use crate::context::DEFAULT_RULES;
use crate::emitter::Emitter;
use crate::event::{AgentEvent, EventSink};
use crate::result::StopReason;
use crate::runtime::Agent;
use crate::verdict;
use crew_model::{ModelProvider, ModelRequest, RetryPolicy};
use crew_store::message::new_id;
use crew_tools::permissions::PermissionPolicy;
use crew_tools::{
    Hooks, Pipeline, Prompter, ReadState, Sandbox, ToolError, ToolOutput, ToolRegistry,
};

/// What a subagent takes from the agent that starts it.
pub(crate) struct Parent {
    pub name: crew_store::AgentName,
    /// The caller's provider, retries included.
    pub model: Arc<dyn ModelProvider>,
    pub model_name: String,
    /// The caller's tools, `agent` not among them.
    pub registry: ToolRegistry,
    pub permissions: Arc<PermissionPolicy>,
    pub hooks: Hooks,
    pub prompter: Option<Arc<dyn Prompter>>,
    pub workspace: PathBuf,
    pub repo_root: PathBuf,
    pub sandbox: Sandbox,
    /// The caller's record of what it read, copied into a fork.
    pub read_state: ReadState,
    pub limits: Limits,
    pub compaction: CompactionThresholds,
    pub emitter: Arc<Emitter>,
    pub transcript: PathBuf,
    pub link: Arc<SubagentLink>,
    pub settings: SubagentSettings,
    /// Subagents started so far (names their ids and side transcripts).
    pub started: AtomicU32,
}

/// Who a subagent is, for its SubagentStop hooks and its events.
#[derive(Debug, Clone)]
pub(crate) struct SubagentIdentity {
    /// `sub<n>`, unique in the caller's session.
    pub id: String,
    pub role: SubagentRole,
    pub parent_transcript: PathBuf,
}

/// `<parent transcript without .jsonl>/<id>.jsonl`: in a folder named after the caller's
/// session, beside the caller's transcript (whose readers, the screen among them, take only the
/// files directly in an agent's folder as its own).
fn side_transcript(parent: &Path, id: &str) -> PathBuf {
    parent.with_extension("").join(format!("{id}.jsonl"))
}

/// The subagent's tools. Fresh: the caller's tools the role allows. Fork: the caller's tool
/// list as it was sent, those the role does not allow (and `agent`) refused when called.
fn registry_for(
    parent: &Parent,
    role: SubagentRole,
    fork: Option<&ModelRequest>,
) -> Result<ToolRegistry, ToolError> {
    let mut registry = ToolRegistry::new();
    let register = |registry: &mut ToolRegistry, tool| {
        registry
            .register(tool)
            .map_err(|e| ToolError::Refused(format!("subagent tools: {e}")))
    };
    match fork {
        None => {
            for name in parent.registry.names() {
                if let Some(tool) = parent.registry.get(name)
                    && role.allows(tool.as_ref())
                {
                    register(&mut registry, tool)?;
                }
            }
        }
        Some(request) => {
            for definition in &request.tools {
                let tool = parent.registry.get(&definition.name);
                match tool {
                    Some(tool) if role.allows(tool.as_ref()) => register(&mut registry, tool)?,
                    _ => {
                        let why = if definition.name == AGENT_TOOL {
                            "subagents cannot start subagents".to_string()
                        } else {
                            format!(
                                "`{}` is not available to subagents of role {role}",
                                definition.name
                            )
                        };
                        register(
                            &mut registry,
                            Arc::new(Withheld {
                                definition: definition.clone(),
                                why,
                            }),
                        )?;
                    }
                }
            }
        }
    }
    Ok(registry)
}

/// Runs one subagent to its end and returns its report as the `agent` tool's result.
pub(super) async fn run_subagent(
    parent: Arc<Parent>,
    input: AgentInput,
    cancel: CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let role = input.role;
    let fork = match input.context {
        SubagentContext::Fresh => None,
        SubagentContext::Fork => Some(parent.link.fork_request().ok_or_else(|| {
            ToolError::Refused("there is no conversation to fork yet".to_string())
        })?),
    };
    let n = parent.started.fetch_add(1, Ordering::SeqCst) + 1;
    let id = format!("sub{n}");
    let transcript = side_transcript(&parent.transcript, &id);
    let pipeline = Pipeline {
        registry: registry_for(&parent, role, fork.as_ref())?,
        permissions: Arc::clone(&parent.permissions),
        hooks: parent.hooks.clone(),
        prompter: parent.prompter.clone(),
    };
    let config = AgentConfig {
        name: parent.name.clone(),
        role: format!("{role} subagent"),
        model: Arc::clone(&parent.model),
        model_name: parent.model_name.clone(),
        pipeline,
        workspace: parent.workspace.clone(),
        repo_root: parent.repo_root.clone(),
        limits: Limits {
            max_turns: parent.settings.max_turns.get(),
            ..parent.limits
        },
        retry: RetryPolicy::default(),
        compaction: parent.compaction,
        sandbox: parent.sandbox.clone(),
    };
    // The caller's pane shows what the subagent is doing: each tool it calls.
    let sink = {
        let (emitter, id) = (Arc::clone(&parent.emitter), id.clone());
        EventSink::new(move |event| {
            if let AgentEvent::ToolUse { name, .. } = event {
                emitter.emit(AgentEvent::SubagentTool {
                    id: id.clone(),
                    tool: name,
                });
            }
        })
    };
    let model = Arc::clone(&parent.model);
    let mut child = Agent::assemble(config, model, sink, new_id("session"), transcript.clone())
        .map_err(|e| ToolError::Refused(format!("subagent not started: {e}")))?;
    child.subagent = Some(SubagentIdentity {
        id: id.clone(),
        role,
        parent_transcript: parent.transcript.clone(),
    });
    let input_text = match fork {
        None => {
            child.set_rules(format!(
                "{DEFAULT_RULES}\n\n# Your job\n{}",
                role.instructions()
            ));
            input.prompt.clone()
        }
        Some(request) => {
            child.load_history(&request.messages);
            child.tool_ctx.read_state = parent.read_state.snapshot();
            child.fork_template = Some(request);
            format!(
                "{}\nYou were forked from {}'s conversation above; the calls of its last reply \
                 are not yours to finish. Your task:\n\n{}\n\nWhen done, reply with your final \
                 report: only that goes back to {}.",
                role.instructions(),
                parent.name,
                input.prompt,
                parent.name
            )
        }
    };
    parent.emitter.emit(AgentEvent::SubagentStart {
        id: id.clone(),
        role,
        context: input.context,
        description: input.description.clone(),
        transcript: transcript.clone(),
    });
    let result = child.run_turn(input_text, cancel).await;
    parent.link.add_spent(result.usage);
    let completed = result.stop_reason == StopReason::Completed;
    let verdict = (role == SubagentRole::Verify).then(|| verdict::parse(&result.output));
    parent.emitter.emit(AgentEvent::SubagentEnd {
        id: id.clone(),
        stop_reason: result.stop_reason,
        calls: result.turns,
        usage: result.usage,
        verdict: verdict.map(verdict::label).map(str::to_string),
    });
    let mut head = format!(
        "subagent {id} ({role}, {}) {} after {} model call(s)",
        match input.context {
            SubagentContext::Fresh => "fresh",
            SubagentContext::Fork => "fork",
        },
        if completed {
            "finished".to_string()
        } else {
            format!("stopped ({})", result.reason)
        },
        result.turns
    );
    if let Some(verdict) = verdict {
        head.push_str(&format!("; verdict: {}", verdict::label(verdict)));
    }
    head.push_str(&format!("; transcript: {}", transcript.display()));
    let report = if result.output.trim().is_empty() {
        "(no report)".to_string()
    } else {
        result.output.trim().to_string()
    };
    let content = format!("{head}\n\n{report}");
    Ok(if completed {
        ToolOutput::ok(content)
    } else {
        ToolOutput::error(content)
    })
}

impl Agent {
    /// Offers this agent the `agent` tool (see [`crate::subagent`]); nothing when
    /// `settings.enabled` is false or no role is enabled. Call before the first turn.
    pub fn enable_subagents(&mut self, settings: SubagentSettings) {
        if !settings.enabled || settings.roles.is_empty() || self.subagent.is_some() {
            return;
        }
        let link = Arc::new(SubagentLink::default());
        let current = &self.pipeline;
        let parent = Parent {
            name: self.name.clone(),
            model: Arc::clone(&self.model),
            model_name: self.model_name.clone(),
            registry: current.registry.clone(),
            permissions: Arc::clone(&current.permissions),
            hooks: current.hooks.clone(),
            prompter: current.prompter.clone(),
            workspace: self.workspace.clone(),
            repo_root: self.repo_root.clone(),
            sandbox: self.tool_ctx.sandbox.clone(),
            read_state: self.tool_ctx.read_state.clone(),
            limits: self.limits,
            compaction: self.compaction,
            emitter: Arc::clone(&self.emitter),
            transcript: self.transcript_path().to_path_buf(),
            link: Arc::clone(&link),
            settings,
            started: AtomicU32::new(0),
        };
        let mut registry = current.registry.clone();
        if let Err(e) = registry.register(Arc::new(super::AgentTool {
            parent: Arc::new(parent),
        })) {
            tracing::warn!(agent = %self.name, "agent tool not offered: {e}");
            return;
        }
        self.pipeline = Arc::new(Pipeline {
            registry,
            permissions: Arc::clone(&current.permissions),
            hooks: current.hooks.clone(),
            prompter: current.prompter.clone(),
        });
        self.subagent_link = Some(link);
        self.refresh_tools();
    }
}
