//! An agent's name: the key of its inbox, status file, worktree and branch.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::invalid_name::{InvalidName, name_from, validate_name};

/// A name `[a-z][a-z0-9_-]{0,31}`, checked once where it comes in (a file, the command line,
/// the socket, a model's tool input), so it is safe in a path wherever it goes after.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AgentName(Cow<'static, str>);

/// The person at the screen: may always send and answer, never needs an entry in `crew.toml`.
pub const USER: AgentName = AgentName(Cow::Borrowed("user"));

impl AgentName {
    /// What [`AgentName::parse`] accepts, as a JSON schema `pattern` for tool inputs.
    pub const PATTERN: &'static str = "^[a-z][a-z0-9_-]{0,31}$";

    pub fn parse(value: &str) -> Result<AgentName, InvalidName> {
        AgentName::parse_as("agent name", value)
    }

    /// As [`AgentName::parse`], the refusal calling the name `what` (`sender`, `recipient`).
    pub fn parse_as(what: &'static str, value: &str) -> Result<AgentName, InvalidName> {
        validate_name(what, value)?;
        Ok(AgentName(Cow::Owned(value.to_string())))
    }

    /// The valid name closest to `raw` (a name from another tool, such as Claude Code's
    /// `Team Lead`): lowercased, anything not allowed replaced by `-`, `a` put first when it
    /// does not start with a letter, cut to 32 characters.
    pub fn from_lossy(raw: &str) -> AgentName {
        // With a letter as the prefix, `name_from` always makes a valid name.
        AgentName(Cow::Owned(name_from(raw, "a")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Padded like a string (`{:<10}` lines names up in columns).
impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

/// As the string it stands for, so messages that quote a name (`{name:?}`) read as before.
impl fmt::Debug for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl FromStr for AgentName {
    type Err = InvalidName;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        AgentName::parse(value)
    }
}

impl TryFrom<String> for AgentName {
    type Error = InvalidName;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        validate_name("agent name", &value)?;
        Ok(AgentName(Cow::Owned(value)))
    }
}

impl From<AgentName> for String {
    fn from(name: AgentName) -> Self {
        name.0.into_owned()
    }
}

impl Deref for AgentName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// A name is a safe folder name: `.crew/memory/<name>/`, `.worktrees/<name>/`.
impl AsRef<std::path::Path> for AgentName {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(self.as_str())
    }
}

impl Borrow<str> for AgentName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for AgentName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for AgentName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for AgentName {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_str()
    }
}

impl PartialEq<AgentName> for str {
    fn eq(&self, other: &AgentName) -> bool {
        self == other.0
    }
}

impl PartialEq<AgentName> for &str {
    fn eq(&self, other: &AgentName) -> bool {
        *self == other.0
    }
}

impl PartialEq<AgentName> for String {
    fn eq(&self, other: &AgentName) -> bool {
        self.as_str() == other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_person_is_a_valid_name() {
        assert_eq!(AgentName::parse("user").unwrap(), USER);
        assert_eq!(USER.to_string(), "user");
    }

    #[test]
    fn a_lossy_name_is_a_valid_name() {
        for raw in ["", "Team Lead", "1st", "é", &"x".repeat(40)] {
            let name = AgentName::from_lossy(raw);
            assert_eq!(AgentName::parse(name.as_str()).unwrap(), name);
        }
    }

    #[test]
    fn a_name_that_could_escape_a_folder_is_refused_on_the_wire_too() {
        let err = serde_json::from_str::<AgentName>("\"../x\"").unwrap_err();
        assert!(
            err.to_string().contains("invalid agent name \"../x\""),
            "{err}"
        );
        let name: AgentName = serde_json::from_str("\"bob-2\"").unwrap();
        assert_eq!(name, "bob-2");
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"bob-2\"");
    }
}
