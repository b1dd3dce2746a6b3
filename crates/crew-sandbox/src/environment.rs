//! The environment a confined command gets: an allow-list, not a scrub. A variable reaches a
//! command only when it is named here or in `[permissions] env`, so a credential with a name
//! no rule foresaw (`GH_PAT`, `DATABASE_URL` with a password, `SENTRY_DSN`) stays with crew,
//! and so do variables that point at a server outside the sandbox (`SSH_AUTH_SOCK`, `TMUX`,
//! `DBUS_SESSION_BUS_ADDRESS`, `DISPLAY`).

/// What every command gets: where programs are, who and where it is, how text looks.
const BASE: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "TMPDIR",
];

/// What a build or a test run needs to find its toolchain and caches: Rust, Go, Node, Python,
/// Ruby, the JVM and C compilers.
const TOOLCHAINS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_TARGET_DIR",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "NVM_DIR",
    "NODE_PATH",
    "PNPM_HOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "PYENV_ROOT",
    "RBENV_ROOT",
    "GEM_HOME",
    "GEM_PATH",
    "JAVA_HOME",
    "GRADLE_USER_HOME",
    "CC",
    "CXX",
    "PKG_CONFIG_PATH",
    "LIBRARY_PATH",
    "LD_LIBRARY_PATH",
    "CPATH",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
];

/// Prefixes of whole families that carry no secret: the locale's categories.
const PREFIXES: &[&str] = &["LC_"];

/// Whether `name` may reach a command, `extra` being what `[permissions] env` lists.
pub fn allowed(name: &str, extra: &[String]) -> bool {
    BASE.contains(&name)
        || TOOLCHAINS.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || extra.iter().any(|e| e == name)
}

/// The variables of `vars` that may reach a command.
pub fn filter(
    vars: impl IntoIterator<Item = (String, String)>,
    extra: &[String],
) -> Vec<(String, String)> {
    vars.into_iter()
        .filter(|(name, _)| allowed(name, extra))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_variables_pass() {
        let vars = [
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "CARGO_HOME",
            "GOPATH",
            "GH_PAT",
            "DATABASE_URL",
            "SENTRY_DSN",
            "SSH_AUTH_SOCK",
            "TMUX",
            "MY_TOOL_SETTING",
        ]
        .map(|n| (n.to_string(), "v".to_string()));
        let passed = |extra: &[String]| -> Vec<String> {
            filter(vars.clone(), extra)
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        assert_eq!(
            passed(&[]),
            ["PATH", "HOME", "LANG", "LC_ALL", "CARGO_HOME", "GOPATH"]
        );
        assert!(passed(&["MY_TOOL_SETTING".to_string()]).contains(&"MY_TOOL_SETTING".to_string()));
    }
}
