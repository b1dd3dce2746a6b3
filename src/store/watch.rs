//! Wake-ups from file-system events (inotify on Linux) instead of a slow poll.

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use crate::store::StoreError;

/// Watches folders; `wait` returns as soon as anything in them changes.
pub struct DirWatcher {
    rx: Receiver<()>,
    _watcher: RecommendedWatcher,
}

impl DirWatcher {
    /// Creates each folder if needed (a watch needs something to watch) and watches it.
    pub fn new(dirs: &[&Path]) -> Result<Self, StoreError> {
        let (tx, rx) = channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Reads (open, close without writing) change nothing; waking on them would make
                // every reader wake itself and every other watcher, forever.
                let changed = event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_)));
                if changed {
                    // The receiver going away just means nobody waits any more.
                    let _ = tx.send(());
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
            _watcher: watcher,
        })
    }

    /// Waits up to `timeout` for a change; true if one came. Drains queued events so one burst
    /// of writes is one wake-up.
    pub fn wait(&self, timeout: Duration) -> bool {
        let woke = match self.rx.recv_timeout(timeout) {
            Ok(()) => true,
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout);
                false
            }
        };
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
}
