//! `crew init`: a commented crew.toml for the agents the person already has (Claude Code,
//! Codex, an API key, a local model server), and crew's runtime folders kept out of git.

use std::fs;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, anyhow};

use crate::cli::agents_found::{Cli, Found, list_models};
use crate::cli::args::{InitArgs, InitProvider};
use crate::cli::exit::CliError;
use crate::cli::project::find_upwards;
use crew_config::{FILE_NAME, InitModel, InitModels, TeamConfig, init_template};
use crew_git::{current_branch, exclude_from_git};
use crew_protocol::validate_name;
use crew_store::workspace::RUNTIME_FOLDERS;

pub fn run(start: &Path, args: InitArgs) -> anyhow::Result<()> {
    let root = find_upwards(start, ".git").ok_or_else(|| {
        anyhow!(
            "{} is not inside a git repository; run `git init` first (crew keeps a worktree per writing teammate)",
            start.display()
        )
    })?;
    let config_path = root.join(FILE_NAME);
    if config_path.exists() {
        return Err(anyhow!(
            "{} already exists; nothing was changed (edit it, or remove it to start over)",
            config_path.display()
        ));
    }
    let team = match args.team.clone() {
        Some(team) => {
            validate_name("team name", &team)?;
            team
        }
        None => team_name_from(&root),
    };
    let base = match args.base.clone() {
        Some(base) => base,
        None => current_branch(&root).unwrap_or_else(|| "main".to_string()),
    };
    let found = Found::look()?;
    let chosen = choose(&args, &found)?;
    let text = init_template(&team, &base, &chosen.models);
    // Check before writing anything: the template must be a valid config for this team.
    TeamConfig::parse(&config_path, &text)?;
    fs::write(&config_path, text).with_context(|| format!("writing {}", config_path.display()))?;
    let exclude = exclude_from_git(&root, RUNTIME_FOLDERS)?;
    println!(
        "wrote {} (team {team}, base branch {base})",
        config_path.display()
    );
    println!(
        "excluded {} in {}",
        RUNTIME_FOLDERS.join(" "),
        exclude.display()
    );
    for line in &chosen.said {
        println!("{line}");
    }
    Ok(())
}

/// One way to staff the team, as the choice list shows it.
#[derive(Debug, Clone)]
struct Candidate {
    provider: InitProvider,
    /// What it is and what it costs or needs.
    label: String,
    lead: Option<InitModel>,
    teammates: InitModel,
}

/// The team's models and what to tell the person about them.
struct Chosen {
    models: InitModels,
    said: Vec<String>,
}

const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
const OPENAI_MODEL: &str = "gpt-4.1";
/// At most this many of one local server's models are offered.
const MODELS_OFFERED: usize = 5;

fn model(provider: InitProvider, model: Option<&str>, base_url: Option<&str>) -> InitModel {
    InitModel {
        provider: provider.name().to_string(),
        model: model.map(str::to_string),
        base_url: base_url.map(str::to_string),
    }
}

