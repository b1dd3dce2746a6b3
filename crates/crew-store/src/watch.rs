//! Wake-ups from file-system events (inotify) instead of a slow poll.
//!
//! inotify itself rather than the `notify` crate: notify watches every `open()` of every file
//! (its mask is fixed), so each worker's pass over `.tasks` woke the watcher thread of every
//! other worker once per task file read — with 16 workers that storm, not the work, decided how
//! fast a new task was claimed and what an idle team cost. Here the mask is only what changes a
//! folder's contents, and `wait` polls the inotify descriptor itself: no thread, no channel.
//! (Linux only, as is the sandbox.)

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use inotify::{Inotify, WatchMask};

use crate::StoreError;

/// What changes a folder's contents: a file created, written, renamed in or out, or removed;
/// the folder itself removed or moved. Not opens, reads or closes.
fn changes() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::MODIFY
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
}

/// Watches folders; `wait` returns as soon as anything in them changes.
pub struct DirWatcher {
    inotify: Mutex<Inotify>,
    wake: Arc<OwnedFd>,
}

/// Ends a `DirWatcher::wait` at once from another thread of this process, as a file event would:
/// for a waiter whose owner is done and must not sit out the rest of its timeout.
#[derive(Clone)]
pub struct Waker(Arc<OwnedFd>);

impl Waker {
    pub fn wake(&self) {
        // An eventfd counter: a write only fails when it would overflow, and then a wake-up is
        // pending anyway. Unlike a pipe it never raises SIGPIPE when the watcher is gone.
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to a descriptor this handle keeps open.
        let _ = unsafe { libc::write(self.0.as_raw_fd(), (&raw const one).cast(), 8) };
    }
}

impl DirWatcher {
    /// Creates each folder if needed (a watch needs something to watch) and watches it.
    pub fn new(dirs: &[&Path]) -> Result<Self, StoreError> {
        let first = dirs.first().copied().unwrap_or(Path::new("."));
        let inotify = Inotify::init().map_err(|e| watch_error(first, e))?;
        for dir in dirs {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
            inotify
                .watches()
                .add(dir, changes())
                .map_err(|e| watch_error(dir, e))?;
        }
        // SAFETY: eventfd takes no pointers; a non-negative result is a new descriptor we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(watch_error(first, io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just returned by eventfd and is owned by nothing else.
        let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(DirWatcher {
            inotify: Mutex::new(inotify),
            wake,
        })
    }

    /// A handle that wakes this watcher's `wait` from another thread.
    pub fn waker(&self) -> Waker {
        Waker(Arc::clone(&self.wake))
    }

    /// Waits up to `timeout` for a change; true if one came. Drains what is queued so one burst
    /// of writes is one wake-up.
    pub fn wait(&self, timeout: Duration) -> bool {
        let mut inotify = self.inotify.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut fds = [
                libc::pollfd {
                    fd: inotify.as_fd().as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.wake.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // Rounded up: a timeout under a millisecond must still wait, not spin.
            let ms = i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
            // SAFETY: `fds` is a live array of two pollfd and its length is passed with it.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if ready > 0 {
                let woken = drain_wake(&self.wake);
                let changed = drain_events(&mut inotify);
                if woken || changed {
                    return true;
                }
            } else if ready < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                // A poll that cannot work must not become a busy loop: sleep out the timeout.
                std::thread::sleep(left);
                return false;
            }
            if Instant::now() >= deadline {
                return false;
            }
        }
    }
}

/// Reads the eventfd's counter back to zero; true if it was set.
fn drain_wake(fd: &OwnedFd) -> bool {
    let mut count: u64 = 0;
    // SAFETY: reads at most 8 bytes into a live u64.
    let read = unsafe { libc::read(fd.as_raw_fd(), (&raw mut count).cast(), 8) };
    read == 8 && count > 0
}

/// Reads every queued event; true if any says something changed (a removed watch's
/// `IGNORED` alone does not).
fn drain_events(inotify: &mut Inotify) -> bool {
    let mut buffer = [0u8; 4096];
    let mut changed = false;
    loop {
        match inotify.read_events(&mut buffer) {
            Ok(events) => {
                let mut any = false;
                for event in events {
                    any = true;
                    // An overflow counts: something changed that was not queued.
                    changed |= !event.mask.contains(inotify::EventMask::IGNORED);
                }
                if !any {
                    return changed;
                }
            }
            // Nothing more queued (the descriptor is non-blocking), or it cannot be read:
            // either way what was read is the answer.
            Err(_) => return changed,
        }
    }
}

fn watch_error(dir: &Path, e: io::Error) -> StoreError {
    StoreError::io(dir, io::Error::other(format!("cannot watch: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_a_file_wakes_nobody_and_writing_one_does() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("inbox.jsonl");
        std::fs::write(&file, "one\n").unwrap();
        let watcher = DirWatcher::new(&[dir.path()]).unwrap();
        for _ in 0..3 {
            std::fs::read(&file).unwrap();
        }
        assert!(
            !watcher.wait(Duration::from_millis(300)),
            "a read woke the watcher"
        );
        std::fs::write(&file, "two\n").unwrap();
        assert!(
            watcher.wait(Duration::from_secs(10)),
            "a write did not wake the watcher"
        );
    }

    #[test]
    fn a_rename_into_the_folder_and_a_removal_wake_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let watcher = DirWatcher::new(&[dir.path()]).unwrap();
        let staged = outside.path().join("task.json");
        std::fs::write(&staged, "{}").unwrap();
        std::fs::rename(&staged, dir.path().join("1.json")).unwrap();
        assert!(
            watcher.wait(Duration::from_secs(10)),
            "a rename in was missed"
        );
        // Drained: nothing is left over from the burst.
        assert!(!watcher.wait(Duration::from_millis(100)));
        std::fs::remove_file(dir.path().join("1.json")).unwrap();
        assert!(
            watcher.wait(Duration::from_secs(10)),
            "a removal was missed"
        );
    }

    #[test]
    fn opening_a_lock_file_for_writing_wakes_nobody() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(".lock");
        std::fs::write(&lock, "").unwrap();
        let watcher = DirWatcher::new(&[dir.path()]).unwrap();
        for _ in 0..3 {
            drop(std::fs::OpenOptions::new().write(true).open(&lock).unwrap());
        }
        assert!(!watcher.wait(Duration::from_millis(300)));
    }

    #[test]
    fn a_waker_ends_a_wait_from_another_thread() {
        let dir = tempfile::tempdir().unwrap();
        let watcher = DirWatcher::new(&[dir.path()]).unwrap();
        let waker = watcher.waker();
        std::thread::spawn(move || waker.wake());
        // An hour: only the waker can end this wait.
        assert!(watcher.wait(Duration::from_secs(3600)));
    }

    #[test]
    fn a_waker_outliving_its_watcher_is_harmless() {
        let dir = tempfile::tempdir().unwrap();
        let watcher = DirWatcher::new(&[dir.path()]).unwrap();
        let waker = watcher.waker();
        drop(watcher);
        waker.wake();
    }
}
