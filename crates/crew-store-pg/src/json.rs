//! The store's JSON columns (a status, commits, a verdict, limits) to and from crew-store's
//! types; a value that does not fit is a `BadRow` naming the column and the value.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::PgStoreError;

/// `value` (of the task or agent `of`) as JSON for column `what`.
pub(crate) fn to_json(
    what: &'static str,
    of: &str,
    value: &impl Serialize,
) -> Result<serde_json::Value, PgStoreError> {
    serde_json::to_value(value).map_err(|e| PgStoreError::BadRow {
        what,
        value: of.to_string(),
        reason: e.to_string(),
    })
}

/// Column `what`'s JSON as a `T`.
pub(crate) fn from_json<T: DeserializeOwned>(
    what: &'static str,
    json: serde_json::Value,
) -> Result<T, PgStoreError> {
    T::deserialize(&json).map_err(|e| PgStoreError::BadRow {
        what,
        value: json.to_string(),
        reason: e.to_string(),
    })
}
