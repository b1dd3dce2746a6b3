//! `crew init`: a commented crew.toml, and crew's runtime folders kept out of git.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};

use crate::cli::args::InitArgs;
use crate::cli::project::find_upwards;
use crate::config::{FILE_NAME, TeamConfig, init_template};
use crate::store::names::validate_name;

const EXCLUDED: &[&str] = &[".tasks", ".mailboxes", ".worktrees", ".crew"];

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
    let git_dir = git_common_dir(&root)?;
    let team = match args.team {
        Some(team) => {
            validate_name("team name", &team)?;
            team
        }
        None => team_name_from(&root),
    };
    let base = match args.base {
        Some(base) => base,
        None => current_branch(&git_dir).unwrap_or_else(|| "main".to_string()),
    };
    let text = init_template(&team, &base);
    // Check before writing anything: the template must be a valid config for this team.
    TeamConfig::parse(&config_path, &text)?;
    let exclude = git_dir.join("info").join("exclude");
    let existing = match fs::read_to_string(&exclude) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", exclude.display())),
    };
    let missing: Vec<&str> = EXCLUDED
        .iter()
        .copied()
        .filter(|entry| {
            !existing
                .lines()
                .any(|l| l.trim().trim_start_matches('/') == *entry)
        })
        .collect();
    fs::write(&config_path, text).with_context(|| format!("writing {}", config_path.display()))?;
    if !missing.is_empty() {
        let mut updated = existing;
        if !updated.is_empty() && !updated.ends_with('\n') {
            updated.push('\n');
        }
        updated.push_str("# crew runtime state\n");
        for entry in &missing {
            updated.push_str(&format!("/{entry}\n"));
        }
        fs::create_dir_all(exclude.parent().unwrap_or(&git_dir))
            .and_then(|()| fs::write(&exclude, updated))
            .with_context(|| format!("writing {}", exclude.display()))?;
    }
    println!(
        "wrote {} (team {team}, base branch {base})",
        config_path.display()
    );
    println!("excluded {} in {}", EXCLUDED.join(" "), exclude.display());
    Ok(())
}

/// `.git` is a folder, or (in a linked worktree or submodule) a file pointing at one; info/
/// lives in the common folder.
fn git_common_dir(root: &Path) -> anyhow::Result<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Ok(dot_git);
    }
    let text =
        fs::read_to_string(&dot_git).with_context(|| format!("reading {}", dot_git.display()))?;
    let pointed = text
        .strip_prefix("gitdir:")
        .map(str::trim)
        .ok_or_else(|| anyhow!("{}: expected `gitdir: <path>`", dot_git.display()))?;
    let git_dir = root.join(pointed);
    match fs::read_to_string(git_dir.join("commondir")) {
        Ok(common) => Ok(git_dir.join(common.trim())),
        Err(_) => Ok(git_dir),
    }
}

fn current_branch(git_dir: &Path) -> Option<String> {
    let head = fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}

/// The folder name, lowercased, with anything not allowed in a name replaced by `-`.
fn team_name_from(root: &Path) -> String {
    let raw = root
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("team")
        .to_lowercase();
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.insert_str(0, "team-");
    }
    name.truncate(32);
    name
}
