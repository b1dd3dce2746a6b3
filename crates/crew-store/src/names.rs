//! Names of agents, teams and ids are checked before they ever reach a path.

use crate::StoreError;

/// `[a-z][a-z0-9_-]{0,31}`: safe as a file name on every platform, no traversal possible.
pub fn validate_name(what: &'static str, value: &str) -> Result<(), StoreError> {
    let reason = if value.is_empty() {
        Some("it is empty")
    } else if value.len() > 32 {
        Some("it is longer than 32 characters")
    } else if !value.starts_with(|c: char| c.is_ascii_lowercase()) {
        Some("it must start with a lowercase letter a-z")
    } else if !value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        Some("only a-z, 0-9, '_' and '-' are allowed")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(StoreError::InvalidName {
            what,
            value: value.chars().take(64).collect(),
            reason: reason.to_string(),
        }),
        None => Ok(()),
    }
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

/// A task id, `task_<n>`; `n` comes from the store's high-water mark and is never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u64);

impl TaskId {
    /// Accepts `task_<n>` or a bare `<n>` (handy on the command line); nothing else.
    pub fn parse(value: &str) -> Result<TaskId, StoreError> {
        let digits = value.strip_prefix("task_").unwrap_or(value);
        let bad = |reason: &str| StoreError::InvalidName {
            what: "task id",
            value: value.chars().take(64).collect(),
            reason: reason.to_string(),
        };
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad("expected task_<number>"));
        }
        if digits.len() > 1 && digits.starts_with('0') {
            return Err(bad("a task number has no leading zeros"));
        }
        digits
            .parse::<u64>()
            .map(TaskId)
            .map_err(|_| bad("the number is too large"))
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "task_{}", self.0)
    }
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
    fn task_ids_are_canonical() {
        assert_eq!(TaskId::parse("task_12").unwrap(), TaskId(12));
        assert_eq!(TaskId::parse("7").unwrap().to_string(), "task_7");
        for bad in [
            "task_",
            "task_01",
            "task_-1",
            "../task_1",
            "task_1.json",
            "x",
            "",
        ] {
            assert!(TaskId::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
