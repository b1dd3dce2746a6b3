//! Starting worker processes that all begin at the same moment.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Instant;

use anyhow::{Context, anyhow};

pub struct Workers {
    children: Vec<(Child, BufReader<ChildStdout>)>,
}

impl Workers {
    /// Spawns one copy of this binary per argument list and waits until each says "ready".
    pub fn spawn(arg_sets: Vec<Vec<String>>) -> anyhow::Result<Workers> {
        let exe = std::env::current_exe().context("locating crew-bench")?;
        let mut children = Vec::new();
        for args in arg_sets {
            let mut child = Command::new(&exe)
                .args(&args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .with_context(|| format!("starting {} {}", exe.display(), args.join(" ")))?;
            let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
            children.push((child, BufReader::new(stdout)));
        }
        for (_, out) in &mut children {
            let mut line = String::new();
            out.read_line(&mut line)?;
            if line.trim() != "ready" {
                return Err(anyhow!("worker did not get ready: {line:?}"));
            }
        }
        Ok(Workers { children })
    }

    /// Releases every worker at once; returns when all have exited, with each one's last
    /// stdout line and the instant they were released.
    pub fn go(mut self) -> anyhow::Result<(Instant, Vec<String>)> {
        let start = Instant::now();
        for (child, _) in &mut self.children {
            let stdin = child.stdin.as_mut().ok_or_else(|| anyhow!("no stdin"))?;
            stdin.write_all(b"go\n")?;
            stdin.flush()?;
        }
        let mut reports = Vec::new();
        for (mut child, mut out) in self.children {
            let mut report = String::new();
            out.read_line(&mut report)?;
            let status = child.wait()?;
            if !status.success() {
                return Err(anyhow!("a worker failed: {status}"));
            }
            reports.push(report);
        }
        Ok((start, reports))
    }
}

/// In a worker: say ready, then block until the parent says go.
pub fn ready_and_wait() -> anyhow::Result<()> {
    println!("ready");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(())
}
