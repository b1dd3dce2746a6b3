//! Running a child process in its own process group, with a time limit, an output cap and
//! cancellation; used by `bash` and by hooks. The whole group is killed on timeout, on
//! cancellation, when the future is dropped, and after the main process exits (so a
//! background child cannot hold the pipes open forever).

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// `Some`: the child gets exactly these variables; `None`: it inherits ours.
    pub env: Option<Vec<(String, String)>>,
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Bytes kept per stream; the rest is counted and dropped.
    pub output_cap: usize,
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessEnd {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

#[derive(Debug, Clone)]
pub struct ProcessResult {
    pub end: ProcessEnd,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes dropped past the cap, both streams together.
    pub dropped: u64,
}

/// Kills the process group when dropped, unless the group is already gone.
struct GroupGuard(Option<i32>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // SAFETY: killpg only sends a signal; a stale id fails with ESRCH, which is harmless.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Receives the output of a running process as it comes, both streams, up to the cap.
pub type OutputSink = Arc<dyn Fn(&[u8]) + Send + Sync>;

pub async fn run_process(
    spec: ProcessSpec,
    cancel: &CancellationToken,
) -> std::io::Result<ProcessResult> {
    run_process_streaming(spec, cancel, Arc::new(|_: &[u8]| {})).await
}

/// As [`run_process`], handing each piece of output to `sink` as it arrives.
pub async fn run_process_streaming(
    spec: ProcessSpec,
    cancel: &CancellationToken,
    sink: OutputSink,
) -> std::io::Result<ProcessResult> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(env) = &spec.env {
        command.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    // So whoever sees this agent die can end what it left running (see `orphans`).
    command.env(crate::orphans::OWNER_ENV, crate::orphans::owner_tag());
    let mut child = command.spawn()?;
    let mut guard = GroupGuard(child.id().and_then(|id| i32::try_from(id).ok()));

    if let Some(mut stdin) = child.stdin.take() {
        let input = spec.stdin;
        tokio::spawn(async move {
            // A child that does not read its stdin closes the pipe; that is not an error here.
            let _ = stdin.write_all(&input).await;
        });
    }
    let cap = spec.output_cap;
    let stdout = Arc::new(Mutex::new(Capture::default()));
    let stderr = Arc::new(Mutex::new(Capture::default()));
    let mut out_pump = tokio::spawn(pump(
        child.stdout.take(),
        Arc::clone(&stdout),
        cap,
        Arc::clone(&sink),
    ));
    let mut err_pump = tokio::spawn(pump(child.stderr.take(), Arc::clone(&stderr), cap, sink));

    let end = tokio::select! {
        biased;
        _ = cancel.cancelled() => ProcessEnd::Cancelled,
        waited = tokio::time::timeout(spec.timeout, child.wait()) => match waited {
            Ok(Ok(status)) => ProcessEnd::Exited(status),
            Ok(Err(e)) => return Err(e),
            Err(_) => ProcessEnd::TimedOut,
        },
    };
    // Whatever is left of the group goes now, so the pipes reach end-of-file.
    guard.kill();
    if end == ProcessEnd::TimedOut {
        tracing::debug!(program = %spec.program, "process group killed after timeout");
    }
    let _ = child.wait().await;
    // A process that left the group (setsid) may still hold a pipe: do not wait for it forever.
    let drained = tokio::time::timeout(DRAIN_GRACE, async {
        let _ = (&mut out_pump).await;
        let _ = (&mut err_pump).await;
    })
    .await;
    if drained.is_err() {
        tracing::warn!(program = %spec.program, "output still open after the process ended; stopped reading");
        out_pump.abort();
        err_pump.abort();
    }
    let (stdout, out_dropped) = take(&stdout);
    let (stderr, err_dropped) = take(&stderr);
    Ok(ProcessResult {
        end,
        stdout,
        stderr,
        dropped: out_dropped + err_dropped,
    })
}

/// How long output may keep flowing after the process group is gone.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Capture {
    kept: Vec<u8>,
    dropped: u64,
}

fn take(capture: &Mutex<Capture>) -> (Vec<u8>, u64) {
    // A poisoned capture still holds the bytes read so far.
    let mut capture = capture.lock().unwrap_or_else(PoisonError::into_inner);
    (std::mem::take(&mut capture.kept), capture.dropped)
}

async fn pump<R: AsyncRead + Unpin>(
    reader: Option<R>,
    capture: Arc<Mutex<Capture>>,
    cap: usize,
    sink: OutputSink,
) {
    let Some(mut reader) = reader else {
        return;
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut capture = capture.lock().unwrap_or_else(PoisonError::into_inner);
                let room = cap.saturating_sub(capture.kept.len()).min(n);
                capture.kept.extend_from_slice(&buf[..room]);
                capture.dropped += (n - room) as u64;
                if room > 0 {
                    sink(&buf[..room]);
                }
            }
        }
    }
}
