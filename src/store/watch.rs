//! Wake-ups from file-system events (inotify on Linux) instead of a slow poll.

use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use crate::store::StoreError;

/// Watches folders; `wait` returns as soon as anything in them changes.
pub struct DirWatcher {
    rx: Receiver<()>,
    tx: Sender<()>,
    _watcher: RecommendedWatcher,
}

/// Ends a `DirWatcher::wait` at once from another thread of this process, as a file event would:
/// for a waiter whose owner is done and must not sit out the rest of its timeout.
#[derive(Clone)]
pub struct Waker(Sender<()>);

impl Waker {
    pub fn wake(&self) {
        // The watcher being gone just means nobody waits any more.
        let _ = self.0.send(());
    }
}

impl DirWatcher {
    /// Creates each folder if needed (a watch needs something to watch) and watches it.
    pub fn new(dirs: &[&Path]) -> Result<Self, StoreError> {
        let (tx, rx) = channel();
        let events = tx.clone();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Reads (open, close without writing) change nothing; waking on them would make
                // every reader wake itself and every other watcher, forever.
                let changed = event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_)));
                if changed {
                    // The receiver going away just means nobody waits any more.
                    let _ = events.send(());
                }
            })
            .map_err(|e| watch_error(dirs.first().copied().unwrap_or(Path::new(".")), e))?;
        for dir in dirs {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
            watcher
                .watch(dir, RecursiveMode::NonRecursive)
                .map_err(|e| watch_error(dir, e))?;
        }
        Ok(DirWatcher {
            rx,
            tx,
            _watcher: watcher,
        })
    }

    /// A handle that wakes this watcher's `wait` from another thread.
    pub fn waker(&self) -> Waker {
        Waker(self.tx.clone())
    }

    /// Waits up to `timeout` for a change; true if one came. Drains queued events so one burst
    /// of writes is one wake-up.
    pub fn wait(&self, timeout: Duration) -> bool {
        // Never disconnected: the watcher holds a sender itself (its waker's).
        let woke = self.rx.recv_timeout(timeout).is_ok();
        while self.rx.try_recv().is_ok() {}
        woke
    }
}

fn watch_error(dir: &Path, e: notify::Error) -> StoreError {
    StoreError::io(dir, std::io::Error::other(format!("cannot watch: {e}")))
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
    fn a_waker_ends_a_wait_from_another_thread() {
        let dir = tempfile::tempdir().unwrap();
        let watcher = DirWatcher::new(&[dir.path()]).unwrap();
        let waker = watcher.waker();
        std::thread::spawn(move || waker.wake());
        // An hour: only the waker can end this wait.
        assert!(watcher.wait(Duration::from_secs(3600)));
    }
}
