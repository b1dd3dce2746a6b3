//! Why an agent could not be set up. A running turn never fails: it returns a `TurnResult`.

use thiserror::Error;

use crate::transcript::TranscriptError;
use crew_store::StoreError;

#[derive(Debug, Error)]
pub enum AgentError {
    /// The agent's name is used as a folder name, so it must be a valid crew name.
    #[error("invalid agent name: {0}")]
    Name(#[from] StoreError),
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
}
