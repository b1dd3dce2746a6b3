//! Tool calls a model wrote as text instead of `tool_calls`: `<tool_call>{…}</tool_call>`
//! blocks (the Hermes/Qwen/Gemma template convention) and ```` ```json ```` fences holding
//! `{"name": …, "arguments": …}`. Small local models do this whenever the server's chat
//! template does not turn their text into calls.

use serde_json::Value;

use super::decode::object_of;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// The name a call gets when the model gave it none.
pub(super) const NO_NAME: &str = "unnamed_call";

/// One call found in the text, as the decoder emits it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum TextCall {
    Call {
        name: String,
        input: Value,
    },
    /// A call that cannot run: its name (empty when it had none), its text, and why.
    Bad {
        name: String,
        raw: String,
        problem: String,
    },
}

/// The calls in `text`, in order. Every `<tool_call>` block is a call (a broken one becomes a
/// `Bad` call, so the model hears what was wrong); without such blocks, a JSON fence counts
/// only when it names one of `tools`, since a fence is also how prose shows JSON.
pub(super) fn find(text: &str, tools: &[String]) -> Vec<TextCall> {
    let tagged = tagged_calls(text);
    if !tagged.is_empty() {
        return tagged;
    }
    fenced_calls(text)
        .into_iter()
        .filter(|call| matches!(call, TextCall::Call { name, .. } if tools.contains(name)))
        .collect()
}

fn tagged_calls(text: &str) -> Vec<TextCall> {
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let (body, closed, next) = match after.find(CLOSE) {
            Some(end) => (&after[..end], true, &after[end + CLOSE.len()..]),
            None => (after, false, ""),
        };
        // A later opening tag before any closing one means this block was never closed.
        let (body, closed, next) = match body.find(OPEN) {
            Some(inner) => (&body[..inner], false, &after[inner..]),
            None => (body, closed, next),
        };
        calls.extend(calls_in(body, closed));
        rest = next;
    }
    calls
}

/// The calls of one block: usually one object, sometimes several in a row.
fn calls_in(body: &str, closed: bool) -> Vec<TextCall> {
    let body = strip_fence(body.trim());
    let bad = |problem: String| TextCall::Bad {
        name: name_in(body).unwrap_or_default(),
        raw: body.to_string(),
        problem,
    };
    if body.is_empty() {
        return vec![bad("the <tool_call> block is empty".into())];
    }
    let mut calls = Vec::new();
    for value in serde_json::Deserializer::from_str(body).into_iter::<Value>() {
        match value {
            Ok(value) => calls.push(call_of(value)),
            Err(e) => {
                calls.push(bad(if closed {
                    format!("the <tool_call> block is not valid JSON: {e}")
                } else {
                    format!(
                        "the <tool_call> block was never closed and its JSON is incomplete: {e}"
                    )
                }));
                break;
            }
        }
    }
    calls
}

/// Reads `{"name": …, "arguments"|"parameters": …}`.
fn call_of(value: Value) -> TextCall {
    let raw = value.to_string();
    let Value::Object(mut object) = value else {
        return TextCall::Bad {
            name: String::new(),
            problem: format!(
                "a tool call must be a JSON object with \"name\" and \"arguments\", not {raw}"
            ),
            raw,
        };
    };
    let name = match object.remove("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name,
        _ => {
            return TextCall::Bad {
                name: String::new(),
                raw,
                problem: "the tool call has no \"name\"".into(),
            };
        }
    };
    let arguments = object
        .remove("arguments")
        .or_else(|| object.remove("parameters"))
        .unwrap_or_else(|| Value::Object(Default::default()));
    match object_of(arguments) {
        Ok(input) => TextCall::Call { name, input },
        Err(problem) => TextCall::Bad { name, raw, problem },
    }
}

