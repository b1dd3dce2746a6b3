//! `crew.toml`: the team, its permissions and worker timings. Errors name file, line and column.

mod error;
mod team;
mod template;

pub use error::ConfigError;
pub use team::{
    AgentEntry, Budget, Dollars, MergeQueueConfig, ModelChoice, PROVIDERS, PermissionsConfig,
    Price, ROLES, SCRIPTED, TeamConfig, TeamSection, WorkerConfig,
};
pub use template::{InitModel, InitModels, init_template};

/// The file name crew looks for, from the current directory up to the filesystem root.
pub const FILE_NAME: &str = crew_store::workspace::CONFIG_FILE;
