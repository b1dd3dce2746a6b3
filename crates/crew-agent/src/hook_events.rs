//! The agent's side of the hook events outside tool calls: SessionStart and UserPromptSubmit
//! before a turn's input goes in, PreCompact before a compaction, and what a hook's
//! `continue: false` does to the turn.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::event::{AgentEvent, CompactionTrigger};
use crate::result::StopReason;
use crate::runtime::Agent;
use crate::turn::Stop;
use crew_model::{ChatMessage, ContentBlock, Role};
use crew_tools::memory::keep_hook_memories;
use crew_tools::{HookEvent, HookRun, Note, StopDecision, StopGuard};

impl Agent {
    /// Runs the SessionStart hooks (first turn of the session only) and the UserPromptSubmit
    /// hooks. `Ok` is the user message to add (the input, then the hooks' context); `Err` is
    /// the stop when a UserPromptSubmit hook blocked the prompt (which then never reaches the
    /// model or the history) or a hook said not to continue.
    pub(crate) async fn opening_hooks(
        &self,
        input: &str,
        cancel: &CancellationToken,
    ) -> Result<ChatMessage, Stop> {
        let mut context = Vec::new();
        if self.turns == 1 {
            let start = self
                .hook_event(
                    HookEvent::SessionStart,
                    Some("startup"),
                    json!({"source": "startup"}),
                    cancel,
                )
                .await;
            halt_on(&start)?;
            context.extend(start.context().into_iter().map(str::to_string));
        }
        let prompt = self
            .hook_event(
                HookEvent::UserPromptSubmit,
                None,
                json!({"prompt": input}),
                cancel,
            )
            .await;
        halt_on(&prompt)?;
        if !prompt.blocks.is_empty() {
            return Err((
                StopReason::HookStopped,
                format!(
                    "a UserPromptSubmit hook blocked the prompt: {}",
                    prompt.blocks.join("; ")
                ),
            ));
        }
        context.extend(prompt.context().into_iter().map(str::to_string));
        let mut content = vec![ContentBlock::Text {
            text: input.to_string(),
        }];
        content.extend(context.into_iter().map(|text| ContentBlock::Text {
            text: format!("[hook context] {text}"),
        }));
        Ok(ChatMessage {
            role: Role::User,
            content,
        })
    }

    /// Runs the hooks of the agent's end: `Stop`, or `SubagentStop` (matcher: the role) for
    /// a subagent, whose payload also names it and its caller's transcript.
    pub(crate) async fn stop_hooks(
        &self,
        guard: &mut StopGuard,
        cancel: &CancellationToken,
    ) -> (HookEvent, StopDecision) {
        let hooks = &self.pipeline.hooks;
        let Some(me) = &self.subagent else {
            let decision = hooks.run_stop(guard, &self.workspace, cancel).await;
            return (HookEvent::Stop, decision);
        };
        let fields = json!({
            "agent": self.name,
            "agent_id": me.id,
            "agent_type": me.role,
            "session_id": self.session(),
            "transcript_path": self.transcript_path(),
            "parent_transcript_path": me.parent_transcript,
        });
        let event = HookEvent::SubagentStop;
        let role = me.role.as_str();
        let decision = hooks
            .run_stop_as(event, Some(role), fields, guard, &self.workspace, cancel)
            .await;
        (event, decision)
    }

    /// Runs the PreCompact hooks; the stop if one said not to continue.
    pub(crate) async fn pre_compact_hooks(
        &self,
        trigger: CompactionTrigger,
        cancel: &CancellationToken,
    ) -> Option<Stop> {
        let name = match trigger {
            CompactionTrigger::Proactive => "proactive",
            CompactionTrigger::Reactive => "reactive",
        };
        let run = self
            .hook_event(
                HookEvent::PreCompact,
                Some(name),
                json!({"trigger": name}),
                cancel,
            )
            .await;
        halt_on(&run).err()
    }

    /// Runs one event's hooks with the session's facts in the payload, and records what they
    /// said for the person (a block these events cannot honour becomes a warning).
    async fn hook_event(
        &self,
        event: HookEvent,
        target: Option<&str>,
        fields: serde_json::Value,
        cancel: &CancellationToken,
    ) -> HookRun {
        let mut fields = fields;
        if let Some(map) = fields.as_object_mut() {
            map.insert("session_id".into(), self.session().into());
            map.insert("agent".into(), self.name.as_str().into());
            map.insert("transcript_path".into(), json!(self.transcript_path()));
        }
        let run = self
            .pipeline
            .hooks
            .run_event(event, target, fields, &self.workspace, cancel)
            .await;
        let mut notes = run.notes.clone();
        if event != HookEvent::UserPromptSubmit {
            notes.extend(run.blocks.iter().map(|reason| Note::Warning {
                text: format!("a {event:?} hook cannot block; it said: {reason}"),
            }));
        }
        self.hook_notes(event, notes);
        run
    }

    /// Keeps the memories hooks asked for, then puts hook notes in the transcript (and the
    /// caller's event stream).
    pub(crate) fn hook_notes(&self, event: HookEvent, mut notes: Vec<Note>) {
        keep_hook_memories(self.tool_ctx.memory.as_deref(), &mut notes);
        if !notes.is_empty() {
            self.emitter.emit(AgentEvent::HookNotes { event, notes });
        }
    }
}

/// A hook's `continue: false`, as the turn's stop.
pub(crate) fn halted(reason: &str) -> Stop {
    (
        StopReason::HookStopped,
        format!("a hook stopped the agent: {reason}"),
    )
}

fn halt_on(run: &HookRun) -> Result<(), Stop> {
    match &run.halt {
        Some(reason) => Err(halted(reason)),
        None => Ok(()),
    }
}
