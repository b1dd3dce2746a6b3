//! The repository crew works on: found by its `crew.toml`, from the current folder upwards.

use std::path::{Path, PathBuf};

use anyhow::anyhow;

use crew_config::{FILE_NAME, TeamConfig};
use crew_store::{Roster, Workspace};

pub struct Project {
    pub config: TeamConfig,
    pub workspace: Workspace,
    pub roster: Roster,
}

impl Project {
    pub fn find(start: &Path) -> anyhow::Result<Project> {
        let found = find_upwards(start, FILE_NAME).ok_or_else(|| {
            anyhow!(
                "no {FILE_NAME} in {} or any folder above it; run `crew init` in your git repository",
                start.display()
            )
        })?;
        let root = team_root(found);
        let config = TeamConfig::load(&root.join(FILE_NAME))?;
        register_key_values(&config);
        super::logging::start(&root);
        Ok(Project {
            roster: config.roster(),
            workspace: Workspace::new(root).with_limits(config.limits),
            config,
        })
    }
}

/// Every process that opens the project learns the values of the team's key variables, so
/// nothing it writes can hold one (see `store::secrets`), even if it never calls a model.
fn register_key_values(config: &TeamConfig) {
    for agent in config.agents() {
        let model = &agent.model;
        if let Some(value) =
            crew_model::spec::key_variable(&model.provider, model.api_key_env.as_deref())
                .and_then(|var| crew_model::secret::env_var(&var))
        {
            crew_store::secrets::register(&value);
        }
    }
}

/// A teammate's worktree (`<repo>/.worktrees/<name>`) holds a copy of the committed crew.toml,
/// but the team's store is the repository's: crew run inside a worktree works on that.
fn team_root(found: PathBuf) -> PathBuf {
    let repo = found
        .parent()
        .filter(|parent| parent.file_name().is_some_and(|n| n == ".worktrees"))
        .and_then(Path::parent)
        .filter(|repo| repo.join(FILE_NAME).is_file());
    match repo {
        Some(repo) => repo.to_path_buf(),
        None => found,
    }
}

/// The first folder from `start` upwards that holds `name`.
pub fn find_upwards(start: &Path, name: &str) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(name).exists())
        .map(Path::to_path_buf)
}
