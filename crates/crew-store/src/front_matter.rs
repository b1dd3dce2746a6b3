//! Markdown files that start with a YAML front matter block (`---` lines around it), as memory
//! files and `SKILL.md` files are. Errors name the file and, through the YAML parser, the field
//! and its line.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::StoreError;

/// The front matter parsed into `T`, and the body after it (leading blank lines dropped).
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<(T, String), StoreError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(StoreError::malformed(
            path,
            "no front matter: the file must start with a `---` line",
        ));
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(StoreError::malformed(
            path,
            "the front matter has no closing `---` line",
        ));
    }
    let body: String = lines.collect();
    let fields = serde_norway::from_str(&yaml)
        .map_err(|e| StoreError::malformed(path, format!("front matter: {e}")))?;
    Ok((fields, body.trim_start_matches(['\n', '\r']).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Fields {
        name: String,
        description: String,
    }

    #[test]
    fn front_matter_and_body_are_split() {
        let (fields, body): (Fields, _) = parse(
            Path::new("x.md"),
            "---\nname: a\ndescription: >\n  folded\n  text\n---\n\n# Body\nline\n",
        )
        .unwrap();
        assert_eq!(fields.name, "a");
        assert_eq!(fields.description, "folded text\n");
        assert_eq!(body, "# Body\nline\n");
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let err = |text: &str| {
            parse::<Fields>(Path::new("m/x.md"), text)
                .unwrap_err()
                .to_string()
        };
        assert!(err("name: a\n").contains("must start with a `---`"));
        assert!(err("---\nname: a\n").contains("no closing"));
        let missing = err("---\nname: a\n---\nbody");
        assert!(
            missing.starts_with("m/x.md:") && missing.contains("description"),
            "{missing}"
        );
        let unknown = err("---\nname: a\ndescription: d\ncolour: red\n---\n");
        assert!(unknown.contains("colour"), "{unknown}");
        let bad_yaml = err("---\nname: [a\n---\n");
        assert!(bad_yaml.contains("front matter"), "{bad_yaml}");
    }
}
