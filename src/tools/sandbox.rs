//! Optional Linux-namespace sandbox for commands: a new user namespace (mapped to root) and
//! an empty network namespace via `unshare`. Whether it works is probed once per process;
//! where it does not (no `unshare`, user namespaces disabled), commands run unsandboxed and
//! the caller is told why.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The sandbox setting from configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    #[default]
    Off,
    /// Run commands in fresh user + network namespaces when the kernel allows it.
    Namespaces,
}

const UNSHARE_ARGS: [&str; 4] = ["--user", "--map-root-user", "--net", "--"];

/// Whether `unshare --user --map-root-user --net` works here; probed once per process.
pub fn namespaces_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let works = std::process::Command::new("unshare")
            .args(UNSHARE_ARGS)
            .arg("true")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !works {
            tracing::warn!("namespace sandbox unavailable: commands will run without it");
        }
        works
    })
}

/// What the sandbox will actually do for a command under `mode`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxPlan {
    None,
    Namespaces,
    /// Requested but unavailable: run unsandboxed, with this warning for the transcript.
    Fallback(String),
}

pub fn plan(mode: SandboxMode) -> SandboxPlan {
    match mode {
        SandboxMode::Off => SandboxPlan::None,
        SandboxMode::Namespaces if namespaces_available() => SandboxPlan::Namespaces,
        SandboxMode::Namespaces => SandboxPlan::Fallback(
            "sandbox requested but Linux user namespaces are unavailable here; the command ran unsandboxed"
                .to_string(),
        ),
    }
}

/// Program and arguments that run `program args…` under the plan.
pub fn wrap(plan: &SandboxPlan, program: &str, args: Vec<String>) -> (String, Vec<String>) {
    match plan {
        SandboxPlan::Namespaces => {
            let mut wrapped: Vec<String> = UNSHARE_ARGS.iter().map(|s| s.to_string()).collect();
            wrapped.push(program.to_string());
            wrapped.extend(args);
            ("unshare".to_string(), wrapped)
        }
        SandboxPlan::None | SandboxPlan::Fallback(_) => (program.to_string(), args),
    }
}
