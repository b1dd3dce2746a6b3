//! From errors to exit codes and one-line messages.

use crew_config::ConfigError;
use crew_git::GitError;
use crew_store::StoreError;

/// Errors the CLI itself raises, beyond those of the layers below.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Refused(String),
    /// The team stopped without reaching its goal (`--until-done`): a failed task, a lead
    /// whose turn failed or created nothing.
    #[error("{0}")]
    Unfinished(String),
}

pub fn exit_code(e: &anyhow::Error) -> u8 {
    if let Some(e) = e.downcast_ref::<StoreError>() {
        return match e {
            StoreError::Refused(_) => 3,
            StoreError::InvalidName { .. } => 2,
            _ => 1,
        };
    }
    if let Some(e) = e.downcast_ref::<crew_store_pg::PgStoreError>() {
        use crew_store_pg::PgStoreError;
        return match e {
            PgStoreError::Refused(_) | PgStoreError::NotPermitted(_) => 3,
            PgStoreError::InvalidName(_) => 2,
            _ => 1,
        };
    }
    if let Some(e) = e.downcast_ref::<GitError>() {
        return match e {
            GitError::CheckoutDirty { .. }
            | GitError::CheckoutBusy { .. }
            | GitError::ConcurrentUpdate { .. } => 3,
            GitError::InvalidName { .. } | GitError::InvalidBranch { .. } => 2,
            _ => 1,
        };
    }
    match e.downcast_ref::<CliError>() {
        Some(CliError::Usage(_)) => 2,
        Some(CliError::Refused(_)) => 3,
        Some(CliError::Unfinished(_)) => 4,
        None => 1,
    }
}

/// The message with its causes, on one line.
pub fn describe(e: &anyhow::Error) -> String {
    if e.downcast_ref::<StoreError>().is_some()
        || e.downcast_ref::<ConfigError>().is_some()
        || e.downcast_ref::<GitError>().is_some()
    {
        return e.to_string();
    }
    format!("{e:#}")
}