/// A name still readable in a broken call, so the error can say which tool it was for.
fn name_in(body: &str) -> Option<String> {
    let at = body.find("\"name\"")?;
    let rest = body[at + 6..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let name = &rest[..rest.find('"')?];
    (!name.is_empty()).then(|| name.to_string())
}

/// A block's JSON, without a fence some models put around it inside the tags.
fn strip_fence(body: &str) -> &str {
    let Some(inner) = body.strip_prefix("```") else {
        return body;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// Complete ```` ``` ```` / ```` ```json ```` fences whose content is a JSON object.
fn fenced_calls(text: &str) -> Vec<TextCall> {
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let Some(end) = after.find("```") else {
            break;
        };
        let block = &after[..end];
        let block = block.strip_prefix("json").unwrap_or(block);
        if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(block.trim()) {
            calls.push(call_of(value));
        }
        rest = &after[end + 3..];
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn tools() -> Vec<String> {
        vec!["read".to_string(), "bash".to_string()]
    }

    fn ok(name: &str, input: Value) -> TextCall {
        TextCall::Call {
            name: name.to_string(),
            input,
        }
    }

    /// `(name, problem)` of each call, which must all be bad.
    fn problems(text: &str) -> Vec<(String, String)> {
        find(text, &tools())
            .into_iter()
            .map(|call| match call {
                TextCall::Bad { name, problem, .. } => (name, problem),
                TextCall::Call { .. } => panic!("{text}: {call:?} should be bad"),
            })
            .collect()
    }

    #[test]
    fn table_of_texts_and_the_calls_found_in_them() {
        let cases: Vec<(&str, Vec<TextCall>)> = vec![
            ("no call here", vec![]),
            (
                r#"<tool_call>{"name": "read", "arguments": {"path": "a{b}.rs"}}</tool_call>"#,
                vec![ok("read", json!({"path": "a{b}.rs"}))],
            ),
            (
                r#"<tool_call>
{"name": "bash", "arguments": {"command": "echo '}'", "opts": {"deep": {"x": [1, {"y": 2}]}}}}
</tool_call>"#,
                vec![ok(
                    "bash",
                    json!({"command": "echo '}'", "opts": {"deep": {"x": [1, {"y": 2}]}}}),
                )],
            ),
            (
                r#"first <tool_call>{"name":"read","arguments":{"path":"a"}}</tool_call> then
<tool_call>{"name":"read","parameters":{"path":"b"}}</tool_call>"#,
                vec![
                    ok("read", json!({"path": "a"})),
                    ok("read", json!({"path": "b"})),
                ],
            ),
            (
                r#"<tool_call>{"name":"read","arguments":"{\"path\":\"x\"}"}</tool_call>"#,
                vec![ok("read", json!({"path": "x"}))],
            ),
            (
                r#"<tool_call>{"name":"read","arguments":{"path":"a"}}{"name":"bash"}</tool_call>"#,
                vec![ok("read", json!({"path": "a"})), ok("bash", json!({}))],
            ),
            (
                "<tool_call>\n```json\n{\"name\":\"read\",\"arguments\":{}}\n```\n</tool_call>",
                vec![ok("read", json!({}))],
            ),
            (
                "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
                vec![ok("bash", json!({"command": "ls"}))],
            ),
            // JSON shown in prose, or naming no tool of the request, is no call.
            ("```json\n{\"name\": \"Ada\", \"age\": 36}\n```", vec![]),
            ("```json\n{\"name\": \"bash\"", vec![]),
            ("```\n[1, 2]\n```", vec![]),
        ];
        for (text, expected) in cases {
            assert_eq!(find(text, &tools()), expected, "{text}");
        }
    }

    #[test]
    fn broken_blocks_become_bad_calls_with_the_reason() {
        let unterminated = problems(r#"<tool_call>{"name": "read", "arguments": {"path": "#);
        assert_eq!(unterminated[0].0, "read");
        assert!(
            unterminated[0].1.contains("never closed"),
            "{unterminated:?}"
        );
        let bad = problems(r#"<tool_call>{name: read}</tool_call>"#);
        assert!(bad[0].1.contains("not valid JSON"), "{bad:?}");
        assert!(problems("<tool_call></tool_call>")[0].1.contains("empty"));
        assert!(
            problems(r#"<tool_call>{"arguments": {}}</tool_call>"#)[0]
                .1
                .contains("no \"name\"")
        );
        assert!(
            problems(r#"<tool_call>"read"</tool_call>"#)[0]
                .1
                .contains("JSON object")
        );
        assert!(
            problems(r#"<tool_call>{"name":"read","arguments":[1]}</tool_call>"#)[0]
                .1
                .contains("must be a JSON object")
        );
        // An opening tag inside an open block: the first was never closed.
        let nested = find(
            r#"<tool_call>{"name":"read"<tool_call>{"name":"bash","arguments":{}}</tool_call>"#,
            &tools(),
        );
        assert_eq!(nested.len(), 2);
        assert!(matches!(&nested[0], TextCall::Bad { name, .. } if name == "read"));
        assert_eq!(nested[1], ok("bash", json!({})));
    }

    proptest! {
        /// Whatever the text, finding ends without panicking, and a well-formed call embedded
        /// in arbitrary prose is found.
        #[test]
        fn any_text_parses_and_embedded_calls_are_found(
            before in "[^<`]{0,40}",
            after in "[^<`]{0,40}",
            noise in ".{0,200}",
            path in "[a-z{}\\[\\]\"]{0,12}",
        ) {
            let _ = find(&noise, &tools());
            let call = json!({"name": "read", "arguments": {"path": path}});
            let text = format!("{before}<tool_call>{call}</tool_call>{after}");
            prop_assert_eq!(find(&text, &tools()), vec![ok("read", json!({"path": path}))]);
        }
    }
}
