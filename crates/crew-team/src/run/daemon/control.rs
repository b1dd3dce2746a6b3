//! The control socket's client: connect, send one [`Request`], read one [`Reply`] (the types
//! are crew-protocol's `control`, which the screen reads too).

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

pub use crew_protocol::control::{BusyAgent, DaemonStatus, Reply, Request, StopProgress};

use crate::run::daemon::socket_path;
use crew_store::Workspace;

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("no team daemon answers at {path}: {source}")]
    Unreachable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the team daemon's answer could not be read: {0}")]
    Protocol(String),
    #[error("the team daemon refused: {0}")]
    Refused(String),
}

/// How long a client waits for an answer: the daemon answers from memory.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to the daemon of `ws` and sends `request`; the stream is left open for reading.
pub fn connect(ws: &Workspace, request: &Request) -> Result<UnixStream, ControlError> {
    let path = socket_path(ws);
    let unreachable = |source| ControlError::Unreachable {
        path: path.display().to_string(),
        source,
    };
    let mut stream = with_short_path(&path, |p| UnixStream::connect(p)).map_err(unreachable)?;
    let mut line =
        serde_json::to_string(request).map_err(|e| ControlError::Protocol(e.to_string()))?;
    line.push('\n');
    stream.write_all(line.as_bytes()).map_err(unreachable)?;
    Ok(stream)
}

/// Reads one reply line from `stream`.
pub fn read_reply(stream: &UnixStream) -> Result<DaemonStatus, ControlError> {
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .map_err(|e| ControlError::Protocol(e.to_string()))?;
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .map_err(|e| ControlError::Protocol(e.to_string()))?;
    match serde_json::from_str::<Reply>(&line) {
        Ok(Reply::Status(status)) => Ok(status),
        Ok(Reply::Error { message }) => Err(ControlError::Refused(message)),
        Err(e) => Err(ControlError::Protocol(format!("{e} in {line:?}"))),
    }
}

/// Sends one request and returns the daemon's status after it.
pub fn ask(ws: &Workspace, request: &Request) -> Result<DaemonStatus, ControlError> {
    let stream = connect(ws, request)?;
    read_reply(&stream)
}

/// A socket's path must fit in `sun_path` (108 bytes); a repository deep in the tree gets there
/// through its folder opened as a file descriptor (`/proc/self/fd/N/daemon.sock`).
pub(crate) fn with_short_path<T>(
    path: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    const ROOM: usize = 100;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return f(path);
    };
    if path.as_os_str().len() < ROOM {
        return f(path);
    }
    let dir = std::fs::File::open(dir)?;
    let short = Path::new("/proc/self/fd")
        .join(dir.as_raw_fd().to_string())
        .join(name);
    f(&short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_deeper_than_sun_path_allows_is_reached_through_its_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("d".repeat(120));
        std::fs::create_dir_all(&deep).unwrap();
        let path = deep.join("daemon.sock");
        assert!(std::os::unix::net::UnixListener::bind(&path).is_err());
        let listener =
            with_short_path(&path, |p| std::os::unix::net::UnixListener::bind(p)).unwrap();
        assert!(path.exists(), "bound at the long path itself");
        with_short_path(&path, |p| UnixStream::connect(p)).unwrap();
        assert!(listener.accept().is_ok());
    }
}
