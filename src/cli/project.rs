//! The repository crew works on: found by its `crew.toml`, from the current folder upwards.

use std::path::{Path, PathBuf};

use anyhow::anyhow;

use crate::config::{FILE_NAME, TeamConfig};
use crate::store::{Claimant, Roster, Workspace};

pub struct Project {
    pub config: TeamConfig,
    pub workspace: Workspace,
    pub roster: Roster,
}

impl Project {
    pub fn find(start: &Path) -> anyhow::Result<Project> {
        let root = find_upwards(start, FILE_NAME).ok_or_else(|| {
            anyhow!(
                "no {FILE_NAME} in {} or any folder above it; run `crew init` in your git repository",
                start.display()
            )
        })?;
        let config = TeamConfig::load(&root.join(FILE_NAME))?;
        super::logging::start(&root);
        Ok(Project {
            roster: config.roster(),
            workspace: Workspace::new(root),
            config,
        })
    }

    /// `name` as a claimant: it must be on the team; its role comes from `crew.toml` unless given.
    pub fn claimant<'a>(
        &'a self,
        name: &'a str,
        role: Option<&'a str>,
    ) -> anyhow::Result<Claimant<'a>> {
        self.roster
            .check("agent", name)
            .map_err(crate::store::StoreError::from)?;
        Ok(Claimant {
            name,
            role: role.or_else(|| self.config.role_of(name)),
        })
    }
}

/// The first folder from `start` upwards that holds `name`.
pub fn find_upwards(start: &Path, name: &str) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(name).exists())
        .map(Path::to_path_buf)
}
