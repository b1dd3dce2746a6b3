//! What a confused model gets back when its tool input does not fit the tool's input struct:
//! one error result naming each field, and the tool never runs.

mod tools_support;

use crew::tools::builtin::read::ReadInput;
use crew::tools::permissions::PermissionMode;
use crew::tools::schema::parse_input;
use serde_json::{Value, json};
use tools_support::{Fixture, call, pipeline};

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
