//! The sandbox every command of an agent's tools runs in (on Linux, on by default): the parent
//! wraps the command as `<crew> sandbox-exec --policy JSON -- /bin/bash -c CMD`, and that
//! hidden command confines itself ([`confine`]) before it execs. What the kernel offers is
//! probed once per process; where a piece is missing, commands run unconfined and the
//! permission step asks the person for every one of them.

pub mod confine;
pub mod environment;
pub mod exec;
pub mod policy;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

pub use confine::{ConfineError, Piece};
pub use crew_protocol::SandboxMode;
pub use policy::{ResourceLimits, SandboxPolicy};

/// The hidden subcommand of the crew executable that confines a command.
pub const HELPER_COMMAND: &str = "sandbox-exec";

/// Set by tests only: the probe reports this piece (kebab-case, e.g. `landlock`) as missing.
pub const TEST_MISSING_ENV: &str = "CREW_SANDBOX_TEST_MISSING";

/// How one agent's commands are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub mode: SandboxMode,
    /// Whether this agent's commands may use the network (`network = true` in crew.toml).
    pub network: bool,
    /// Whether the agent writes in its workspace; otherwise only its temporary folder is
    /// writable.
    pub workspace_writable: bool,
    /// The crew executable that runs [`HELPER_COMMAND`].
    pub helper: PathBuf,
    /// Processes, memory and file size (`[limits]` in crew.toml).
    pub limits: ResourceLimits,
    /// Variables commands get beyond [`environment`]'s allow-list (`[permissions] env`).
    pub env: Vec<String>,
    /// The person's secrets commands may read after all (`[permissions] readable_secrets`;
    /// see [`policy::PERSONS_SECRETS`]).
    pub readable_secrets: Vec<PathBuf>,
}

/// What happens to a command under a [`Sandbox`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxPlan {
    Confined,
    /// `sandbox = "off"`: unconfined, as the person chose.
    Off,
    /// The kernel lacks a piece: unconfined, so every command asks first.
    Unavailable(ConfineError),
}

impl Sandbox {
    /// No confinement: for contexts built by hand (tests, benchmarks), never for agents.
    pub fn off() -> Self {
        Sandbox {
            mode: SandboxMode::Off,
            network: true,
            workspace_writable: true,
            helper: PathBuf::new(),
            limits: ResourceLimits::default(),
            env: Vec::new(),
            readable_secrets: Vec::new(),
        }
    }

    /// A sandbox whose helper is this process's own executable.
    pub fn new(mode: SandboxMode, network: bool, workspace_writable: bool) -> Self {
        Sandbox {
            mode,
            network,
            workspace_writable,
            helper: std::env::current_exe().unwrap_or_default(),
            limits: ResourceLimits::default(),
            env: Vec::new(),
            readable_secrets: Vec::new(),
        }
    }

    /// This sandbox with these resource limits.
    pub fn with_limits(mut self, limits: ResourceLimits) -> Self {
        self.limits = limits;
        self
    }

    /// This sandbox, its commands also reading these of the person's secrets.
    pub fn with_readable_secrets(mut self, paths: Vec<PathBuf>) -> Self {
        self.readable_secrets = paths;
        self
    }

    /// This sandbox, its commands also getting the variables `names`.
    pub fn with_env(mut self, names: Vec<String>) -> Self {
        self.env = names;
        self
    }

