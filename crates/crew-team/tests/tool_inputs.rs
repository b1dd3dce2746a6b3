//! Tool inputs as the model sees and sends them. Every tool's schema is derived from its input
//! struct: one snapshot per tool, in the shape both providers accept (no `$schema`, no
//! `$ref`/`$defs`, an object at the root). And what a confused model gets back when an input
//! does not fit: one error result naming each field, and the tool never runs — checked for
//! every field of every tool.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;
use std::time::Duration;

use crew_store::{AgentName, Roster, TaskId, Teammate, Workspace};
use crew_team::tools::{ReadOnlyBash, TeamEnv, team_tools};
use crew_test_support::tools::{Fixture, call, pipeline, policy};
use crew_tools::builtin::core_tools;
use crew_tools::builtin::read::ReadInput;
use crew_tools::permissions::PermissionMode;
use crew_tools::schema::parse_input;
use crew_tools::{Pipeline, Tool, ToolJson, ToolRegistry, memory_tools, skill_tools, todo_tools};
use serde_json::{Map, Value, json};

fn name(raw: &str) -> AgentName {
    raw.parse().unwrap()
}

/// Every tool crew has; the team tools work on `dir`.
fn every_tool(dir: &std::path::Path) -> Vec<Arc<dyn Tool>> {
    let roster = Roster::new(["lead", "alice"].map(name));
    let env = Arc::new(TeamEnv {
        link: crew_team::run::link::TeamLink::files(crew_store::FileStore::new(
            Workspace::new(dir),
            roster.clone(),
        )),
        roster,
        me: name("lead"),
        role: "lead".to_string(),
        lead: name("lead"),
        teammates: vec![Teammate {
            name: name("alice"),
            role: Some("implementer".to_string()),
        }],
        writes: false,
        request_timeout: Duration::from_secs(600),
    });
    let mut tools = core_tools();
    tools.extend(todo_tools());
    tools.extend(memory_tools());
    tools.extend(skill_tools());
    tools.extend(team_tools(env));
    tools.push(Arc::new(ReadOnlyBash::new(&[])));
    tools
}

