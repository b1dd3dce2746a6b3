//! An API key that never shows itself in Debug output, errors or logs, and the process's
//! credential variables, taken out of its environment at start.

use std::fmt;

use crew_store::secrets::REDACTED;

/// A secret API key. `Debug` prints a placeholder; the value is only reachable through
/// [`ApiKey::expose`], which request builders call when setting a header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key, also registered so that nothing this process writes can hold it.
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        crew_store::secrets::register(&key);
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

/// The rule [`is_secret_name`] applies, for messages.
pub const SECRET_NAME_RULE: &str = "a name containing KEY, TOKEN, SECRET or PASSWORD (any case), \
                                    or starting with ANTHROPIC_, OPENAI_ or AWS_";

/// Whether a variable may carry a credential: see [`SECRET_NAME_RULE`].
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD"]
        .iter()
        .any(|w| upper.contains(w))
        || ["ANTHROPIC_", "OPENAI_", "AWS_"]
            .iter()
            .any(|p| upper.starts_with(p))
}

/// Takes every credential variable out of this process's environment (kept in memory only, see
/// [`env_var`] and [`sealed_vars`], which every layer reads them through) and makes the process non-dumpable, so that no other
/// process of the same user can read its memory or environment through /proc or ptrace.
/// Call it first thing in `main`, while the process has a single thread: changing the
/// environment is only sound then.
pub fn seal_process() {
    let taken: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| is_secret_name(name))
        .collect();
    for (name, _) in &taken {
        // SAFETY: called before any other thread exists (see above).
        unsafe { std::env::remove_var(name) };
    }
    if !crew_store::secrets::keep_sealed(taken) {
        tracing::warn!("the process environment was already sealed");
    }
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "cannot make crew non-dumpable");
    }
}

pub use crew_store::secrets::{env_var, sealed_vars};

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
