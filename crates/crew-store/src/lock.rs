//! Advisory file locks (flock through `fd-lock`) that hold across processes.
//!
//! Locks live in their own files: the data files are replaced by rename, and a lock taken on a
//! replaced inode would exclude nobody.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use fd_lock::RwLock;

use crate::StoreError;

/// Opens (creating if needed) a lock file; its folder is created only when missing, so the
/// common case is a single `open`.
fn open_lock_file(path: &Path) -> Result<RwLock<File>, StoreError> {
    let open = || {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
    };
    let file = match open() {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
            }
            open().map_err(|e| StoreError::io(path, e))?
        }
        Err(e) => return Err(StoreError::io(path, e)),
    };
    Ok(RwLock::new(file))
}

/// Runs `f` while holding the exclusive lock at `path`, waiting for it as long as it takes.
pub fn with_lock<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut lock = open_lock_file(path)?;
    let _guard = lock.write().map_err(|e| StoreError::io(path, e))?;
    f()
}

/// Runs `f` under the lock only if it is free right now; `Ok(None)` when someone else holds it.
pub fn try_with_lock<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut lock = open_lock_file(path)?;
    let guard = match lock.try_write() {
        Ok(guard) => guard,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let result = f();
    drop(guard);
    result.map(Some)
}
