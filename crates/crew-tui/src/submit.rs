//! Dialogs: opening a prompt, and what submitting a prompt or confirming a question does.

use crate::event::Effect;
use crate::state::{AppState, Confirm, Level, Overlay, Prompt, PromptKind, new_field};
use crew_store::NewTask;

pub fn open_prompt(state: &mut AppState, kind: PromptKind) {
    let task = |id: &str| state.workspace.tasks.iter().find(|t| t.id == id);
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
        PromptKind::EditDeps { id } => vec![(
            "blocked by (ids, comma separated; empty: none)".into(),
            task(id)
                .map(|t| t.blocked_by.join(", "))
                .unwrap_or_default(),
        )],
        PromptKind::Assign { id } => vec![(
            format!(
                "teammate ({}; empty: nobody)",
                state.workspace.teammates().join(", ")
            ),
            task(id).and_then(|t| t.owner.clone()).unwrap_or_default(),
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
pub fn submit_prompt(state: &mut AppState, prompt: Prompt) -> Vec<Effect> {
    let values: Vec<String> = prompt
        .fields
        .iter()
        .map(|(_, f)| f.lines().join("\n").trim().to_string())
        .collect();
    let first = values.first().cloned().unwrap_or_default();
    // Empty means "none" / "nobody" for these; for the others it is a slip.
    let may_be_empty = matches!(
        prompt.kind,
        PromptKind::EditDeps { .. } | PromptKind::Assign { .. }
    );
    if first.is_empty() && !may_be_empty {
        state.set_status(Level::Warning, format!("{} is empty", prompt.fields[0].0));
        state.overlay = Some(Overlay::Prompt(prompt));
        return Vec::new();
    }
    match &prompt.kind {
        PromptKind::AddTask => vec![Effect::AddTask(NewTask {
            subject: first,
            description: values.get(1).cloned().unwrap_or_default(),
            blocked_by: values.get(2).map(|b| ids(b)).unwrap_or_default(),
            role: None,
        })],
        PromptKind::EditDeps { id } => vec![Effect::SetDeps {
            id: id.clone(),
            blocked_by: ids(&first),
        }],
        PromptKind::Assign { id } => vec![Effect::Assign {
            id: id.clone(),
            to: (!first.is_empty()).then_some(first),
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
                id: id.clone(),
                note: first,
            }]
        }
        PromptKind::ReviewDiscard { id } => {
            if let Some(view) = state.diff.as_mut() {
                view.outcome = Some(format!("discarding {id}..."));
            }
            vec![Effect::DiscardReview {
                id: id.clone(),
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

/// Task ids as typed: separated by commas and/or spaces.
fn ids(text: &str) -> Vec<String> {
    text.split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

pub fn confirm(state: &mut AppState, what: Confirm) -> Vec<Effect> {
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
