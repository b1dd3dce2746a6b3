//! Logs go to `.crew/logs/crew.log`, never to the terminal (the screen owns it).

use std::path::Path;
use std::sync::OnceLock;

use tracing_subscriber::EnvFilter;

static STARTED: OnceLock<()> = OnceLock::new();

/// Starts file logging under `root/.crew/logs` once per process; `CREW_LOG` sets the filter.
/// A log that cannot be opened is not worth failing a command for, so errors are ignored.
pub fn start(root: &Path) {
    STARTED.get_or_init(|| {
        let dir = root.join(".crew").join("logs");
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("crew.log"))
        else {
            return;
        };
        let filter = EnvFilter::try_from_env("CREW_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(RedactedLog(file)))
            .try_init();
    });
}

/// The log file, with any API key this process has read replaced (see `store::secrets`). The
/// formatter writes each event whole, so a key is never split across two writes.
struct RedactedLog(std::fs::File);

impl std::io::Write for RedactedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .write_all(&crew_store::secrets::redact_bytes(buf))
            .map(|()| buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
