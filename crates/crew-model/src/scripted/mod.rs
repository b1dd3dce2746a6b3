//! The scripted provider: a deterministic, offline simulator that plays a scenario file.
//! It drives the demo and the tests and never claims to be a model.

mod reply;
mod scenario;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::stream::{self, BoxStream, StreamExt};

use super::ModelProvider;
use super::error::ModelError;
use super::event::StreamEvent;
use super::types::ModelRequest;

pub use scenario::{Rule, Scenario, ScenarioError, ScriptedError, ScriptedStop, ToolCall};

/// The scenario used when a spec names none: echoes the latest user text.
/// Scenarios shipped inside the binary, by name: `scenario = "demo"` in crew.toml needs no file.
const ECHO: &str = include_str!("../../../../assets/scenarios/echo.toml");
const BUILTIN: &[(&str, &str)] = &[
    ("echo", ECHO),
    (
        "demo",
        include_str!("../../../../assets/scenarios/demo.toml"),
    ),
];

/// Plays a scenario: the first rule whose conditions hold and whose `times` budget is left
/// produces the reply.
#[derive(Debug)]
pub struct ScriptedProvider {
    scenario: Scenario,
    /// How often each rule has fired, by rule position.
    fired: Mutex<Vec<u32>>,
    /// Source of tool-call ids, unique for this provider's lifetime.
    next_id: AtomicU64,
}

impl ScriptedProvider {
    pub fn new(scenario: Scenario) -> Self {
        let fired = Mutex::new(vec![0; scenario.rules.len()]);
        Self {
            scenario,
            fired,
            next_id: AtomicU64::new(1),
        }
    }

    /// Loads the scenario at `path`.
    pub fn from_file(path: &Path) -> Result<Self, ScenarioError> {
        Ok(Self::new(Scenario::load(path)?))
    }

    /// The built-in echo scenario (`assets/scenarios/echo.toml`).
    pub fn echo() -> Result<Self, ScenarioError> {
        Scenario::parse(ECHO, Path::new("assets/scenarios/echo.toml")).map(Self::new)
    }

    /// A scenario shipped inside the binary, if `name` is one (`echo`, `demo`).
    pub fn builtin(name: &str) -> Option<Result<Self, ScenarioError>> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        let origin = format!("assets/scenarios/{name}.toml");
        Some(Scenario::parse(text, Path::new(&origin)).map(Self::new))
    }

    /// The names of the scenarios shipped inside the binary, for messages.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(name, _)| *name).collect()
    }

    /// Finds the first applicable rule and uses up one of its `times`.
    fn pick(&self, situation: &scenario::Situation<'_>) -> Option<&Rule> {
        // A panic elsewhere cannot leave the counters inconsistent, so a poisoned lock is fine.
        let mut fired = self.fired.lock().unwrap_or_else(|e| e.into_inner());
        let index = self
            .scenario
            .rules
            .iter()
            .enumerate()
            .position(|(i, rule)| {
                rule.times.is_none_or(|times| fired[i] < times) && rule.matches(situation)
            })?;
        fired[index] += 1;
        Some(&self.scenario.rules[index])
    }
}

impl ModelProvider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn is_simulated(&self) -> bool {
        true
    }

    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        let situation = scenario::Situation::of(&req);
        let items = match self.pick(&situation) {
            Some(rule) => {
                let first_id = self
                    .next_id
                    .fetch_add(rule.tool_calls.len() as u64, Ordering::Relaxed);
                reply::play(rule, &situation, first_id)
            }
            None => {
                tracing::debug!(scenario = %self.scenario.origin.display(), "no scripted rule matched");
                reply::fallback(&self.scenario.origin, &situation)
            }
        };
        stream::iter(items).boxed()
    }
}

#[cfg(test)]
mod builtin_tests {
    use super::*;

    #[test]
    fn every_built_in_scenario_parses_and_unknown_names_are_none() {
        for (name, _) in BUILTIN {
            ScriptedProvider::builtin(name).unwrap().unwrap();
        }
        assert!(ScriptedProvider::builtin("nope").is_none());
        assert_eq!(ScriptedProvider::builtin_names(), ["echo", "demo"]);
    }
}
