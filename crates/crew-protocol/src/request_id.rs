//! The id that pairs a request with its answer.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Pairs a request with its answer: the asker's message and the answer carry the same id
/// (ARCHITECTURE.md, "On disk": requests).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(String);

impl RequestId {
    /// A new time-ordered id, unique across processes without coordination.
    pub fn new() -> Self {
        RequestId(format!("req_{}", uuid::Uuid::now_v7().simple()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for RequestId {
    fn default() -> Self {
        RequestId::new()
    }
}

impl std::ops::Deref for RequestId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for RequestId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for RequestId {
    fn from(raw: &str) -> Self {
        RequestId(raw.to_string())
    }
}

impl From<String> for RequestId {
    fn from(raw: String) -> Self {
        RequestId(raw)
    }
}

impl PartialEq<str> for RequestId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RequestId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for RequestId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
