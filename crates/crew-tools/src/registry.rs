//! The set of tools an agent can see, in a stable order so the prompt stays byte-stable.

use std::sync::Arc;

use serde_json::Value;

use crate::builtin;
use crate::schema::InputSchema;
use crate::tool::Tool;
use crew_model::ToolDefinition;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("tool `{0}` is registered twice")]
    Duplicate(String),
    #[error("unknown tool `{0}`")]
    Unknown(String),
    #[error("tool `{tool}` has an invalid input schema: {reason}")]
    BadSchema { tool: String, reason: String },
}

#[derive(Clone)]
struct Entry {
    tool: Arc<dyn Tool>,
    /// The input schema as the model is sent it, derived once.
    input_schema: Value,
    schema: Arc<InputSchema>,
}

/// Tools in insertion order, each with its input schema, compiled.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in tools: read, write, edit, glob, grep, bash.
    /// Fails only on a programming slip (a duplicate name or a bad constant schema), which the
    /// tests below catch.
    pub fn core_tools() -> Result<Self, RegistryError> {
        let mut registry = Self::new();
        for tool in builtin::core_tools() {
            registry.register(tool)?;
        }
        Ok(registry)
    }

    /// Adds a tool at the end; its schema must compile and its name must be new.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let name = tool.name().to_string();
        if self.get(&name).is_some() {
            return Err(RegistryError::Duplicate(name));
        }
        let input_schema = tool.input_schema();
        let schema = InputSchema::compile(&input_schema)
            .map_err(|reason| RegistryError::BadSchema { tool: name, reason })?;
        self.entries.push(Entry {
            tool,
            input_schema,
            schema: Arc::new(schema),
        });
        Ok(())
    }

    /// The tools named in `names`, kept in this registry's order (not the order of `names`),
    /// so two roles with the same toolset produce the same prompt bytes.
    pub fn subset<S: AsRef<str>>(&self, names: &[S]) -> Result<Self, RegistryError> {
        if let Some(unknown) = names.iter().find(|n| self.get(n.as_ref()).is_none()) {
            return Err(RegistryError::Unknown(unknown.as_ref().to_string()));
        }
        let entries = self
            .entries
            .iter()
            .filter(|e| names.iter().any(|n| n.as_ref() == e.tool.name()))
            .cloned()
            .collect();
        Ok(Self { entries })
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|e| Arc::clone(&e.tool))
    }

    /// Checks `input` against the named tool's schema; `None` when the tool is unknown.
    pub fn check_input(&self, name: &str, input: &Value) -> Option<Result<(), String>> {
        self.entry(name).map(|e| e.schema.check(input))
    }

    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.tool.name()).collect()
    }

    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.entries
            .iter()
            .map(|e| ToolDefinition {
                name: e.tool.name().to_string(),
                description: e.tool.description().to_string(),
                input_schema: e.input_schema.clone(),
            })
            .collect()
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.tool.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_tools_in_stable_order() {
        let registry = ToolRegistry::core_tools().unwrap();
        assert_eq!(
            registry.names(),
            ["read", "write", "edit", "glob", "grep", "bash"]
        );
        let defs = registry.definitions();
        assert_eq!(defs.len(), 6);
        assert_eq!(defs, ToolRegistry::core_tools().unwrap().definitions());
    }

    #[test]
    fn subset_keeps_registry_order_and_refuses_unknown_names() {
        let registry = ToolRegistry::core_tools().unwrap();
        let sub = registry.subset(&["grep", "read"]).unwrap();
        assert_eq!(sub.names(), ["read", "grep"]);
        assert_eq!(
            registry.subset(&["read", "deploy"]).unwrap_err(),
            RegistryError::Unknown("deploy".into())
        );
    }

    #[test]
    fn duplicates_are_refused() {
        let mut registry = ToolRegistry::core_tools().unwrap();
        let again = builtin::core_tools().remove(0);
        assert_eq!(
            registry.register(again).unwrap_err(),
            RegistryError::Duplicate("read".into())
        );
    }
}
