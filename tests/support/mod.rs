//! Helpers for tests that drive the built `crew` binary in a scratch git repository; `team`
//! runs a team's processes, `pty` a screen in a pseudo-terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // in a fixture a failure is the report

pub mod pty;
pub mod team;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

pub fn crew_exe() -> &'static str {
    env!("CARGO_BIN_EXE_crew")
}

pub fn bench_exe() -> &'static str {
    env!("CARGO_BIN_EXE_crew-bench")
}

/// `crew-bench ARGS`, which must succeed; its JSON report.
pub fn bench_report(args: &[&str]) -> serde_json::Value {
    let out = Command::new(bench_exe()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "crew-bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    /// An empty git repository (no crew.toml yet).
    pub fn git() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git init failed");
        Repo { dir }
    }

    /// A git repository after `crew init` (team: lead, alice, bob, carol) on a machine where
    /// it finds no model (the agents have none; nothing here starts them).
    pub fn init() -> Repo {
        let repo = Repo::git();
        let out = Command::new(crew_exe())
            .args(["init", "--team", "test"])
            .current_dir(repo.path())
            .env("PATH", "/usr/bin:/bin")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env("CREW_LOCAL_MODEL_PORTS", "")
            .output()
            .unwrap();
        let run = Run::from(out);
        assert_eq!(run.code, 0, "crew init failed: {}", run.stderr);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn crew(&self, args: &[&str]) -> Run {
        Command::new(crew_exe())
            .args(args)
            .current_dir(self.path())
            .output()
            .unwrap()
            .into()
    }

    /// Runs crew and insists on success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let run = self.crew(args);
        assert_eq!(run.code, 0, "crew {args:?} failed: {}", run.stderr);
        run.stdout
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }
}
