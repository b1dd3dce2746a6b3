//! What `crew up` and `crew worker` check before an agent starts: every agent has a model, and
//! the simulator never plays by surprise (and says SIMULATOR wherever it runs).

use crew_config::{SCRIPTED, TeamConfig};
use crew_protocol::{AgentName, joined};

use crate::cli::exit::CliError;

/// The scenario `crew demo` plays: a calculator library, whatever the repository is.
const DEMO_SCENARIO: &str = "demo";

/// Refuses a team with an agent without a model, or one that would play crew's demo in a
/// repository that is not the demo's folder or with a goal of the person's (the scenario
/// ignores it), unless `simulator` (`--simulator`) asks for it.
pub fn team(
    config: &TeamConfig,
    root: &std::path::Path,
    goal: bool,
    simulator: bool,
) -> Result<(), CliError> {
    no_model(&config.unconfigured_agents())?;
    let demo: Vec<AgentName> = config
        .agents()
        .filter(|a| {
            a.model.provider == SCRIPTED && a.model.scenario.as_deref() == Some(DEMO_SCENARIO)
        })
        .map(|a| a.name.get_ref().clone())
        .collect();
    if demo.is_empty() || simulator {
        return Ok(());
    }
    let why = if !crew_team::demo::is_demo_folder(root) {
        format!("{} is not a folder `crew demo` made", root.display())
    } else if goal {
        "the demo scenario ignores --goal".to_string()
    } else {
        return Ok(());
    };
    Err(CliError::Refused(format!(
        "{} would play crew's calculator demo (provider = \"scripted\", scenario = \"demo\": the offline simulator, not a model) and {why}; give them a model in crew.toml (`crew init` shows the choices), or pass --simulator to run the simulator anyway",
        joined(&demo, ", ")
    )))
}

/// Refuses to start `name` without a model.
pub fn worker(config: &TeamConfig, name: &AgentName) -> Result<(), CliError> {
    match config.agent(name) {
        Some(agent) if !agent.model.configured() => no_model(std::slice::from_ref(name)),
        _ => Ok(()),
    }
}

fn no_model(agents: &[AgentName]) -> Result<(), CliError> {
    if agents.is_empty() {
        return Ok(());
    }
    Err(CliError::Refused(format!(
        "no model configured for {} in crew.toml: give each a `model = {{ provider = … }}` line (its comments list them; `crew init --provider claude-code|codex|anthropic|openai` writes them); `crew demo` runs the simulator",
        joined(agents, ", ")
    )))
}

/// The line every simulated run says (on stderr, in the logs), or `None` for a real team.
pub fn simulator_line(config: &TeamConfig) -> Option<String> {
    config.simulated().then(|| {
        format!(
            "SIMULATOR: {} played by crew's offline simulator (provider = \"scripted\"), not a model",
            joined(&config.simulated_agents(), ", ")
        )
    })
}
