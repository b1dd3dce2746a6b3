//! The conversation vocabulary shared by providers, tools and the agent loop.

use serde::{Deserialize, Serialize};

/// A tool as the model sees it: name, description and a JSON schema for its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
}
