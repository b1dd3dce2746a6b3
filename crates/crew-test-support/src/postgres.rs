//! A throwaway PostgreSQL cluster for a test: `initdb` into a scratch folder, a server on
//! 127.0.0.1 at a free port with its socket inside that folder, trust auth for user `crew`, and
//! `pg_ctl stop -m immediate` when the guard drops (a failing test too). As root the server runs
//! as `nobody` (PostgreSQL refuses root), which then owns the folder. Binaries: the folder in
//! `CREW_PG_BIN`, else `initdb` on PATH, else the newest `/usr/lib/postgresql/*/bin`.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct PgCluster {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    /// `Some("nobody")` when the test runs as root.
    run_as: Option<&'static str>,
    _dir: tempfile::TempDir,
}

/// Why no cluster can be started here, or `None` when one can.
pub fn unavailable() -> Option<String> {
    match server_bin() {
        Some(_) => None,
        None => Some(
            "PostgreSQL server binaries not found (initdb, pg_ctl): set CREW_PG_BIN or install \
             the postgresql package"
                .into(),
        ),
    }
}

/// Starts a cluster, or says why a test skips: `None` (after printing the reason) when the
/// server binaries are not installed.
pub fn start() -> Option<PgCluster> {
    if let Some(reason) = unavailable() {
        eprintln!("skipped: {reason}");
        return None;
    }
    Some(PgCluster::start())
}

fn server_bin() -> Option<PathBuf> {
    let has_tools = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("CREW_PG_BIN").map(PathBuf::from) {
        return has_tools(&dir).then_some(dir);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|d| has_tools(d))
            .map(|d| {
                // pg_ctl finds `postgres` beside itself: resolve a symlink into the real folder.
                std::fs::canonicalize(d.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or(d)
            })
    });
    if on_path.is_some() {
        return on_path;
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|d| has_tools(d))
        .collect();
    versions.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok())
            .unwrap_or(0)
    });
    versions.pop()
}

impl PgCluster {
    fn start() -> PgCluster {
        let bin = server_bin().expect("checked by start()");
        let dir = tempfile::Builder::new()
            .prefix("crew-pg-")
            .tempdir()
            .unwrap();
        let run_as = (unsafe { libc::geteuid() } == 0).then_some("nobody");
        if let Some(user) = run_as {
            let (uid, gid) = user_ids(user);
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let data = dir.path().join("data");
        let port = free_port();
        let cluster = PgCluster {
            bin,
            data,
            port,
            run_as,
            _dir: dir,
        };
        cluster.run(
            "initdb",
            &[
                "-D",
                &cluster.data.display().to_string(),
                "-U",
                "crew",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c max_connections=200",
            cluster.socket_dir().display()
        );
        cluster.pg_ctl(&[
            "-o",
            &options,
            "-l",
            &cluster.log().display().to_string(),
            "-w",
            "-t",
            "120",
            "start",
        ]);
        cluster
    }

    /// `postgres://crew@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        self.url_as("crew")
    }

    /// The URL for logging in as database role `role` (trust auth: no password asked).
    pub fn url_as(&self, role: &str) -> String {
        format!("postgres://{role}@127.0.0.1:{}/postgres", self.port)
    }

    /// From now on every role but `crew` logs in over TCP with its password (SCRAM), and
    /// the server logs every statement: as a person's server would check and might log.
    pub fn require_passwords(&self) {
        std::fs::write(
            self.data.join("pg_hba.conf"),
            "local all all trust\n\
             host all crew 127.0.0.1/32 trust\n\
             host all all 127.0.0.1/32 scram-sha-256\n",
        )
        .unwrap();
        self.add_setting("log_statement = 'all'");
        self.pg_ctl(&["reload"]);
    }

    /// Turns TLS on with a certificate for 127.0.0.1 signed by a CA made here (OpenSSL's
    /// command line makes both); returns the CA's certificate file, which a client verifies
    /// the server against. `None` (the test skips) without `openssl`.
    pub fn enable_tls(&self) -> Option<PathBuf> {
        let dir = self.socket_dir().join("tls");
        std::fs::create_dir_all(&dir).unwrap();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output();
            match out {
                Ok(out) if out.status.success() => Some(()),
                Ok(out) => panic!("openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr)),
                Err(_) => None,
            }
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=crew test CA"];
        ca.extend(ec);
        ca.extend(["-keyout", "ca.key", "-out", "ca.crt"]);
        if openssl(&ca).is_none() {
            eprintln!("skipped: no `openssl` command to make the test certificates");
            return None;
        }
        let mut request = vec!["req", "-subj", "/CN=127.0.0.1"];
        request.extend(ec);
        request.extend(["-keyout", "server.key", "-out", "server.csr"]);
        openssl(&request)?;
        std::fs::write(dir.join("san"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san",
            "-out",
            "server.crt",
        ])?;
        for file in ["server.crt", "server.key"] {
            std::fs::copy(dir.join(file), self.data.join(file)).unwrap();
            let target = self.data.join(file);
            std::fs::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
            if let Some(user) = self.run_as {
                let (uid, gid) = user_ids(user);
                std::os::unix::fs::chown(&target, Some(uid), Some(gid)).unwrap();
            }
        }
        self.add_setting("ssl = on");
        self.pg_ctl(&["reload"]);
        Some(dir.join("ca.crt"))
    }

    /// Appends a setting to the cluster's `postgresql.auto.conf` (read at the next reload).
    fn add_setting(&self, line: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data.join("postgresql.auto.conf"))
            .unwrap();
        writeln!(file, "{line}").unwrap();
    }

    /// Restarts the server (a fast shutdown: every connection is cut), waiting until it
    /// accepts connections again.
    pub fn restart(&self) {
        // With the log file again: without one the new server would write to pg_ctl's output,
        // which then never ends.
        let log = self.log().display().to_string();
        self.pg_ctl(&["-m", "fast", "-l", &log, "-w", "-t", "120", "restart"]);
    }

    /// The server's log, for a failure's message.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    fn socket_dir(&self) -> PathBuf {
        self.data.parent().unwrap_or(&self.data).to_path_buf()
    }

    fn log(&self) -> PathBuf {
        self.socket_dir().join("server.log")
    }

    fn pg_ctl(&self, args: &[&str]) {
        let mut all = vec!["-D".to_string(), self.data.display().to_string()];
        all.extend(args.iter().map(|a| a.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        self.run("pg_ctl", &all);
    }

    fn command(&self, tool: &str, args: &[&str]) -> Command {
        let path = self.bin.join(tool);
        let mut cmd = match self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        };
        cmd.args(args).current_dir(self.socket_dir());
        cmd
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let out = self.command(tool, args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} {args:?} failed: {}{}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log_text()
        );
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ = self
            .command("pg_ctl", &["-D", &data, "stop", "-m", "immediate", "-w"])
            .output();
    }
}

fn user_ids(user: &str) -> (u32, u32) {
    let name = std::ffi::CString::new(user).unwrap();
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(!pw.is_null(), "no user {user} to run PostgreSQL as");
    unsafe { ((*pw).pw_uid, (*pw).pw_gid) }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
