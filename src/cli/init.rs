//! `crew init`: a commented crew.toml, and crew's runtime folders kept out of git.

use std::fs;
use std::path::Path;

use anyhow::{Context, anyhow};

use crate::cli::args::InitArgs;
use crate::cli::project::find_upwards;
use crew_config::{FILE_NAME, TeamConfig, init_template};
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
    let team = match args.team {
        Some(team) => {
            validate_name("team name", &team)?;
            team
        }
        None => team_name_from(&root),
    };
    let base = match args.base {
        Some(base) => base,
        None => current_branch(&root).unwrap_or_else(|| "main".to_string()),
    };
    let text = init_template(&team, &base);
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
    Ok(())
}

/// The folder name, lowercased, with anything not allowed in a name replaced by `-`.
fn team_name_from(root: &Path) -> String {
    let raw = root.file_name().and_then(|n| n.to_str()).unwrap_or("team");
    crew_protocol::name_from(raw, "team-")
}
