//! Atomic file replacement: a reader sees the old bytes or the new ones, never a torn mix,
//! and `kill -9` at any instant leaves the target parseable (invariant 2).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn file_name(path: &Path) -> io::Result<&str> {
    path.file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))
}

fn beside(path: &Path, name: String) -> PathBuf {
    path.parent().unwrap_or(Path::new(".")).join(name)
}

/// Writes `bytes` to a fresh hidden temp file beside `path`, syncs it, then renames it over
/// `path`. Safe with any number of unlocked writers: temp names carry pid and a counter.
///
/// `sync_data` (fdatasync) is enough: the temp file is new, so its size is flushed with the
/// data, and only then does the rename publish it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = beside(
        path,
        format!(
            ".{}.{}.{}.tmp",
            file_name(path)?,
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ),
    );
    let result = write_synced(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Like [`write_atomic`], for a file only ever written under an exclusive lock the caller holds.
///
/// The new bytes go into a persistent spare (`.<name>.spare`) that is then swapped with the file
/// in one `renameat2(RENAME_EXCHANGE)`; the old version becomes the next spare. No inode is
/// created or freed per write, which matters on ext4 (without a journal, every create scans the
/// recently freed inodes, so create-and-rename churn gets slower the more it runs). Readers use
/// [`read_consistent`], which notices if the file they opened was recycled mid-read.
/// Where exchange is unsupported, or the file does not exist yet, the spare is renamed instead.
pub fn replace_locked(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let spare = beside(path, format!(".{}.spare", file_name(path)?));
    write_synced(&spare, bytes)?;
    match exchange(&spare, path) {
        Ok(()) => Ok(()),
        Err(e)
            if e.kind() == io::ErrorKind::NotFound
                || e.kind() == io::ErrorKind::Unsupported
                || e.raw_os_error() == Some(libc::EINVAL)
                || e.raw_os_error() == Some(libc::ENOSYS) =>
        {
            fs::rename(&spare, path)
        }
        Err(e) => Err(e),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_data()
}

#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let a = CString::new(a.as_os_str().as_bytes())?;
    let b = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both pointers are valid NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Reads a file written by [`replace_locked`] without taking its lock.
///
/// The inode opened may be swapped out and recycled as the spare while it is read. So the read
/// only counts if, from just before it to just after, the open file kept its inode change time
/// and size, and the path still names that same unchanged inode. Every rename, truncate and write
/// sets the change time (finely, on kernels with multigrain timestamps, since we just queried
/// it), so a rewrite during the read shows and the read is retried.
pub fn read_consistent(path: &Path) -> io::Result<Vec<u8>> {
    let mut last = None;
    for _ in 0..64 {
        let mut file = File::open(path)?;
        let before = Stamp::of(&file.metadata()?);
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let after = Stamp::of(&file.metadata()?);
        let at_path = Stamp::of(&fs::metadata(path)?);
        if before == after && after == at_path && after.len == bytes.len() as u64 {
            return Ok(bytes);
        }
        last = Some(bytes);
        std::thread::yield_now();
    }
    // Rewritten during each of 64 reads: hand back the last one; the parser will say if it is
    // not whole.
    Ok(last.unwrap_or_default())
}

#[derive(Debug, PartialEq)]
struct Stamp {
    ino: u64,
    ctime: (i64, i64),
    len: u64,
}

impl Stamp {
    #[cfg(unix)]
    fn of(meta: &fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            ino: meta.ino(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            len: meta.len(),
        }
    }

    #[cfg(not(unix))]
    fn of(meta: &fs::Metadata) -> Stamp {
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .unwrap_or_default();
        Stamp {
            ino: 0,
            ctime: (
                modified.as_secs() as i64,
                i64::from(modified.subsec_nanos()),
            ),
            len: meta.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn replace_locked_swaps_in_new_bytes_and_keeps_one_spare() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        replace_locked(&path, b"first").unwrap();
        assert_eq!(read_consistent(&path).unwrap(), b"first");
        replace_locked(&path, b"second, longer").unwrap();
        replace_locked(&path, b"third").unwrap();
        assert_eq!(read_consistent(&path).unwrap(), b"third");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn readers_never_see_a_torn_file_while_a_writer_rewrites_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let version = |i: usize| format!("{{\"v\":{i},\"pad\":\"{}\"}}", "x".repeat(i % 4096));
        replace_locked(&path, version(0).as_bytes()).unwrap();
        let writer_path = path.clone();
        let writer = std::thread::spawn(move || {
            for i in 1..3000 {
                replace_locked(&writer_path, version(i).as_bytes()).unwrap();
            }
        });
        while !writer.is_finished() {
            let bytes = read_consistent(&path).unwrap();
            let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let v = usize::try_from(value["v"].as_u64().unwrap()).unwrap();
            assert_eq!(bytes, version(v).as_bytes());
        }
        writer.join().unwrap();
    }
}
