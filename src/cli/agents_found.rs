//! What `crew init` finds on this machine: coding-agent CLIs on PATH, API keys in the
//! environment, and OpenAI-compatible servers answering on loopback.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The loopback ports asked for `/v1/models` unless `CREW_LOCAL_MODEL_PORTS` names others
/// (comma-separated; empty asks none): Ollama, llama.cpp's llama-server, LM Studio, vLLM.
pub const LOCAL_PORTS: &[(u16, &str)] = &[
    (11434, "Ollama"),
    (8080, "llama-server"),
    (1234, "LM Studio"),
    (8000, "vLLM"),
];
pub const PORTS_VAR: &str = "CREW_LOCAL_MODEL_PORTS";

/// A CLI's `--version` must answer within this.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// A local server must accept and answer within these.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
/// Bigger answers to `/v1/models` are not a model list.
const MAX_ANSWER: u64 = 1 << 20;

/// A coding-agent CLI on PATH, and whether crew speaks its version.
#[derive(Debug, Clone)]
pub enum Cli {
    Missing,
    /// On PATH but unusable: it did not run, or crew does not speak its version.
    Unusable {
        path: PathBuf,
        why: String,
    },
    Usable {
        version: String,
    },
}

/// A server that answered `GET {base_url}/models`.
#[derive(Debug, Clone)]
pub struct LocalServer {
    pub base_url: String,
    pub kind: &'static str,
    pub models: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Found {
    pub claude: Cli,
    pub codex: Cli,
    pub anthropic_key: bool,
    pub openai_key: bool,
    pub local: Vec<LocalServer>,
    /// The ports asked, for "not found" lines.
    pub ports: Vec<u16>,
}

impl Found {
    /// Looks at this process's PATH and environment and the loopback ports.
    pub fn look() -> anyhow::Result<Found> {
        let key =
            |name: &str| crew_model::secret::env_var(name).is_some_and(|v| !v.trim().is_empty());
        let ports = ports()?;
        let local = ports
            .iter()
            .filter_map(|port| {
                let kind = LOCAL_PORTS
                    .iter()
                    .find(|(p, _)| p == port)
                    .map_or("an OpenAI-compatible server", |(_, kind)| *kind);
                let base_url = format!("http://127.0.0.1:{port}/v1");
                let models = list_models(&base_url).ok()?;
                Some(LocalServer {
                    base_url,
                    kind,
                    models,
                })
            })
            .collect();
        Ok(Found {
            claude: cli(
                "claude",
                crew_team::work::claude_code_version_supported,
                "2",
            ),
            codex: cli(
                "codex",
                crew_team::work::codex_version_supported,
                "0.171 or later",
            ),
            anthropic_key: key("ANTHROPIC_API_KEY"),
            openai_key: key("OPENAI_API_KEY"),
            local,
            ports,
        })
    }
}

fn ports() -> anyhow::Result<Vec<u16>> {
    match std::env::var(PORTS_VAR) {
        Err(_) => Ok(LOCAL_PORTS.iter().map(|(p, _)| *p).collect()),
        Ok(list) => list
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                p.parse::<u16>().map_err(|_| {
                    anyhow::anyhow!("{PORTS_VAR}={list:?}: {p:?} is not a port number")
                })
            })
            .collect(),
    }
}

/// `bin` on PATH, run with `--version`, its version checked with `supported`.
fn cli(bin: &str, supported: fn(&str) -> bool, wanted: &str) -> Cli {
    let Some(path) = on_path(bin) else {
        return Cli::Missing;
    };
    let unusable = |why: String| Cli::Unusable {
        path: path.clone(),
        why,
    };
    match version_of(&path) {
        Err(why) => unusable(why),
        Ok(version) if supported(&version) => Cli::Usable { version },
        Ok(version) => unusable(format!(
            "version {version} is not one crew speaks (it needs {wanted})"
        )),
    }
}

pub(crate) fn on_path(bin: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(bin))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The first word of `path --version`'s output that reads as a version (`2.1.197`).
pub(crate) fn version_of(path: &Path) -> Result<String, String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("`{} --version` did not start: {e}", path.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{} --version` did not answer within {} s",
                    path.display(),
                    VERSION_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("`{} --version`: {e}", path.display())),
        }
    };
    let mut out = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = stdout.take(64 * 1024).read_to_string(&mut out);
    }
    if !status.success() {
        return Err(format!("`{} --version` failed ({status})", path.display()));
    }
    out.split_whitespace()
        .map(|w| w.trim_start_matches('v'))
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "`{} --version` printed no version: {:?}",
                path.display(),
                out.trim()
            )
        })
}

/// The model ids `GET {base_url}/models` lists; only plain `http://` servers are asked.
pub fn list_models(base_url: &str) -> Result<Vec<String>, String> {
    let rest = base_url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{base_url} is not an http:// address crew can ask here"))?;
    let (authority, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let address: SocketAddr = if authority.contains(':') {
        authority.parse()
    } else {
        format!("{authority}:80").parse()
    }
    .map_err(|_| format!("{base_url}: crew asks numeric addresses only (127.0.0.1:PORT)"))?;
    let mut stream = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT)
        .map_err(|e| format!("{address}: {e}"))?;
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(ANSWER_TIMEOUT)))
        .map_err(|e| e.to_string())?;
    let path = format!("/{}/models", prefix.trim_end_matches('/')).replace("//", "/");
    // HTTP/1.0: the answer is not chunked and ends when the server closes.
    let request =
        format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nAccept: application/json\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream
        .take(MAX_ANSWER)
        .read_to_end(&mut answer)
        .map_err(|e| format!("{address}: {e}"))?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{address}: not an HTTP answer"))?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("{base_url}/models answered {status:?}"));
    }
    let list: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| format!("{base_url}/models: not a model list ({e})"))?;
    Ok(list["data"]
        .as_array()
        .map(|models| {
            models
                .iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}
