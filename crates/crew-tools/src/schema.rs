//! A tool input's JSON schema, derived from its input struct, and checking an input against
//! it with errors that name the field.

use schemars::transform::{RecursiveTransform, RestrictFormats, Transform};
use schemars::{JsonSchema, Schema, generate::SchemaSettings};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The schema the model is sent for input type `T`, in the shape both providers accept
/// (Anthropic `input_schema`, OpenAI function `parameters`): one self-contained object schema
/// with no `$schema`, `$defs`/`$ref` or title, field descriptions from the doc comments,
/// optional fields absent rather than nullable, and only standard `format`s (schemars marks
/// integers `uint`, which validators and providers do not know). Doc comments on the input
/// struct's fields and on the types they use are read by the model.
pub fn derived_schema<T: JsonSchema>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>();
    RecursiveTransform(not_nullable).transform(&mut schema);
    let mut formats = RestrictFormats::default();
    formats.infer_from_meta_schema = false;
    formats.transform(&mut schema);
    // The root's doc comment documents the Rust type; the tool's description speaks to the model.
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
        root.remove("description");
        // A tool without arguments still lists its (no) properties, as OpenAI's examples do.
        root.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    schema.to_value()
}

/// An `Option` field is optional (left out of `required`); a model omits it rather than
/// sending `null`, so the schema does not offer `null` either.
fn not_nullable(schema: &mut Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            obj.insert("type".to_string(), only);
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let is_null = |v: &Value| v.get("type").is_some_and(|t| t == "null");
    if let Some(Value::Array(variants)) = obj.get("anyOf")
        && variants.len() == 2
        && let Some(other) = variants.iter().find(|v| !is_null(v))
        && variants.iter().any(is_null)
        && let Value::Object(other) = other.clone()
    {
        obj.remove("anyOf");
        for (key, value) in other {
            obj.entry(key).or_insert(value);
        }
    }
}

/// Deserialises a tool input into its struct; the error names the field (`input` for the
/// object itself, e.g. a missing field, whose message names it).
pub fn parse_input<T: DeserializeOwned>(input: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "input".to_string()
        } else {
            format!("field `{path}`")
        };
        format!("{field}: {}", e.inner())
    })
}

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
