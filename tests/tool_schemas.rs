//! The input schema every tool sends to the model, derived from its input struct: one snapshot
//! per tool, and the shape both providers accept (no `$schema`, no `$ref`/`$defs`, an object
//! at the root).

use std::sync::Arc;
use std::time::Duration;

use crew::store::{Roster, Workspace};
use crew::team::tools::{ReadOnlyBash, TeamEnv, team_tools};
use crew::tools::builtin::core_tools;
use crew::tools::{Tool, todo_tools};
use serde_json::Value;

fn every_tool() -> Vec<Arc<dyn Tool>> {
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(TeamEnv {
        workspace: Workspace::new(dir.path()),
        roster: Roster::new(["lead", "alice"].map(String::from)),
        me: "lead".to_string(),
        role: "lead".to_string(),
        lead: "lead".to_string(),
        teammates: vec![("alice".to_string(), Some("implementer".to_string()))],
        request_timeout: Duration::from_secs(600),
    });
    let mut tools = core_tools();
    tools.extend(todo_tools());
    tools.extend(team_tools(env));
    tools.push(Arc::new(ReadOnlyBash::new(&[])));
    tools
}

#[test]
fn each_tool_schema_is_snapshotted() {
    for tool in every_tool() {
        let name = match tool.name() {
            // The read-only bash shares bash's name; its schema is checked under its own.
            "bash" if tool.description().starts_with("Run a read-only") => "read_only_bash",
            name => name,
        };
        insta::assert_json_snapshot!(format!("schema_{name}"), tool.input_schema());
    }
}

/// What Anthropic's `input_schema` and OpenAI's function `parameters` need: a self-contained
/// object schema. Walks the whole schema.
#[test]
fn schemas_are_self_contained_objects() {
    fn walk(tool: &str, value: &Value) {
        match value {
            Value::Object(map) => {
                for key in ["$schema", "$ref", "$defs", "definitions", "title"] {
                    assert!(!map.contains_key(key), "{tool}: `{key}` in {value}");
                }
                if let Some(format) = map.get("format") {
                    panic!("{tool}: non-standard format {format}");
                }
                map.values().for_each(|v| walk(tool, v));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(tool, v)),
            _ => {}
        }
    }
    for tool in every_tool() {
        let schema = tool.input_schema();
        assert_eq!(schema["type"], "object", "{}", tool.name());
        assert_eq!(schema["additionalProperties"], false, "{}", tool.name());
        walk(tool.name(), &schema);
    }
}
