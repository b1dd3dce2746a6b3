//! Writing a message into a Claude Code inbox as Claude Code itself does: under the lock
//! directory `<inbox>.json.lock/`, the whole array rewritten to `<inbox>.json.tmp.<8hex>` and
//! renamed over the inbox.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use super::AttachError;

/// How long to wait for a writer holding the lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// A lock older than this is left over by a writer that died (Claude Code's lock library
/// treats 10 s the same way).
const LOCK_STALE: Duration = Duration::from_secs(10);

/// Appends a message from `from` with `text` to the inbox file at `inbox`.
pub(crate) fn append(inbox: &Path, from: &str, text: &str) -> Result<(), AttachError> {
    let file = inbox.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let agent = file.strip_suffix(".json").unwrap_or("");
    if agent.is_empty() || agent.starts_with('.') || agent.contains(['/', '\\']) {
        return Err(AttachError::BadName(agent.to_string()));
    }
    let io = |source| AttachError::Io {
        path: inbox.to_path_buf(),
        source,
    };
    let lock = inbox.with_file_name(format!("{file}.lock"));
    let until = Instant::now() + LOCK_WAIT;
    loop {
        match fs::create_dir(&lock) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let stale = fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| {
                        SystemTime::now()
                            .duration_since(t)
                            .is_ok_and(|age| age > LOCK_STALE)
                    });
                if stale {
                    let _ = fs::remove_dir(&lock);
                } else if Instant::now() > until {
                    return Err(io(std::io::Error::other(format!(
                        "{} is held by another writer",
                        lock.display()
                    ))));
                } else {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            Err(e) => return Err(io(e)),
        }
    }
    let written = (|| {
        let mut messages: Vec<Value> = match fs::read(inbox) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
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
        let tmp = inbox.with_file_name(format!(
            "{file}.tmp.{}",
            &uuid::Uuid::now_v7().simple().to_string()[24..]
        ));
        let bytes = serde_json::to_vec_pretty(&messages).map_err(std::io::Error::other)?;
        fs::write(&tmp, bytes)?;
        fs::rename(&tmp, inbox)
    })();
    let _ = fs::remove_dir(&lock);
    written.map_err(io)
}
