//! Rewriting one of Claude Code's team files as Claude Code itself does: under the lock
//! directory `<file>.lock/`, the new contents written to `<file>.tmp.<8hex>` and renamed over it.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use super::AttachError;

/// How long to wait for a writer holding the lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// A lock older than this is left over by a writer that died (Claude Code's lock library
/// treats 10 s the same way).
const LOCK_STALE: Duration = Duration::from_secs(10);

/// Replaces the file at `path` with `change(its contents, None when absent)`.
pub(crate) fn update(
    path: &Path,
    change: impl FnOnce(Option<Vec<u8>>) -> std::io::Result<Vec<u8>>,
) -> Result<(), AttachError> {
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let io = |source| AttachError::Io {
        path: path.to_path_buf(),
        source,
    };
    let lock = path.with_file_name(format!("{file}.lock"));
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
        let old = match fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let bytes = change(old)?;
        let tmp = path.with_file_name(format!(
            "{file}.tmp.{}",
            &uuid::Uuid::now_v7().simple().to_string()[24..]
        ));
        fs::write(&tmp, bytes)?;
        fs::rename(&tmp, path)
    })();
    let _ = fs::remove_dir(&lock);
    written.map_err(io)
}
