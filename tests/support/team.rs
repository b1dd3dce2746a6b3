//! Helpers for the end-to-end team tests: a committed scratch repository with a crew.toml and a
//! test scenario, `crew` processes in the background (reaped, and ended when the test ends), and
//! polling with a timeout.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::Value;

use crew_test_support::wait::{BUDGET, eventually};

use super::{Repo, crew_exe};

/// Every line of a JSON-lines file (a fake CLI's log), none while it does not exist yet.
pub fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A `crew` process started by the test. A thread reaps it as soon as it exits, so it never
/// lingers as a zombie that `kill(pid, 0)` (and so crew's liveness check) still sees.
pub struct Bg {
    pub pid: u32,
    exited: Receiver<Option<i32>>,
    code: Option<Option<i32>>,
}

impl Bg {
    /// Waits for the exit (at most `timeout`) and returns its code (`None`: ended by a signal).
    pub fn wait(&mut self, timeout: Duration) -> Option<i32> {
        if let Some(code) = self.code {
            return code;
        }
        match self.exited.recv_timeout(timeout) {
            Ok(code) => {
                self.code = Some(code);
                code
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!("pid {} still running after {timeout:?}", self.pid)
            }
            Err(RecvTimeoutError::Disconnected) => panic!("lost the reaper of pid {}", self.pid),
        }
    }

    pub fn has_exited(&mut self) -> bool {
        if self.code.is_none() {
            self.code = self.exited.try_recv().ok();
        }
        self.code.is_some()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if !self.has_exited() {
            signal(self.pid, libc::SIGKILL);
        }
    }
}

pub fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: a plain signal to a process this test started.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// A scratch repository holding a team: crew.toml, the scenario at `scenario.toml`, any extra
/// files, all committed on `main` (worktrees branch from it).
pub struct Team {
    pub repo: Repo,
}

impl Team {
    pub fn new(crew_toml: &str, scenario: &str, files: &[(&str, &str)]) -> Team {
        let repo = Repo::git();
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/scenarios")
            .join(scenario);
        std::fs::copy(&source, repo.join("scenario.toml")).unwrap();
        std::fs::write(repo.join("crew.toml"), crew_toml).unwrap();
        std::fs::write(repo.join("README.md"), "# scratch\n").unwrap();
        for (path, text) in files {
            let path = repo.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::write(
            repo.join(".git/info/exclude"),
            ".tasks\n.mailboxes\n.worktrees\n.crew\n",
        )
        .unwrap();
        git(repo.path(), &["add", "-A"]);
        git(repo.path(), &["commit", "-q", "-m", "scratch team"]);
        std::fs::create_dir_all(repo.join(".crew")).unwrap();
        Team { repo }
    }

    /// Starts `crew ARGS` in the background; its output goes to `.crew/test-LABEL.log`.
    pub fn spawn(&self, label: &str, args: &[&str]) -> Bg {
        self.spawn_with_env(label, args, &[])
    }

    /// As [`Team::spawn`], with these variables added to the process's environment.
    pub fn spawn_with_env(&self, label: &str, args: &[&str], env: &[(&str, &str)]) -> Bg {
        let log =
            std::fs::File::create(self.repo.join(&format!(".crew/test-{label}.log"))).unwrap();
        let err = log.try_clone().unwrap();
        let mut child = Command::new(crew_exe())
            .args(args)
            .envs(env.iter().copied())
            .current_dir(self.repo.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap();
        let pid = child.id();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let code = child.wait().ok().and_then(|s| s.code());
            let _ = tx.send(code);
        });
        Bg {
            pid,
            exited: rx,
            code: None,
        }
    }

    pub fn worker(&self, name: &str) -> Bg {
        self.spawn(name, &["worker", "--name", name])
    }

