//! The one rule for names that become file names, and the error every id and name refuses with.

/// A name or id refused, naming what it was meant to be, the value and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {value:?}: {reason}")]
pub struct InvalidName {
    pub what: &'static str,
    pub value: String,
    pub reason: &'static str,
}

impl InvalidName {
    fn new(what: &'static str, value: &str, reason: &'static str) -> Self {
        InvalidName {
            what,
            // A hostile value may be huge; enough of it to recognise is kept.
            value: value.chars().take(64).collect(),
            reason,
        }
    }
}

/// `[a-z][a-z0-9_-]{0,31}`: safe as a file name on every platform, no traversal possible.
pub fn validate_name(what: &'static str, value: &str) -> Result<(), InvalidName> {
    let reason = if value.is_empty() {
        "it is empty"
    } else if value.len() > 32 {
        "it is longer than 32 characters"
    } else if !value.starts_with(|c: char| c.is_ascii_lowercase()) {
        "it must start with a lowercase letter a-z"
    } else if !value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        "only a-z, 0-9, '_' and '-' are allowed"
    } else {
        return Ok(());
    };
    Err(InvalidName::new(what, value, reason))
}

/// A valid name made from `raw`: lowercased, anything not allowed replaced by `-`, `prefix`
/// put first when it does not start with a letter, cut to 32 characters.
pub fn name_from(raw: &str, prefix: &str) -> String {
    let mut name: String = raw
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.insert_str(0, prefix);
    }
    name.truncate(32);
    name
}

/// A task id's refusal (`task_<n>` has its own rule).
pub(crate) fn invalid_task_id(value: &str, reason: &'static str) -> InvalidName {
    InvalidName::new("task id", value, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_escape_a_folder_are_refused() {
        for bad in [
            "",
            "../x",
            "a/b",
            "A",
            "1abc",
            "a b",
            "a.b",
            &"a".repeat(33),
            "é",
        ] {
            assert!(
                validate_name("agent name", bad).is_err(),
                "{bad:?} accepted"
            );
        }
        for good in ["a", "alice", "bob-2", "x_y", &"a".repeat(32)] {
            validate_name("agent name", good).unwrap();
        }
    }

    #[test]
    fn a_name_made_from_anything_with_a_letter_prefix_is_valid() {
        for raw in [
            "",
            "Team Lead",
            "1st",
            "é",
            "../x",
            &"X".repeat(40),
            "worker1",
        ] {
            validate_name("agent name", &name_from(raw, "a")).unwrap();
        }
        assert_eq!(name_from("Team Lead", "a"), "team-lead");
    }

    #[test]
    fn the_error_names_what_the_value_and_why() {
        let err = validate_name("sender", "Bob").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid sender \"Bob\": it must start with a lowercase letter a-z"
        );
    }
}
