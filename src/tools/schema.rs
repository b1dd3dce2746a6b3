//! Checking a tool input against the tool's JSON schema, with errors that name the field.

use serde_json::Value;

/// A compiled input schema.
pub struct InputSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InputSchema")
    }
}

impl InputSchema {
    /// Compiles `schema`; the error text says what is wrong with it.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|e| e.to_string())
    }

    /// Every violation, one per line, each prefixed by the field it concerns
    /// (`input` for the object itself, e.g. a missing required property, whose message names it).
    pub fn check(&self, input: &Value) -> Result<(), String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(input)
            .map(|error| {
                let pointer = error.instance_path().as_str().to_string();
                let field = if pointer.is_empty() {
                    "input".to_string()
                } else {
                    format!(
                        "field `{}`",
                        pointer.trim_start_matches('/').replace('/', ".")
                    )
                };
                format!("{field}: {error}")
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> InputSchema {
        InputSchema::compile(&json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["path"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn errors_name_the_field() {
        let s = schema();
        assert!(s.check(&json!({"path": "a"})).is_ok());
        let wrong_type = s.check(&json!({"path": "a", "limit": "ten"})).unwrap_err();
        assert!(wrong_type.contains("field `limit`"), "{wrong_type}");
        let missing = s.check(&json!({"limit": 3})).unwrap_err();
        assert!(missing.contains("\"path\""), "{missing}");
        let extra = s.check(&json!({"path": "a", "colour": 1})).unwrap_err();
        assert!(extra.contains("colour"), "{extra}");
        let too_small = s.check(&json!({"path": "a", "limit": 0})).unwrap_err();
        assert!(too_small.contains("field `limit`"), "{too_small}");
    }

    #[test]
    fn a_broken_schema_is_refused() {
        assert!(InputSchema::compile(&json!({"type": 5})).is_err());
    }
}
