//! The last line of defence for API keys: every writer of text that lasts (inboxes, task
//! files, transcripts, spilled tool results, logs) passes it through [`redact`], which replaces
//! the value of each key this process has read. Keys never reach tools in the first place; this
//! only catches one that got out some other way (say, read from another process's memory).

use std::borrow::Cow;
use std::sync::{OnceLock, PoisonError, RwLock};

/// What a key's value becomes in anything written.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not treated as secrets: replacing every "abc" would mangle text and
/// protect nothing.
const MIN_SECRET_LEN: usize = 8;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// The credential variables taken out of the process's environment at start (`crew_model`'s
/// `seal_process`), kept here so that every layer reads them through [`env_var`].
static SEALED: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// Keeps `vars`, the credentials taken out of the environment; false if some were kept already.
pub fn keep_sealed(vars: Vec<(String, String)>) -> bool {
    SEALED.set(vars).is_ok()
}

/// The credential variables taken out of the environment, to hand to a worker process
/// explicitly.
pub fn sealed_vars() -> &'static [(String, String)] {
    SEALED.get().map_or(&[], Vec::as_slice)
}

/// A variable's value: from the sealed credentials first, then the environment.
pub fn env_var(name: &str) -> Option<String> {
    sealed_vars()
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(name).ok())
}

/// Adds `value` to the values this process never writes.
pub fn register(value: &str) {
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(PoisonError::into_inner);
    if !secrets.iter().any(|s| s == value) {
        secrets.push(value.to_string());
    }
}

/// `text` with every registered secret replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(PoisonError::into_inner);
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    out
}

/// As [`redact`], for bytes that are text (invalid UTF-8 is written as it is: a key is ASCII,
/// and a line holding one is valid JSON text).
pub fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    match std::str::from_utf8(bytes).map(redact) {
        Ok(Cow::Owned(text)) => Cow::Owned(text.into_bytes()),
        _ => Cow::Borrowed(bytes),
    }
}

/// As [`redact`], for every string in a JSON value (what a store keeps as JSON, not as text).
pub fn redact_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => {
            if let Cow::Owned(clean) = redact(text) {
                *text = clean;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        serde_json::Value::Object(map) => map.values_mut().for_each(redact_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_values_are_replaced_and_short_ones_ignored() {
        register("sk-test-0123456789abcdef");
        register("abc");
        assert_eq!(
            redact("key=sk-test-0123456789abcdef; again sk-test-0123456789abcdef"),
            "key=[redacted]; again [redacted]"
        );
        assert_eq!(redact("abc stays"), "abc stays");
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
        assert_eq!(
            redact_bytes(b"{\"text\":\"sk-test-0123456789abcdef\"}").as_ref(),
            b"{\"text\":\"[redacted]\"}"
        );
    }
}
