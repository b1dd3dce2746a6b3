//! Budgets: what the team (`[budget]`) and each agent (`budget = {...}`) may spend, in model
//! calls, tokens, dollars and wall time. Spend is read from the agents' statuses in the store. A worker
//! checks before it takes new work; when a budget is reached it pauses and asks the person with a
//! `budget_request` (shown in the approvals pane): approving raises the budget by its size once
//! more, rejecting stops the worker.

use crew_config::Budget;
use crew_store::requests::{RequestInfo, RequestState};
use crew_store::{AgentName, AgentStatus, MessageKind};

/// Turns, tokens and millionths of a dollar spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spend {
    pub turns: u64,
    pub tokens: u64,
    pub micros: u64,
}

impl Spend {
    /// What the agents of `statuses` spent together.
    pub(crate) fn of(statuses: &[AgentStatus]) -> Spend {
        statuses
            .iter()
            .fold(Spend::default(), |total, status| Spend {
                turns: total.turns + status.turns,
                tokens: total.tokens + status.tokens,
                micros: total.micros + status.cost_micros.unwrap_or(0),
            })
    }
}

/// Which limit of `budget` (each multiplied by `times`) `spend` has reached, said for the person.
pub(crate) fn reached(budget: &Budget, times: u64, spend: Spend) -> Option<String> {
    if let Some(max) = budget.max_turns.map(|m| m.saturating_mul(times))
        && spend.turns >= max
    {
        return Some(format!("{} of {max} model calls", spend.turns));
    }
    if let Some(max) = budget.max_tokens.map(|m| m.saturating_mul(times))
        && spend.tokens >= max
    {
        return Some(format!("{} of {max} tokens", spend.tokens));
    }
    if let Some(max) = budget.max_usd.map(|m| m * times as f64)
        && spend.micros as f64 / 1e6 >= max
    {
        return Some(format!("${:.2} of ${max:.2}", spend.micros as f64 / 1e6));
    }
    None
}

/// Who a budget is for: the team, or one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    Team,
    Agent(&'a AgentName),
}

impl Scope<'_> {
    fn label(self) -> String {
        match self {
            Scope::Team => "team".to_string(),
            Scope::Agent(name) => name.to_string(),
        }
    }
}

/// The person's answers so far to budget requests for `scope`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answers {
    /// Approved requests: each raised the budget by its size once more.
    pub raised: u64,
    pub pending: bool,
    pub stopped: bool,
}

pub fn answers(requests: &[RequestInfo], scope: Scope<'_>) -> Answers {
    let label = scope.label();
    let mut out = Answers::default();
    for r in requests.iter().filter(|r| {
        r.kind == MessageKind::BudgetRequest
            && r.request.extra.get("scope").and_then(|s| s.as_str()) == Some(label.as_str())
    }) {
        match r.state {
            RequestState::Approved => out.raised += 1,
            RequestState::Pending => out.pending = true,
            RequestState::Rejected => out.stopped = true,
            RequestState::Expired => {}
        }
    }
    out
}

/// The request that asks the person to raise `scope`'s budget or stop.
pub(crate) fn request(from: &AgentName, scope: Scope<'_>, why: &str) -> crew_store::Draft {
    let mut extra = serde_json::Map::new();
    extra.insert("scope".into(), scope.label().into());
    let whose = match scope {
        Scope::Team => "the team's budget".to_string(),
        Scope::Agent(name) => format!("{name}'s budget"),
    };
    crew_store::Draft {
        from: from.clone(),
        to: crew_protocol::USER,
        kind: MessageKind::BudgetRequest,
        text: Some(format!(
            "{whose} is reached ({why}); new work is paused. Approve to raise it by its \
             size once more, reject to stop."
        )),
        request: true,
        extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_reached_at_its_limit_times_the_raises() {
        let budget = Budget {
            max_turns: Some(10),
            max_usd: Some(1.5),
            ..Budget::default()
        };
        let spend = |turns, micros| Spend {
            turns,
            tokens: 0,
            micros,
        };
        assert_eq!(reached(&budget, 1, spend(9, 0)), None);
        assert_eq!(
            reached(&budget, 1, spend(10, 0)).as_deref(),
            Some("10 of 10 model calls")
        );
        assert_eq!(reached(&budget, 2, spend(10, 0)), None);
        assert_eq!(
            reached(&budget, 1, spend(0, 1_500_000)).as_deref(),
            Some("$1.50 of $1.50")
        );
        assert_eq!(reached(&Budget::default(), 1, spend(u64::MAX, 0)), None);
    }
}
