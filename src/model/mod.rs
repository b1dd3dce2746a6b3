//! Model providers behind one trait: scripted, anthropic, openai-compatible.

pub mod types;

pub use types::ToolDefinition;
