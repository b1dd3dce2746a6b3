//! Writing a message into a Claude Code inbox as Claude Code itself does: the whole array
//! rewritten under the inbox's lock (see `locked_file`).

use std::path::Path;
use std::time::SystemTime;

use serde_json::{Value, json};

use super::{AttachError, locked_file};

/// Appends a message from `from` with `text` to the inbox file at `inbox`.
pub(crate) fn append(inbox: &Path, from: &str, text: &str) -> Result<(), AttachError> {
    let file = inbox.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let agent = file.strip_suffix(".json").unwrap_or("");
    if agent.is_empty() || agent.starts_with('.') || agent.contains(['/', '\\']) {
        return Err(AttachError::BadName(agent.to_string()));
    }
    locked_file::update(inbox, |old| {
        let mut messages: Vec<Value> = match old {
            Some(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
            None => Vec::new(),
        };
        messages.push(json!({
            "from": from,
            "text": text,
            "timestamp": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            "msgV": 1,
            "msg_id": uuid::Uuid::now_v7().to_string(),
            "type": "message",
            "read": false,
        }));
        serde_json::to_vec_pretty(&messages).map_err(std::io::Error::other)
    })
}
