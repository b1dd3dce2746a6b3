//! The header: a sandbox warning when commands run unconfined, SIMULATOR when the offline
//! simulator plays any agent, then team, repository, base
//! branch, agents by state, pending approvals, reviews, tokens, cost, spend against the team
//! budget, and "sandboxed" when the team's commands are confined.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::state::{AppState, SandboxState};
use crew_store::{AgentName, AgentState, dollars};

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    let theme = &state.theme;
    let model = &state.workspace;
    let style = theme.style("header");
    let names: Vec<AgentName> = std::iter::once(model.lead_name())
        .chain(model.teammates())
        .collect();
    // The place, longest first: a narrow screen drops the folder, then the base branch,
    // before it cuts what the team needs of the person (WAITING, approvals, the sandbox).
    let places = match &state.attached {
        Some(what) => vec![format!(" crew · {what} │ ")],
        None => vec![
            format!(
                " crew · {} · {} · base {} │ ",
                model.team_name(),
                state
                    .store
                    .clone()
                    .unwrap_or_else(|| state.root.display().to_string()),
                model.base_branch()
            ),
            format!(
                " crew · {} · base {} │ ",
                model.team_name(),
                model.base_branch()
            ),
            format!(" crew · {} │ ", model.team_name()),
        ],
    };
    let mut spans = Vec::new();
    // First with the sandbox warning, so a narrow screen cuts anything but these.
    // (Another tool's team, watched, is not crew's to simulate.)
    let simulated =
        state.attached.is_none() && model.config.as_ref().is_some_and(|c| c.simulated());
    if simulated {
        spans.push(Span::styled(" SIMULATOR │", theme.style("status.warning")));
    }
    if let Some(daemon) = &state.daemon {
        spans.push(Span::styled(
            format!("daemon {} · {} screen(s) │ ", daemon.pid, daemon.screens),
            style,
        ));
    }
    if let SandboxState::Unconfined(warning) = &state.sandbox {
        spans.insert(
            0,
            Span::styled(format!(" ⚠ {warning} │"), theme.style("status.warning")),
        );
    }
    for s in AgentState::ALL {
        let n = names
            .iter()
            .filter(|n| state.agent(n).is_some_and(|a| a.state == s))
            .count();
        if n > 0 {
            spans.push(crate::render::badge(state, Some(s)));
            spans.push(Span::styled(format!("{n} "), style));
        }
    }
    let unknown = names.iter().filter(|n| state.agent(n).is_none()).count();
    if unknown > 0 {
        spans.push(Span::styled(format!("unknown {unknown} "), style));
    }
    let pending = model.pending().len();
    let approvals = format!("│ approvals {pending} ");
    spans.push(if pending > 0 {
        Span::styled(approvals, theme.style("msg.pending"))
    } else {
        Span::styled(approvals, style)
    });
    // Counted only when some wait, so the header keeps its room for the rest.
    if !state.reviews.is_empty() {
        spans.push(Span::styled(
            format!("│ reviews {} ", state.reviews.len()),
            theme.style("msg.pending"),
        ));
    }
    // Before the spending, which a narrow screen cuts first.
    if state.sandbox == SandboxState::Confined {
        spans.push(Span::styled("│ sandboxed ", style));
    }
    let tokens: u64 = model.agents.values().map(|a| a.tokens).sum();
    let cached: u64 = model.agents.values().map(|a| a.cache.read).sum();
    let cached = if cached > 0 {
        format!("({} from cache) ", tokens_text(cached))
    } else {
        String::new()
    };
    spans.push(Span::styled(
        format!("│ tokens {} {cached}", tokens_text(tokens)),
        style,
    ));
    // Only agents whose provider reports a cost (or that have a price in crew.toml) count;
    // the others are said to be unknown, not left out.
    let costs: Vec<u64> = model
        .agents
        .values()
        .filter_map(|a| a.cost_micros)
        .collect();
    let unknown = model.agents.len() - costs.len();
    let cost = match (costs.is_empty(), unknown) {
        (true, 0) => None,
        (true, _) => Some("cost unknown".to_string()),
        (false, 0) => Some(dollars(costs.iter().sum())),
        (false, n) => Some(format!("{} + {n} unknown", dollars(costs.iter().sum()))),
    };
    if let Some(cost) = cost {
        spans.push(Span::styled(format!("│ {cost} "), style));
    }
    if let Some(text) = budget_text(state) {
        spans.push(Span::styled(text, theme.style("msg.pending")));
    }
    let rest: usize = spans.iter().map(Span::width).sum();
    let room = usize::from(area.width).saturating_sub(rest);
    let place = places
        .iter()
        .find(|p| Span::raw(p.as_str()).width() <= room)
        .or(places.last())
        .cloned()
        .unwrap_or_default();
    let at =
        usize::from(simulated) + usize::from(matches!(state.sandbox, SandboxState::Unconfined(_)));
    spans.insert(at, Span::styled(place, style));

    frame.render_widget(Paragraph::new(Line::from(spans)).style(style), area);
}

/// The team's spend against `[budget]` (raised by each approved budget request), when set.
fn budget_text(state: &AppState) -> Option<String> {
    use crew_team::run::budget::{Scope, answers};
    let model = &state.workspace;
    let budget = model.config.as_ref()?.budget;
    let times = answers(&model.requests, Scope::Team).raised + 1;
    let agents = || model.agents.values();
    let mut parts = Vec::new();
    if let Some(max) = budget.max_turns {
        let spent: u64 = agents().map(|a| a.turns).sum();
        parts.push(format!("{spent}/{} calls", max.saturating_mul(times)));
    }
    if let Some(max) = budget.max_tokens {
        let spent: u64 = agents().map(|a| a.tokens).sum();
        parts.push(format!(
            "{}/{} tokens",
            tokens_text(spent),
            tokens_text(max.saturating_mul(times))
        ));
    }
    if let Some(max) = budget.max_usd {
        let spent: u64 = agents().filter_map(|a| a.cost_micros).sum();
        parts.push(format!("{}/${:.2}", dollars(spent), max * times as f64));
    }
    (!parts.is_empty()).then(|| format!("│ budget {} ", parts.join(" · ")))
}

/// A token count in a few characters: `950`, `12k`, `3M`.
pub(crate) fn tokens_text(n: u64) -> String {
    match n {
        n if n < 10_000 => n.to_string(),
        n if n < 10_000_000 => format!("{}k", n / 1000),
        n => format!("{}M", n / 1_000_000),
    }
}
