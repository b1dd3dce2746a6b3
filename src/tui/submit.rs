//! Dialogs: opening a prompt, and what submitting a prompt or confirming a question does.

use crate::store::NewTask;
use crate::tui::event::Effect;
use crate::tui::state::{AppState, Confirm, Level, Overlay, Prompt, PromptKind, new_field};

pub fn open_prompt(state: &mut AppState, kind: PromptKind) {
    let labels: &[&str] = match &kind {
        PromptKind::AddTask => &[
            "subject",
            "description",
            "blocked by (ids, comma separated)",
        ],
        PromptKind::Message { .. } => &["message"],
        PromptKind::SendBack { .. } => &["note (what to change)"],
    };
    state.overlay = Some(Overlay::Prompt(Prompt {
        kind,
        fields: labels
            .iter()
            .map(|l| (l.to_string(), new_field("")))
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
    if first.is_empty() {
        state.set_status(Level::Warning, format!("{} is empty", prompt.fields[0].0));
        state.overlay = Some(Overlay::Prompt(prompt));
        return Vec::new();
    }
    match &prompt.kind {
        PromptKind::AddTask => vec![Effect::AddTask(NewTask {
            subject: first,
            description: values.get(1).cloned().unwrap_or_default(),
            blocked_by: values
                .get(2)
                .map(|b| {
                    b.split([',', ' '])
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            role: None,
        })],
        PromptKind::Message { to } => vec![Effect::Send {
            to: to.clone(),
            text: first,
        }],
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

pub fn confirm(state: &mut AppState, what: Confirm) -> Vec<Effect> {
    match what {
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