/// What was found, in crew's order of preference.
fn candidates(found: &Found) -> Vec<Candidate> {
    let mut leads = Vec::new();
    if let Cli::Usable { version } = &found.claude {
        leads.push(Candidate {
            provider: InitProvider::ClaudeCode,
            label: format!(
                "Claude Code {version} (`claude` on PATH; runs on your Claude plan or account)"
            ),
            lead: Some(model(InitProvider::ClaudeCode, None, None)),
            teammates: model(InitProvider::ClaudeCode, None, None),
        });
    }
    let codex_at = leads.len();
    if found.anthropic_key {
        let m = model(InitProvider::Anthropic, Some(ANTHROPIC_MODEL), None);
        leads.push(Candidate {
            provider: InitProvider::Anthropic,
            label: format!(
                "Anthropic API, {ANTHROPIC_MODEL} (ANTHROPIC_API_KEY is set; billed per token)"
            ),
            lead: Some(m.clone()),
            teammates: m,
        });
    }
    if found.openai_key {
        let m = model(InitProvider::Openai, Some(OPENAI_MODEL), None);
        leads.push(Candidate {
            provider: InitProvider::Openai,
            label: format!("OpenAI API, {OPENAI_MODEL} (OPENAI_API_KEY is set; billed per token)"),
            lead: Some(m.clone()),
            teammates: m,
        });
    }
    for server in &found.local {
        for name in server.models.iter().take(MODELS_OFFERED) {
            let m = model(InitProvider::Openai, Some(name), Some(&server.base_url));
            leads.push(Candidate {
                provider: InitProvider::Openai,
                label: format!(
                    "{name} on {} at {} (local; free, as fast as this machine)",
                    server.kind, server.base_url
                ),
                lead: Some(m.clone()),
                teammates: m,
            });
        }
    }
    if let Cli::Usable { version } = &found.codex {
        // Codex runs teammates only: the lead takes the best of the rest, if any.
        let lead = leads.first().and_then(|c| c.lead.clone());
        let lead_text = match &lead {
            Some(l) => format!("the lead on {}", l.provider),
            None => "no lead: a Codex lead is not supported, so the lead needs one of the others"
                .to_string(),
        };
        leads.insert(
            codex_at,
            Candidate {
                provider: InitProvider::Codex,
                label: format!(
                    "Codex {version} (`codex app-server` on PATH; runs on your ChatGPT plan or account) for the teammates, {lead_text}"
                ),
                lead,
                teammates: model(InitProvider::Codex, None, None),
            },
        );
    }
    leads
}

/// What was looked for and not found (or found unusable), one phrase each.
fn not_found(found: &Found) -> Vec<String> {
    let mut missing = Vec::new();
    for (bin, cli) in [("claude", &found.claude), ("codex", &found.codex)] {
        match cli {
            Cli::Missing => missing.push(format!("`{bin}` on PATH")),
            Cli::Unusable { path, why } => {
                missing.push(format!("a usable `{bin}` ({}: {why})", path.display()))
            }
            Cli::Usable { .. } => {}
        }
    }
    if !found.anthropic_key {
        missing.push("ANTHROPIC_API_KEY".into());
    }
    if !found.openai_key {
        missing.push("OPENAI_API_KEY".into());
    }
    let answered: Vec<&str> = found.local.iter().map(|s| s.base_url.as_str()).collect();
    let silent: Vec<String> = found
        .ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .filter(|a| !answered.iter().any(|u| u.contains(a.as_str())))
        .collect();
    if !silent.is_empty() {
        missing.push(format!(
            "a model server answering /v1/models on {}",
            silent.join(", ")
        ));
    }
    for server in found.local.iter().filter(|s| s.models.is_empty()) {
        missing.push(format!("a model listed by {}", server.base_url));
    }
    missing
}

