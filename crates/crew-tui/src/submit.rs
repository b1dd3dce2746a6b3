//! Dialogs: opening a prompt, and what submitting a prompt or confirming a question does.

use crate::event::Effect;
use crate::state::{AppState, Confirm, Level, Overlay, Prompt, PromptKind, new_field};
use crew_protocol::{InvalidName, joined};
use crew_store::{AgentName, NewTask, TaskId};

pub(crate) fn open_prompt(state: &mut AppState, kind: PromptKind) {
    let task = |id: &TaskId| state.workspace.tasks.iter().find(|t| t.id == *id);
    let fields: Vec<(String, String)> = match &kind {
        PromptKind::AddTask => vec![
            ("subject".into(), String::new()),
            ("description".into(), String::new()),
            ("blocked by (ids, comma separated)".into(), String::new()),
        ],
        PromptKind::Message { .. } => vec![("message".into(), String::new())],
        PromptKind::SendBack { .. } => vec![("note (what to change)".into(), String::new())],
        PromptKind::ReviewSendBack { id } => vec![(
            format!("note for {id}'s teammate (what to change)"),
            String::new(),
        )],
        PromptKind::ReviewDiscard { id } => vec![(
            format!("why discard {id} (its changes are taken back out)"),
            String::new(),
        )],
        PromptKind::Deny { request_id, from } => vec![(
            format!("deny {request_id}: a note for {from} (empty: none)"),
            String::new(),
        )],
        PromptKind::EditDeps { id } => vec![(
            "blocked by (ids, comma separated; empty: none)".into(),
            task(id)
                .map(|t| joined(&t.blocked_by, ", "))
                .unwrap_or_default(),
        )],
        PromptKind::Assign { id } => vec![(
            format!(
                "teammate ({}; empty: nobody)",
                joined(&state.workspace.teammates(), ", ")
            ),
            task(id)
                .and_then(|t| t.owner.as_ref())
                .map(AgentName::to_string)
                .unwrap_or_default(),
        )],
    };
    state.overlay = Some(Overlay::Prompt(Prompt {
        kind,
        fields: fields
            .into_iter()
            .map(|(label, text)| (label, new_field(&text)))
            .collect(),
        active: 0,
    }));
}

/// The prompt's effect. An incomplete prompt stays open with a hint.
pub(crate) fn submit_prompt(state: &mut AppState, prompt: Prompt) -> Vec<Effect> {
    let values: Vec<String> = prompt
        .fields
        .iter()
        .map(|(_, f)| f.lines().join("\n").trim().to_string())
        .collect();
    let first = values.first().cloned().unwrap_or_default();
    // Empty means "none" / "nobody" for these; for the others it is a slip.
    let may_be_empty = matches!(
        prompt.kind,
        PromptKind::EditDeps { .. } | PromptKind::Assign { .. } | PromptKind::Deny { .. }
    );
    if first.is_empty() && !may_be_empty {
        state.set_status(Level::Warning, format!("{} is empty", prompt.fields[0].0));
        state.overlay = Some(Overlay::Prompt(prompt));
        return Vec::new();
    }
    // Ids and names typed by the person are read here, once.
    let typed = match &prompt.kind {
        PromptKind::AddTask => ids(values.get(2).map_or("", String::as_str)).map(|blocked_by| {
            vec![Effect::AddTask(NewTask {
                subject: first.clone(),
                description: values.get(1).cloned().unwrap_or_default(),
                blocked_by,
                role: None,
            })]
        }),
        PromptKind::EditDeps { id } => ids(&first).map(|blocked_by| {
            vec![Effect::SetDeps {
                id: *id,
                blocked_by,
            }]
        }),
        PromptKind::Assign { id } => (!first.is_empty())
            .then(|| AgentName::parse(&first))
            .transpose()
            .map(|to| vec![Effect::Assign { id: *id, to }]),
        _ => Ok(Vec::new()),
    };
    match typed {
        Ok(effects) if !effects.is_empty() => return effects,
        Ok(_) => {}
        Err(e) => {
            state.set_status(Level::Warning, e.to_string());
            state.overlay = Some(Overlay::Prompt(prompt));
            return Vec::new();
        }
    }
    match &prompt.kind {
        PromptKind::AddTask | PromptKind::EditDeps { .. } | PromptKind::Assign { .. } => Vec::new(),
        PromptKind::Deny { request_id, .. } => vec![Effect::Respond {
            request_id: request_id.clone(),
            approve: false,
            note: (!first.is_empty()).then_some(first),
        }],
        PromptKind::Message { to } => vec![Effect::Send {
            to: to.clone(),
            text: first,
        }],
        PromptKind::ReviewSendBack { id } => {
            if let Some(view) = state.diff.as_mut() {
                view.outcome = Some(format!("sending {id} back..."));
            }
            vec![Effect::SendBackReview {
                id: *id,
                note: first,
            }]
        }
        PromptKind::ReviewDiscard { id } => {
            if let Some(view) = state.diff.as_mut() {
                view.outcome = Some(format!("discarding {id}..."));
            }
            vec![Effect::DiscardReview {
                id: *id,
                reason: first,
            }]
        }
        PromptKind::SendBack { to } => {
            if let Some(view) = state.diff.as_mut() {
                view.outcome = Some(format!("sent back to {to}"));
            }
            vec![Effect::Send {
                to: to.clone(),
                text: format!("Your changes were sent back for more work: {first}"),
            }]
        }
    }
}

/// Task ids as typed (`task_3` or `3`): separated by commas and/or spaces.
fn ids(text: &str) -> Result<Vec<TaskId>, InvalidName> {
    text.split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(TaskId::parse)
        .collect()
}

pub(crate) fn confirm(state: &mut AppState, what: Confirm) -> Vec<Effect> {
    match what {
        Confirm::Shutdown { name } => vec![Effect::RequestShutdown { name }],
        Confirm::StopTeam => vec![Effect::StopTeam],
        Confirm::ReleaseTask { id, .. } => vec![Effect::Assign { id, to: None }],
        Confirm::Always { request_id, rule } => {
            vec![Effect::AllowAndApprove { request_id, rule }]
        }
        Confirm::Discard { name } => {
            if let Some(view) = state.diff.as_mut() {
                view.outcome = Some(format!("discarding {name}..."));
            }
            vec![Effect::Discard { name }]
        }
    }
}
