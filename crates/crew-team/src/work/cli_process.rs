//! The process of a coding-agent CLI (Claude Code, Codex) for one conversation: JSON lines in on
//! stdin, out on stdout (read by a thread, so a person answering a permission never blocks the
//! pipe), stderr kept for the message when it dies.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Most of stderr kept for an error message (its end, where the reason is).
const STDERR_KEPT: usize = 4096;

/// How long a closed stdin gets to end the process before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// One line from the CLI's stdout.
#[derive(Debug)]
pub(crate) enum Line {
    Json(Value),
    /// A line that is not a JSON object: the protocol is broken.
    NotJson(String),
    /// Stdout ended (the process exited or closed it).
    Closed,
}

/// The CLI no longer reads its stdin (it exited or closed it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the CLI stopped reading its input")]
pub(crate) struct StdinClosed;

pub(crate) struct CliProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<String>>,
}

impl CliProcess {
    /// Starts `bin` with `args`, in `cwd`, with `env` added.
    pub(crate) fn spawn<S: AsRef<std::ffi::OsStr>>(
        bin: &str,
        args: &[S],
        cwd: &Path,
        env: &[(String, String)],
    ) -> std::io::Result<Self> {
        let mut child = Command::new(bin)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            // The CLI and all it starts (its commands, its `crew mcp`) are this agent's tool
            // processes: crew refuses them the person's commands, and ends them if it dies.
            .env(
                crew_tools::orphans::OWNER_ENV,
                crew_tools::orphans::owner_tag(),
            )
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let unpiped =
            |what: &str| std::io::Error::other(format!("{bin}: its {what} is not a pipe"));
        let stdout = child.stdout.take().ok_or_else(|| unpiped("stdout"))?;
        let mut stderr_pipe = child.stderr.take().ok_or_else(|| unpiped("stderr"))?;
        let (tx, lines) = channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                let parsed = match serde_json::from_str::<Value>(&line) {
                    Ok(value) if value.is_object() => Line::Json(value),
                    _ => Line::NotJson(line),
                };
                if tx.send(parsed).is_err() {
                    return;
                }
            }
            let _ = tx.send(Line::Closed);
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let kept = Arc::clone(&stderr);
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut text = kept.lock().unwrap_or_else(PoisonError::into_inner);
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
                if text.len() > 2 * STDERR_KEPT {
                    let cut =
                        crew_tools::spill::floor_char_boundary(&text, text.len() - STDERR_KEPT);
                    text.replace_range(..cut, "");
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            lines,
            stderr,
        })
    }

    /// Writes one JSON line to the CLI; an error means it stopped reading its input.
    pub(crate) fn send(&mut self, line: &Value) -> Result<(), StdinClosed> {
        let stdin = self.stdin.as_mut().ok_or(StdinClosed)?;
        let mut bytes = serde_json::to_vec(line).map_err(|_| StdinClosed)?;
        bytes.push(b'\n');
        stdin
            .write_all(&bytes)
            .and_then(|()| stdin.flush())
            .map_err(|_| StdinClosed)
    }

    /// The next line from stdout, or `None` when none came within `wait` (so the caller can
    /// look at its cancellation between lines).
    pub(crate) fn next_within(&self, wait: Duration) -> Option<Line> {
        match self.lines.recv_timeout(wait) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Line::Closed),
        }
    }

    /// Why the process is gone: its exit status (waited for briefly) and the end of stderr.
    pub(crate) fn death(&mut self) -> String {
        let status = self
            .wait_for(EXIT_GRACE)
            .map_or_else(|| "still running".to_string(), |status| status.to_string());
        // The stderr thread may still be draining the pipe of a process that just exited.
        thread::sleep(Duration::from_millis(50));
        let stderr = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        let tail = stderr.trim();
        if tail.is_empty() {
            status
        } else {
            let start = crew_tools::spill::floor_char_boundary(
                tail,
                tail.len().saturating_sub(STDERR_KEPT),
            );
            format!("{status}; stderr: {}", &tail[start..])
        }
    }

    fn wait_for(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(20)),
                _ => return None,
            }
        }
    }
}

impl Drop for CliProcess {
    /// Closing stdin ends the CLI cleanly (exit 0); one that does not is killed.
    fn drop(&mut self) {
        self.stdin = None;
        if self.wait_for(EXIT_GRACE).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