#[test]
fn each_tool_schema_is_snapshotted() {
    let dir = tempfile::tempdir().unwrap();
    for tool in every_tool(dir.path()) {
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
    let dir = tempfile::tempdir().unwrap();
    for tool in every_tool(dir.path()) {
        let schema = tool.input_schema();
        assert_eq!(schema["type"], "object", "{}", tool.name());
        assert!(schema["properties"].is_object(), "{}", tool.name());
        assert_eq!(schema["additionalProperties"], false, "{}", tool.name());
        walk(tool.name(), &schema);
    }
}

/// A value the property's schema accepts.
fn fitting(schema: &Value) -> Value {
    if let Some(values) = schema["enum"].as_array() {
        return values[0].clone();
    }
    // Ids and names are strings of a pattern: one of each kind crew has.
    match schema["pattern"].as_str() {
        Some(TaskId::PATTERN) => return json!("task_1"),
        Some(AgentName::PATTERN) => return json!("alice"),
        Some(other) => panic!("no sample for pattern {other}"),
        None => {}
    }
    match schema["type"].as_str() {
        Some("string") => json!("x"),
        Some("integer") => json!(schema["minimum"].as_u64().unwrap_or(1)),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        other => panic!("no sample for type {other:?} in {schema}"),
    }
}

/// A value of the wrong type for the property, as a confused model sends it: a number where
/// text goes, text where a number or a flag goes, one item where a list goes.
fn misfit(schema: &Value) -> Value {
    match schema["type"].as_str() {
        Some("string") => json!(42),
        Some("integer") => json!("1"),
        Some("boolean") => json!("true"),
        Some("array") => json!("x"),
        other => panic!("no misfit for type {other:?} in {schema}"),
    }
}

/// Every property of `tool` with a fitting value.
fn full_input(schema: &Value) -> Map<String, Value> {
    schema["properties"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(field, property)| (field.clone(), fitting(property)))
        .collect()
}

/// Every tool in one pipeline (the read-only bash is the same input as bash).
fn everything(fx: &Fixture) -> Pipeline {
    let mut registry = ToolRegistry::new();
    for tool in every_tool(fx.ws()) {
        if registry.get(tool.name()).is_none() {
            registry.register(tool).unwrap();
        }
    }
    Pipeline::new(
        registry,
        policy(PermissionMode::WorkspaceWrite, &[], &[], &[]),
    )
}

/// What the schema accepts, the input struct accepts too, and what either refuses is refused
/// by both, naming the field: checked for every field of every tool.
#[tokio::test]
async fn every_field_of_every_tool_refuses_a_misfit_by_name() {
    let fx = Fixture::new();
    let p = everything(&fx);
    let mut checked = 0;
    for name in p.registry.names() {
        let tool = p.registry.get(name).unwrap();
        let schema = tool.input_schema();
        let full = full_input(&schema);
        let refused = async |input: Map<String, Value>| {
            let input = Value::Object(input);
            let out = p.run(call("t", name, input.clone()), &fx.ctx).await;
            assert!(out.output.is_error, "{name} accepted {input}");
            assert_eq!(out.decision, None, "{name}: {input} reached permission");
            let alone = tool.prepare(&input).err().unwrap_or_default();
            (out.output.content, alone)
        };

        assert_eq!(
            p.registry.check_input(name, &Value::Object(full.clone())),
            Some(Ok(()))
        );
        assert!(tool.prepare(&Value::Object(full.clone())).is_ok(), "{name}");

        for (field, property) in schema["properties"].as_object().unwrap() {
            let mut input = full.clone();
            input.insert(field.clone(), misfit(property));
            let (text, alone) = refused(input).await;
            assert!(
                text.contains(&format!("invalid input for `{name}`")),
                "{text}"
            );
            assert!(text.contains(&format!("field `{field}`")), "{name}: {text}");
            assert!(
                alone.starts_with(&format!("field `{field}`")),
                "{name}: {alone}"
            );
            checked += 1;
        }
        for field in schema["required"].as_array().into_iter().flatten() {
            let field = field.as_str().unwrap();
            let mut input = full.clone();
            input.remove(field);
            let (text, alone) = refused(input).await;
            assert!(text.contains(&format!("\"{field}\"")), "{name}: {text}");
            assert!(
                alone.contains(&format!("missing field `{field}`")),
                "{name}: {alone}"
            );
        }
        let mut extra = full.clone();
        extra.insert("colour".to_string(), json!("red"));
        let (text, alone) = refused(extra).await;
        assert!(text.contains("colour"), "{name}: {text}");
        assert!(alone.contains("unknown field `colour`"), "{name}: {alone}");

        let out = p.run(call("t", name, json!("x")), &fx.ctx).await;
        assert!(out.output.is_error && out.decision.is_none(), "{name}");
    }
    assert!(checked > 30, "only {checked} fields checked");
}

/// The error the model reads for `input` to `tool`; the call must not have reached permission.
async fn refusal(tool: &str, input: Value) -> String {
    let fx = Fixture::new();
    fx.write("a.txt", "one\ntwo\n");
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]);
    let out = p.run(call("t1", tool, input), &fx.ctx).await;
    assert!(out.output.is_error, "accepted: {}", out.output.content);
    assert_eq!(out.decision, None, "a bad input never reaches permission");
    out.output.content
}

#[tokio::test]
async fn a_wrong_type_names_the_field() {
    let text = refusal("read", json!({"path": ["a.txt"]})).await;
    assert!(text.contains("invalid input for `read`"), "{text}");
    assert!(text.contains("field `path`"), "{text}");
}

#[tokio::test]
async fn a_missing_field_is_named() {
    let text = refusal("read", json!({"offset": 2})).await;
    assert!(text.contains("\"path\""), "{text}");
}

