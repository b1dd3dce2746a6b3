//! A task's id, `task_<n>`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::invalid_name::{InvalidName, invalid_task_id};

/// A task id, `task_<n>`; `n` comes from the store's high-water mark and is never reused.
/// Ordered by `n`, which is creation order. On disk and on the wire it is the string.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(pub u64);

impl TaskId {
    /// What [`TaskId::parse`] accepts, as a JSON schema `pattern` for tool inputs.
    pub const PATTERN: &'static str = "^(task_)?(0|[1-9][0-9]*)$";

    /// Accepts `task_<n>` or a bare `<n>` (handy on the command line); nothing else.
    pub fn parse(value: &str) -> Result<TaskId, InvalidName> {
        let digits = value.strip_prefix("task_").unwrap_or(value);
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(invalid_task_id(value, "expected task_<number>"));
        }
        if digits.len() > 1 && digits.starts_with('0') {
            return Err(invalid_task_id(value, "a task number has no leading zeros"));
        }
        digits
            .parse::<u64>()
            .map(TaskId)
            .map_err(|_| invalid_task_id(value, "the number is too large"))
    }
}

/// Padded like a string (`{:<8}` lines ids up in columns).
impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&format!("task_{}", self.0))
    }
}

/// As the string it stands for, so messages that quote an id (`{id:?}`) read as before.
impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl FromStr for TaskId {
    type Err = InvalidName;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        TaskId::parse(value)
    }
}

impl TryFrom<String> for TaskId {
    type Error = InvalidName;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        TaskId::parse(&value)
    }
}

impl From<TaskId> for String {
    fn from(id: TaskId) -> Self {
        id.to_string()
    }
}

/// Compares with the canonical text: `TaskId(1) == "task_1"`, never `"1"`.
impl PartialEq<str> for TaskId {
    fn eq(&self, other: &str) -> bool {
        other
            .strip_prefix("task_")
            .is_some_and(|digits| TaskId::parse(digits).is_ok_and(|id| id == *self))
    }
}

impl PartialEq<&str> for TaskId {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl PartialEq<String> for TaskId {
    fn eq(&self, other: &String) -> bool {
        *self == *other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_wire_form_is_the_string_and_a_bad_one_is_refused() {
        assert_eq!(serde_json::to_string(&TaskId(3)).unwrap(), "\"task_3\"");
        let id: TaskId = serde_json::from_str("\"task_3\"").unwrap();
        assert_eq!(id, TaskId(3));
        let err = serde_json::from_str::<TaskId>("\"task_03\"").unwrap_err();
        assert!(
            err.to_string().contains("invalid task id \"task_03\""),
            "{err}"
        );
    }

    #[test]
    fn it_pads_like_its_text() {
        assert_eq!(format!("{:<8}|", TaskId(3)), "task_3  |");
    }

    #[test]
    fn it_equals_its_canonical_text_only() {
        assert_eq!(TaskId(4), "task_4");
        assert_ne!(TaskId(4), "4");
        assert_ne!(TaskId(4), "task_04");
        assert_ne!(TaskId(4), "task_5");
    }
}
