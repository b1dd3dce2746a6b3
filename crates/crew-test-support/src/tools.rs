//! Helpers shared by the tools integration tests.

use std::path::{Path, PathBuf};

use crew_tools::permissions::{BypassSwitches, PermissionMode, PermissionPolicy, RuleSet};
use crew_tools::{Pipeline, ToolCall, ToolContext, ToolRegistry};
use serde_json::Value;
use tempfile::TempDir;

/// A repository-like temp dir: `ws/` is the workspace, `.crew/tool-results` the spill dir.
pub struct Fixture {
    pub dir: TempDir,
    pub ctx: ToolContext,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ctx = ToolContext::new(&ws, root.join(".crew/tool-results"));
        Self { dir, ctx }
    }

    pub fn root(&self) -> PathBuf {
        self.ctx.workspace.parent().unwrap().to_path_buf()
    }

    pub fn ws(&self) -> &Path {
        &self.ctx.workspace
    }

    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.ws().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Writes an executable hook script outside the workspace and returns the command to run it.
    pub fn hook(&self, name: &str, body: &str) -> String {
        let path = self.root().join("hooks").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        format!("sh {}", path.display())
    }
}

pub fn policy(
    mode: PermissionMode,
    allow: &[&str],
    ask: &[&str],
    deny: &[&str],
) -> PermissionPolicy {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    let rules = RuleSet {
        allow: owned(allow),
        ask: owned(ask),
        deny: owned(deny),
    };
    PermissionPolicy::new(mode, &rules, BypassSwitches::default()).unwrap()
}

/// Core tools under `mode` with the given allow and deny rules, no hooks, no prompter.
pub fn pipeline(mode: PermissionMode, allow: &[&str], deny: &[&str]) -> Pipeline {
    Pipeline::new(
        ToolRegistry::core_tools().unwrap(),
        policy(mode, allow, &[], deny),
    )
}

pub fn call(id: &str, name: &str, input: Value) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        input,
    }
}

/// Whether a process id still names a live (non-zombie) process.
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}