/// Picks the team's models: `--provider` (with `--model`, `--base-url`), else the person's
/// choice from a list on a terminal, else the first found.
fn choose(args: &InitArgs, found: &Found) -> anyhow::Result<Chosen> {
    let mut said = Vec::new();
    let missing = not_found(found);
    if !missing.is_empty() {
        said.push(format!("not found: {}", missing.join("; ")));
    }
    let mut all = candidates(found);
    if let Some(provider) = args.provider {
        all.retain(|c| c.provider == provider);
    }
    if let Some(url) = &args.base_url {
        if args.provider.is_some_and(|p| p != InitProvider::Openai) {
            return Err(CliError::Usage(
                "--base-url is for --provider openai (an OpenAI-compatible server)".into(),
            )
            .into());
        }
        all = vec![given_server(url, args.model.as_deref())?];
    }
    if all.is_empty() {
        match args.provider {
            None => {
                said.push(
                    "no model found: crew.toml has agents without a model, and `crew up` refuses until you add one (its comments show how; `crew init --provider …` after removing it); `crew demo` runs the simulator"
                        .into(),
                );
                return Ok(Chosen {
                    models: InitModels::default(),
                    said,
                });
            }
            Some(p @ (InitProvider::ClaudeCode | InitProvider::Codex)) => {
                let (bin, cli) = match p {
                    InitProvider::Codex => ("codex", &found.codex),
                    _ => ("claude", &found.claude),
                };
                let why = match cli {
                    Cli::Unusable { path, why } => format!("{}: {why}", path.display()),
                    _ => format!("`{bin}` is not on PATH"),
                };
                return Err(CliError::Refused(format!(
                    "--provider {}: {why}; nothing was written",
                    p.name()
                ))
                .into());
            }
            Some(p) => {
                // A key provider without its key yet: written, and the key named.
                let (var, default) = match p {
                    InitProvider::Anthropic => ("ANTHROPIC_API_KEY", ANTHROPIC_MODEL),
                    _ => ("OPENAI_API_KEY", OPENAI_MODEL),
                };
                said.push(format!(
                    "warning: {var} is not set; set it before `crew up` (crew reads it from the environment, never from crew.toml)"
                ));
                let name = args.model.as_deref().unwrap_or(default);
                let m = model(p, Some(name), None);
                all.push(Candidate {
                    provider: p,
                    label: format!("{} {name} (needs {var}; billed per token)", p.name()),
                    lead: Some(m.clone()),
                    teammates: m,
                });
            }
        }
    }
    let pick = if all.len() > 1 && !args.yes && interactive() {
        ask(&all)?
    } else {
        0
    };
    let mut chosen = all.swap_remove(pick);
    if let Some(name) = &args.model {
        let provider = chosen.provider.name();
        for m in chosen.lead.iter_mut().chain([&mut chosen.teammates]) {
            if m.provider == provider {
                m.model = Some(name.clone());
            }
        }
    }
    let why = if args.provider.is_some() {
        "as --provider asked"
    } else if pick == 0 {
        "the first found, in crew's order: Claude Code, Codex, ANTHROPIC_API_KEY, OPENAI_API_KEY, a local server; --provider picks another"
    } else {
        "your choice"
    };
    said.insert(0, format!("chose: {} ({why})", chosen.label));
    if chosen.lead.is_none() {
        said.push(
            "the lead has no model yet: give [lead] a `model = {…}` line (Claude Code, a key or a local server) before `crew up`"
                .into(),
        );
    }
    Ok(Chosen {
        models: InitModels {
            lead: chosen.lead,
            teammates: Some(chosen.teammates),
        },
        said,
    })
}

/// `--base-url URL`: the server is asked for its models; `--model` or its first one is used.
fn given_server(url: &str, wanted: Option<&str>) -> anyhow::Result<Candidate> {
    let url = url.trim_end_matches('/');
    let listed = list_models(url);
    let name = match (wanted, &listed) {
        (Some(name), _) => name.to_string(),
        (None, Ok(models)) => models.first().cloned().ok_or_else(|| {
            CliError::Refused(format!(
                "{url}/models lists no model; give --model NAME; nothing was written"
            ))
        })?,
        (None, Err(why)) => {
            return Err(CliError::Refused(format!(
                "cannot ask {url} for its models ({why}); give --model NAME, or start the server; nothing was written"
            ))
            .into());
        }
    };
    let note = match &listed {
        Ok(models) if models.contains(&name) => "answering".to_string(),
        Ok(models) => format!(
            "answering, but it lists {} and not {name}",
            models.join(", ")
        ),
        Err(why) => format!("not answering now: {why}"),
    };
    let m = model(InitProvider::Openai, Some(&name), Some(url));
    Ok(Candidate {
        provider: InitProvider::Openai,
        label: format!("{name} at {url} ({note})"),
        lead: Some(m.clone()),
        teammates: m,
    })
}

fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// The choice list on the terminal; Enter takes the first.
fn ask(all: &[Candidate]) -> anyhow::Result<usize> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "crew found these; which should the team use?")?;
    for (i, c) in all.iter().enumerate() {
        writeln!(out, "  {}) {}", i + 1, c.label)?;
    }
    loop {
        write!(out, "choice [1]: ")?;
        out.flush()?;
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line)? == 0 {
            return Ok(0);
        }
        match line.trim() {
            "" => return Ok(0),
            n => match n.parse::<usize>() {
                Ok(n) if (1..=all.len()).contains(&n) => return Ok(n - 1),
                _ => writeln!(out, "a number from 1 to {}", all.len())?,
            },
        }
    }
}

/// The folder name, lowercased, with anything not allowed in a name replaced by `-`.
fn team_name_from(root: &Path) -> String {
    let raw = root.file_name().and_then(|n| n.to_str()).unwrap_or("team");
    crew_protocol::name_from(raw, "team-")
}
