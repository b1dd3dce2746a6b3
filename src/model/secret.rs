//! An API key that never shows itself in Debug output, errors or logs.

use std::fmt;

use crate::store::secrets::REDACTED;

/// A secret API key. `Debug` prints a placeholder; the value is only reachable through
/// [`ApiKey::expose`], which request builders call when setting a header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key, also registered so that nothing this process writes can hold it.
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        crate::store::secrets::register(&key);
        Self(key)
    }

    /// The raw key, for an HTTP header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced (some error bodies quote it back).
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, REDACTED)
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key_and_redact_removes_echoes() {
        let key = ApiKey::new("sk-secret-123");
        assert!(!format!("{key:?}").contains("sk-secret-123"));
        assert_eq!(
            key.redact("bad key sk-secret-123 given"),
            "bad key [redacted] given"
        );
        assert_eq!(ApiKey::new("").redact("text"), "text");
    }
}
