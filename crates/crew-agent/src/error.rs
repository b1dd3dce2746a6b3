//! Why an agent could not be set up. A running turn never fails: it returns a `TurnResult`.

use thiserror::Error;

use crate::transcript::TranscriptError;

#[derive(Debug, Error)]
pub enum AgentError {
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
}