#[tokio::test]
async fn an_extra_field_is_named() {
    let text = refusal("read", json!({"path": "a.txt", "colour": "red"})).await;
    assert!(text.contains("colour"), "{text}");
}

#[tokio::test]
async fn a_string_where_a_number_goes_is_refused_not_coerced() {
    let text = refusal("read", json!({"path": "a.txt", "limit": "10"})).await;
    assert!(text.contains("field `limit`"), "{text}");
    let text = refusal("read", json!({"path": "a.txt", "offset": 0})).await;
    assert!(text.contains("field `offset`"), "{text}");
}

#[tokio::test]
async fn every_problem_is_reported_at_once() {
    let text = refusal("read", json!({"path": 1, "limit": -1, "colour": 0})).await;
    for field in ["field `path`", "field `limit`", "colour"] {
        assert!(text.contains(field), "{field} missing from {text}");
    }
}

#[tokio::test]
async fn not_an_object_at_all() {
    let text = refusal("read", json!("a.txt")).await;
    assert!(text.contains("invalid input for `read`"), "{text}");
    let text = refusal("claim_task", json!([])).await;
    assert!(
        text.contains("unknown tool") || text.contains("invalid input"),
        "{text}"
    );
}

/// Deserialising alone (what a tool called without the schema check sees) also names the field.
#[test]
fn deserialising_names_the_field() {
    let wrong = parse_input::<ReadInput>(&json!({"path": "a", "limit": "ten"})).unwrap_err();
    assert!(wrong.starts_with("field `limit`:"), "{wrong}");
    let missing = parse_input::<ReadInput>(&json!({})).unwrap_err();
    assert!(missing.contains("missing field `path`"), "{missing}");
    let extra = parse_input::<ReadInput>(&json!({"path": "a", "colour": 1})).unwrap_err();
    assert!(extra.contains("unknown field `colour`"), "{extra}");
    let ok = parse_input::<ReadInput>(&json!({"path": "a", "limit": 3})).unwrap();
    assert_eq!(
        (ok.path.as_str(), ok.offset, ok.limit),
        ("a", None, Some(3))
    );
}

/// A number the schema takes as an integer but the input struct cannot hold is refused at
/// the second check, still naming the field.
#[tokio::test]
async fn what_passes_the_schema_but_not_the_struct_is_refused_by_name() {
    let text = refusal("read", json!({"path": "a.txt", "limit": 1e30})).await;
    assert!(text.contains("invalid input for `read`"), "{text}");
    assert!(text.contains("field `limit`"), "{text}");
}

/// The `agent` tool (offered by the agent runtime, so not among the tools above) has the same
/// kind of schema: derived, self-contained, closed.
#[test]
fn the_agent_tools_schema_is_snapshotted() {
    let schema = crew_tools::schema::derived_schema::<crew_agent::subagent::AgentInput>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    let text = schema.to_string();
    for key in ["$schema", "$ref", "$defs", "definitions"] {
        assert!(!text.contains(&format!("\"{key}\"")), "{key} in {text}");
    }
    insta::assert_json_snapshot!("schema_agent", schema);
}

/// A message kind outside `send_message`'s enum deserialises (unknown kinds are kept raw), so
/// the tool refuses it itself too: a caller that skips the schema cannot send a request.
#[tokio::test]
async fn send_message_refuses_a_request_kind_even_without_the_schema() {
    let fx = Fixture::new();
    let tools = every_tool(fx.ws());
    let send = tools.iter().find(|t| t.name() == "send_message").unwrap();
    let input = json!({"to": "alice", "type": "shutdown_request", "text": "stop"});
    let why = send.validate_json(&input, &fx.ctx).unwrap_err();
    assert!(why.contains("`shutdown_request` cannot be sent"), "{why}");
    let err = send.call_json(&input, fx.ctx.clone()).await.unwrap_err();
    assert!(err.to_string().contains("cannot be sent"), "{err}");
}