    /// The variables of `vars` a command under this sandbox gets (see [`environment`]); the
    /// same whether or not it is confined.
    pub fn environment(
        &self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Vec<(String, String)> {
        environment::filter(vars, &self.env)
    }

    /// The same sandbox with the workspace read-only: for what must not change the files an
    /// agent works on (its hooks, and commands granted because they only read).
    pub fn read_only(&self) -> Self {
        Sandbox {
            workspace_writable: false,
            ..self.clone()
        }
    }

    pub fn plan(&self) -> SandboxPlan {
        match self.mode {
            SandboxMode::Off => SandboxPlan::Off,
            SandboxMode::Auto => match readiness(&self.helper) {
                Readiness::Ready { .. } => SandboxPlan::Confined,
                Readiness::Missing(missing) => SandboxPlan::Unavailable(missing.clone()),
            },
        }
    }

    /// `program args…` as it runs under the plan: the helper's command line when confined,
    /// plus the environment (with `TMPDIR` pointing at a private temporary folder, removed
    /// when the returned value is dropped).
    pub fn prepare(
        &self,
        workspace: &Path,
        program: &str,
        args: Vec<String>,
        mut env: Vec<(String, String)>,
    ) -> std::io::Result<Prepared> {
        if self.plan() != SandboxPlan::Confined {
            return Ok(Prepared {
                program: program.to_string(),
                args,
                env,
                temp: None,
            });
        }
        let temp = tempfile::Builder::new().prefix("crew-tmp-").tempdir()?;
        let temp_path = temp.path().canonicalize()?;
        let wrapped = self.helper_args(workspace, &temp_path, program, args)?;
        env.retain(|(name, _)| name != "TMPDIR");
        env.push(("TMPDIR".to_string(), temp_path.display().to_string()));
        Ok(Prepared {
            program: self.helper.display().to_string(),
            args: wrapped,
            env,
            temp: Some(temp),
        })
    }

    /// The helper's arguments that run `program args…` confined to `workspace` and the
    /// temporary folder `temp` (which the caller keeps): for a command another program runs,
    /// such as a Claude Code teammate's Bash, rewritten by crew's hook.
    pub fn helper_args(
        &self,
        workspace: &Path,
        temp: &Path,
        program: &str,
        args: Vec<String>,
    ) -> std::io::Result<Vec<String>> {
        let policy = SandboxPolicy::new(
            workspace,
            self.workspace_writable,
            temp,
            self.network,
            self.limits,
            &self.readable_secrets,
        );
        let mut wrapped = vec![
            HELPER_COMMAND.to_string(),
            "--policy".to_string(),
            serde_json::to_string(&policy).map_err(std::io::Error::other)?,
            "--".to_string(),
            program.to_string(),
        ];
        wrapped.extend(args);
        Ok(wrapped)
    }

    /// A line for the person when commands are not confined (`crew up`, the log, the
    /// screen's header); `None` when they are.
    pub fn warning(&self) -> Option<String> {
        match self.plan() {
            SandboxPlan::Confined => None,
            SandboxPlan::Off => Some(
                "sandbox OFF (crew.toml: sandbox = \"off\"): commands run with your full rights \
                 — they can write anywhere you can, use the network and read other processes"
                    .to_string(),
            ),
            SandboxPlan::Unavailable(missing) => Some(format!(
                "sandbox unavailable — {missing}; every command asks you first"
            )),
        }
    }
}

/// Said with a confined command's failure, so the transcript tells why a write or a
/// connection was refused.
pub const CONFINED_HINT: &str = "ran in the sandbox: writes outside the workspace and its \
    temporary folder, to .git and to crew's files, Unix sockets, network sockets (unless \
    allowed) and other processes are refused";

/// A command ready to spawn; keeps its temporary folder alive until dropped.
#[derive(Debug)]
pub struct Prepared {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    temp: Option<tempfile::TempDir>,
}

impl Prepared {
    /// Whether the command runs in the sandbox.
    pub fn confined(&self) -> bool {
        self.temp.is_some()
    }
}

/// What the probe found: every piece there, or the first one missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Readiness {
    Ready { landlock_abi: i32 },
    Missing(ConfineError),
}

/// Whether the helper can confine commands here; probed once per process, by running the
/// helper's whole setup (namespaces, a read-only mount, `/proc`, Landlock, seccomp).
pub fn readiness(helper: &Path) -> &'static Readiness {
    static READINESS: OnceLock<Readiness> = OnceLock::new();
    READINESS.get_or_init(|| {
        let found = probe(helper);
        match &found {
            Readiness::Ready { landlock_abi } => {
                tracing::info!(landlock_abi, "sandbox ready");
            }
            Readiness::Missing(missing) => {
                tracing::warn!(%missing, "sandbox unavailable: every command will ask");
            }
        }
        found
    })
}

fn probe(helper: &Path) -> Readiness {
    if let Ok(piece) = std::env::var(TEST_MISSING_ENV) {
        let piece = serde_json::from_value(serde_json::Value::String(piece.clone()))
            .unwrap_or(Piece::Helper);
        return Readiness::Missing(ConfineError {
            piece,
            detail: format!("reported missing by {TEST_MISSING_ENV} (a test switch)"),
        });
    }
    let missing = |detail: String| {
        Readiness::Missing(ConfineError {
            piece: Piece::Helper,
            detail,
        })
    };
    let Ok(temp) = tempfile::Builder::new().prefix("crew-probe-").tempdir() else {
        return missing("cannot make a temporary folder for the probe".into());
    };
    let root = temp.path().canonicalize().unwrap_or(temp.path().into());
    let protected = root.join(".git");
    if let Err(e) = std::fs::create_dir(&protected) {
        return missing(format!("{}: {e}", protected.display()));
    }
    let policy = SandboxPolicy {
        writable: vec![root],
        read_only: vec![protected],
        hidden: Vec::new(),
        network: false,
        limits: ResourceLimits::default(),
    };
    let output = std::process::Command::new(helper)
        .args([HELPER_COMMAND, "--probe", "--policy"])
        .arg(serde_json::to_string(&policy).unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .output();
    match output {
        Err(e) => missing(format!("{}: {e}", helper.display())),
        Ok(out) => serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            missing(format!(
                "{} {HELPER_COMMAND} --probe answered {:?} ({})",
                helper.display(),
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }),
    }
}