    /// `crew status --json`'s row for `name`.
    pub fn status(&self, name: &str) -> Value {
        let all = self.repo.json(&["status", "--json"]);
        all["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} is not in crew status: {all}"))
    }

    /// Every event of `name`'s transcripts, oldest session first (session ids sort by time).
    pub fn transcript_events(&self, name: &str) -> Vec<Value> {
        let dir = self.repo.join(&format!(".crew/transcripts/{name}"));
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let mut events = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(file).unwrap();
            events.extend(
                text.lines()
                    .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone()),
            );
        }
        events
    }

    pub fn state(&self, name: &str) -> String {
        self.status(name)["state"].as_str().unwrap().to_string()
    }

    pub fn wait_state(&self, name: &str, state: &str, timeout: Duration) -> Value {
        eventually(&format!("{name} to be {state}"), timeout, || {
            let s = self.status(name);
            (s["state"] == state).then_some(s)
        })
    }

    pub fn task(&self, id: &str) -> Value {
        let text = std::fs::read_to_string(self.repo.join(&format!(".tasks/{id}.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    pub fn wait_task(&self, id: &str, status: &str, timeout: Duration) -> Value {
        eventually(&format!("{id} to be {status}"), timeout, || {
            let t = self.task(id);
            (t["status"] == status).then_some(t)
        })
    }

    /// Every message in `name`'s inbox, read without moving its cursor.
    pub fn inbox(&self, name: &str) -> Vec<Value> {
        let v = self
            .repo
            .json(&["inbox", name, "--all", "--peek", "--json"]);
        v["messages"].as_array().unwrap().clone()
    }

    /// Waits until `name` is WAITING on a request; its id and the request in the lead's inbox.
    pub fn waiting_request(&self, name: &str, timeout: Duration) -> (String, Value) {
        let waiting = self.wait_state(name, "WAITING", timeout);
        let request_id = waiting["waiting_on"].as_str().unwrap().to_string();
        let asked = self
            .inbox("lead")
            .into_iter()
            .find(|m| m["request_id"] == request_id.as_str())
            .expect("the request is in the lead's inbox");
        (request_id, asked)
    }

    pub fn requests(&self) -> Vec<Value> {
        let v = self.repo.json(&["requests", "--json"]);
        v["requests"].as_array().unwrap().clone()
    }

    /// Why task `id` failed, once it has.
    pub fn failure(&self, id: &str, timeout: Duration) -> String {
        let failed = self.wait_task(id, "failed", timeout);
        failed["result"].as_str().unwrap().to_string()
    }

    /// The process ids in `.crew/agents/*.json`.
    pub fn agent_pids(&self) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir(self.repo.join(".crew/agents")) else {
            return Vec::new();
        };
        dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
            .filter(|v| v["state"] != "SHUTDOWN" && v["state"] != "DEAD")
            .filter_map(|v| v["pid"].as_u64().and_then(|p| u32::try_from(p).ok()))
            .collect()
    }
}

impl Drop for Team {
    /// Workers started through `crew up` or `crew worker restart` are not the test's children;
    /// end any still running so nothing outlives the test.
    fn drop(&mut self) {
        for pid in self.agent_pids() {
            if pid != std::process::id() {
                signal(pid, libc::SIGKILL);
            }
        }
    }
}

/// Runs `git ARGS` in `dir` (as a test author), failing the test if it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@crew.invalid"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?} failed");
}

/// A crew.toml: `team` adds lines to `[team]`; `teammates` are `(name, role, extra lines)`;
/// every agent plays `scenario.toml`.
pub fn crew_toml(
    team: &str,
    teammates: &[(&str, &str, &str)],
    permissions: &str,
    worker: &str,
) -> String {
    let mut text = format!(
        "[team]\nname = \"test\"\nbase_branch = \"main\"\n{team}\n\n[lead]\nname = \"lead\"\nmodel = {{ provider = \"scripted\", scenario = \"scenario.toml\" }}\n",
    );
    for (name, role, extra) in teammates {
        text.push_str(&format!(
            "\n[[teammate]]\nname = \"{name}\"\nrole = \"{role}\"\n{extra}\nmodel = {{ provider = \"scripted\", scenario = \"scenario.toml\" }}\n"
        ));
    }
    text.push_str(&format!(
        "\n[permissions]\n{permissions}\n\n[worker]\n{worker}\n"
    ));
    text
}

/// Sleeps 30 s the first time it runs in this repository and returns at once afterwards: the
/// first worker on the task is busy long enough to be killed or asked to stop, the next one
/// finishes quickly. A sleep that ran to its end leaves `.crew/slow-finished`: without it, a
/// slow step that is gone was ended, however long that took.
pub const SLOW_SH: &str = "if mkdir .crew/slow-once 2>/dev/null; then echo $$ > .crew/slow.pid; sleep 30; touch .crew/slow-finished; fi\necho finished\n";

/// alice and bob (implementers that do not write, so both run in the repository root) playing
/// test_slow.toml; `sh slow.sh` is allowed by a rule and is the test command their read-only
/// bash accepts. The sandbox is off: the slow step leaves its marks in the repository's `.crew`
/// for the test to see, which a sandboxed teammate that does not write cannot do.
pub fn slow_team() -> Team {
    let toml = crew_toml(
        "test_command = \"sh slow.sh\"",
        &[("alice", "implementer", ""), ("bob", "implementer", "")],
        "mode = \"ask\"\nallow = [\"bash(sh slow.sh)\"]\nsandbox = \"off\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
    );
    Team::new(&toml, "test_slow.toml", &[("slow.sh", SLOW_SH)])
}

/// Waits until some worker runs the slow step of `task`; returns its name.
pub fn slow_step_holder(team: &Team, task: &str) -> String {
    eventually("the slow step to start", BUDGET, || {
        let t = team.task(task);
        let owner = t["owner"].as_str()?.to_string();
        (t["status"] == "in_progress" && team.repo.join(".crew/slow-once").exists())
            .then_some(owner)
    })
}
