//! A teammate on a second "host": `crew worker --join` in a folder and HOME of its own, in a
//! mount namespace where the person's checkout is not there at all (a tmpfs over it), reaching
//! the person's side only through PostgreSQL and the team's git remote. It reads the published
//! team, clones the remote, claims the person's task, does it in its own worktree, pushes the
//! task's branch and puts it in review; the person reviews and merges it from the store into
//! their checkout, and the teammate, with nothing left, idles out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crew_store::{AgentName, AgentState, Status, TaskId};
use crew_store_pg::PgStore;

use crate::support::crew_exe;
use crate::support::team::{Team, crew_toml, git};
use crew_test_support::wait::eventually_showing;

const WAIT: Duration = Duration::from_secs(60);

/// The teammates' CLI agent: adds the first line of its job to from-host2.txt and says
/// whether the person's checkout (`PERSON`) is to be seen from where it runs. bob, in the
/// cut-off test, first takes 6 s; asked to STEAL, it prints the store's credential files.
const AGENT_SH: &str = r#"#!/bin/sh
prompt="$(cat)"
case "$(pwd)" in */bob) [ -n "SLOW_BOB" ] && sleep 6 ;; esac
case "$prompt" in *STEAL*) cat "$HOME/.pgpass" "$HOME/.postgresql/postgresql.key"; ls -a "$HOME/.postgresql" ;; esac
printf '%s\n' "$prompt" | head -n 1 >> from-host2.txt
if [ -e "PERSON/crew.toml" ]; then echo "the person's checkout: visible"; else echo "the person's checkout: hidden"; fi
"#;

/// The lead (beside the person's checkout) makes a task of the person's goal. bob, played by
/// crew's simulator on the second host: reads the task list through its team
/// tools, writes a file (which `mode = "ask"` makes a permission request to the person), and
/// reports.
const JOINED_SCENARIO: &str = r#"
[[rule]]
agent = "bob"
task_contains = "REMEMBER"
turn = 0
[[rule.tool_call]]
name = "memory_write"
input = { name = "build", type = "project", scope = "team", description = "how this team builds", body = "run make, never make -j" }

[[rule]]
agent = "bob"
task_contains = "REMEMBER"
last_tool = "memory_write"
text = "Kept it: {last_result}"

[[rule]]
agent = "bob"
task_contains = "RECALL"
turn = 0
[[rule.tool_call]]
name = "memory_read"
input = { name = "build" }

[[rule]]
agent = "bob"
task_contains = "RECALL"
last_tool = "memory_read"
text = "Recalled: {last_result}"

[[rule]]
agent = "bob"
task_contains = "MOVE"
turn = 0
text = "first try, on the first host"
[[rule.tool_call]]
name = "bash"
input = { command = "echo hello" }

[[rule]]
agent = "bob"
task_contains = "MOVE"
history_contains = "first try, on the first host"
text = "Resumed on another host where the first one stopped."

[[rule]]
agent = "lead"
last_user_contains = "TEAM GOAL"
[[rule.tool_call]]
name = "task_create"
input = { subject = "write from-host2.txt", role = "implementer" }
[[rule.tool_call]]
name = "task_create"
input = { subject = "write from-checkout.txt", role = "implementer" }

[[rule]]
agent = "lead"
last_tool = "task_create"
last_result_contains = "from-checkout"
[[rule.tool_call]]
name = "task_update"
input = { id = "task_1", assign_to = "bob" }
[[rule.tool_call]]
name = "task_update"
input = { id = "task_2", assign_to = "alice" }

[[rule]]
agent = "lead"
last_tool = "task_update"
text = "Created and assigned."

[[rule]]
agent = "alice"
turn = 0
[[rule.tool_call]]
name = "write"
input = { path = "from-checkout.txt", content = "written by {agent} in the person's checkout\n" }

[[rule]]
agent = "alice"
last_tool = "write"
text = "Wrote from-checkout.txt."

[[rule]]
agent = "carol"
task_contains = "from-host2"
turn = 0
[[rule.tool_call]]
name = "read"
input = { path = "from-host2.txt" }

[[rule]]
agent = "carol"
task_contains = "from-checkout"
turn = 0
[[rule.tool_call]]
name = "read"
input = { path = "from-checkout.txt" }

[[rule]]
agent = "carol"
last_tool = "read"
last_result_contains = "written by"
text = "The merged tree has it: {last_result}\n\nVERDICT: PASS"

[[rule]]
agent = "carol"
text = "It is not there.\n\nVERDICT: FAIL"

[[rule]]
agent = "lead"
last_user_contains = "GOAL"
[[rule.tool_call]]
name = "task_create"
input = { subject = "write from-host2.txt", role = "implementer" }

[[rule]]
agent = "lead"
last_tool = "task_create"
text = "Created it."

[[rule]]
agent = "lead"
text = "Noted."

[[rule]]
agent = "bob"
turn = 0
[[rule.tool_call]]
name = "task_list"
input = {}

[[rule]]
agent = "bob"
last_tool = "task_list"
[[rule.tool_call]]
name = "write"
input = { path = "from-host2.txt", content = "written by {agent} on the second host, which saw {last_result}\n" }

[[rule]]
agent = "bob"
last_tool = "write"
text = "Wrote from-host2.txt."
"#;

/// Waits until `check` holds; past `budget` fails naming `what` and what `seen` says (a
/// worker's log, a task).
fn until(budget: Duration, what: &str, mut check: impl FnMut() -> bool, seen: impl Fn() -> String) {
    eventually_showing(what, budget, || if check() { Ok(()) } else { Err(seen()) });
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    crew_test_support::git::git_cli(Path::new("git"), dir, args)
        .trim()
        .to_string()
}

/// Whether this machine lets a test make a mount namespace (root, or user namespaces).
fn mount_namespaces() -> Result<(), String> {
    let probe = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .output()
        .map_err(|e| format!("unshare: {e}"))?;
    if probe.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&probe.stderr).trim().to_string())
    }
}

/// The database role `crew store setup` made for `agent`, from what it said.
fn role_of(said: &str, agent: &str) -> String {
    let line = said
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{agent}: ")))
        .unwrap_or_else(|| panic!("no role for {agent} in {said}"));
    line.split_whitespace().next().unwrap().to_string()
}

/// The person's checkout (its teammates `command` implementers running agent.sh) on a
/// PostgreSQL store with a role per agent, its remote a bare repository beside it.
struct Person {
    cluster: crew_test_support::postgres::PgCluster,
    outside: tempfile::TempDir,
    bare: PathBuf,
    team: Team,
    setup: String,
}

/// A teammate on crew.toml.
struct Mate<'a> {
    name: &'a str,
    role: &'a str,
    writes: bool,
    model: &'a str,
}

impl<'a> Mate<'a> {
    fn implementer(name: &'a str, model: &'a str) -> Self {
        Mate {
            name,
            role: "implementer",
            writes: true,
            model,
        }
    }
}

/// The simulator playing joined.toml.
const SIMULATED: &str = "{ provider = \"scripted\", scenario = \"joined.toml\" }";

/// A second host: `crew worker --join` in a folder and HOME of its own, in a mount namespace
/// where the person's checkout is a tmpfs.
struct Host {
    child: Child,
    dir: PathBuf,
    clone: PathBuf,
}

impl Host {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("worker.log")).unwrap_or_default()
    }

    /// Waits (at most `budget`) for the worker to end; its exit code.
    fn wait(&mut self, budget: Duration) -> Option<i32> {
        let (child, log) = (&mut self.child, self.dir.join("worker.log"));
        let exited = eventually_showing("the worker to end", budget, || {
            child
                .try_wait()
                .unwrap()
                .ok_or_else(|| std::fs::read_to_string(&log).unwrap_or_default())
        });
        exited.code()
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill takes no pointers; the pid is this test's child.
        let sent = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(sent, 0);
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Teammate `name` joins with its role's `url` from host `host`, a folder of its own under
/// `outside` with its own HOME, in a mount namespace where the person's checkout `person` is a
/// tmpfs.
fn join_host(outside: &Path, person: &Path, url: &str, name: &str, host: &str) -> Host {
    join_host_with(outside, person, url, name, host, &[])
}

/// As [`join_host`], with `env` added to the worker's environment.
fn join_host_with(
    outside: &Path,
    person: &Path,
    url: &str,
    name: &str,
    host: &str,
    env: &[(&str, &str)],
) -> Host {
    let dir = outside.join(host);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let clone = dir.join("web");
    let log = std::fs::File::create(dir.join("worker.log")).unwrap();
    let child = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(
            "mount -t tmpfs crew-hidden \"$1\" && test ! -e \"$1/crew.toml\" || exit 97; \
             exec \"$2\" worker --join \"$3\" --name \"$4\" --into \"$5\"",
        )
        .args(["sh", person.to_str().unwrap(), crew_exe(), url, name])
        .arg(&clone)
        .current_dir(&dir)
        .env("HOME", dir.join("home"))
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    Host { child, dir, clone }
}

impl Person {
    /// `None` (saying why) where there is no PostgreSQL or no mount namespace.
    fn new(teammates: &[&str], slow_bob: bool, worker: &str) -> Option<Person> {
        let command = "{ provider = \"command\", cmd = [\"./agent.sh\"] }";
        let teammates: Vec<Mate> = teammates
            .iter()
            .map(|name| Mate::implementer(name, command))
            .collect();
        Person::with(&teammates, slow_bob, worker, "")
    }

    /// As `new`, with these teammates and `extra` lines at the end of crew.toml.
    fn with(teammates: &[Mate], slow_bob: bool, worker: &str, extra: &str) -> Option<Person> {
        Person::with_team(teammates, slow_bob, worker, "", extra)
    }

    /// As `with`, with `team` lines in crew.toml's `[team]`.
    fn with_team(
        teammates: &[Mate],
        slow_bob: bool,
        worker: &str,
        team: &str,
        extra: &str,
    ) -> Option<Person> {
        let cluster = crew_test_support::postgres::start()?;
        if let Err(why) = mount_namespaces() {
            eprintln!("skipped: no mount namespace for the second host ({why})");
            return None;
        }
        let outside = tempfile::tempdir().unwrap();
        let bare = outside.path().join("team.git");
        git(
            outside.path(),
            &[
                "init",
                "--quiet",
                "--bare",
                "--initial-branch=main",
                "team.git",
            ],
        );
        let mut toml = crew_toml(
            &format!("remote = \"{}\"\n{team}", bare.display()),
            &[],
            "mode = \"ask\"",
            worker,
        );
        for mate in teammates {
            toml.push_str(&format!(
                "\n[[teammate]]\nname = \"{}\"\nrole = \"{}\"\nwrites = {}\nmodel = {}\n",
                mate.name, mate.role, mate.writes, mate.model
            ));
        }
        toml.push_str(extra);
        // The lead plays joined.toml too (its rules name their agent).
        let toml = toml.replace("scenario = \"scenario.toml\"", "scenario = \"joined.toml\"");
        let team = Team::new(&toml, "echo.toml", &[("joined.toml", JOINED_SCENARIO)]);
        let person = team.repo.path().to_path_buf();
        let script = person.join("agent.sh");
        let text = AGENT_SH
            .replace("PERSON", &person.display().to_string())
            .replace("SLOW_BOB", if slow_bob { "yes" } else { "" });
        std::fs::write(&script, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        git(&person, &["add", "agent.sh"]);
        git(&person, &["commit", "-qm", "the teammates' agent"]);
        git(
            &person,
            &["push", "--quiet", bare.to_str().unwrap(), "main"],
        );
        let setup = team.repo.ok(&["store", "setup", &cluster.url()]);
        Some(Person {
            cluster,
            outside,
            bare,
            team,
            setup,
        })
    }

    fn url(&self) -> String {
        self.cluster.url()
    }

    fn path(&self) -> &Path {
        self.team.repo.path()
    }

    /// `crew --store URL ARGS` in the person's checkout, which must succeed.
    fn on_store(&self, args: &[&str]) -> String {
        let url = self.url();
        let mut all = vec!["--store", url.as_str()];
        all.extend_from_slice(args);
        self.team.repo.ok(&all)
    }

    /// Teammate `name` joins from a host of its own.
    fn join(&self, name: &str) -> Host {
        self.join_from(name, &format!("host-{name}"))
    }

    /// Teammate `name` joins from host `host` (a folder of its own under the test's).
    fn join_from(&self, name: &str, host: &str) -> Host {
        let url = self.cluster.url_as(&role_of(&self.setup, name));
        join_host(self.outside.path(), self.path(), &url, name, host)
    }

    /// Asks `name` to shut down, as the person.
    fn ask_to_shut_down(&self, name: &str) {
        self.on_store(&[
            "send",
            "--from",
            "user",
            "--to",
            name,
            "--type",
            "shutdown_request",
            "--request",
            "done",
        ]);
    }

    fn remote_head(&self, branch: &str) -> String {
        git_out(
            self.outside.path(),
            &[
                "ls-remote",
                self.bare.to_str().unwrap(),
                &format!("refs/heads/{branch}"),
            ],
        )
    }
}

#[test]
fn a_teammate_on_another_host_does_the_persons_task_through_the_store_and_the_remote() {
    let Some(person) = Person::new(
        &["bob"],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    ) else {
        return;
    };
    let added = person.on_store(&["task", "add", "write from-host2.txt"]);
    assert!(added.contains("task_1"), "{added}");
    let mut bob = person.join("bob");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let task = |store: &PgStore| runtime.block_on(store.task(TaskId(1))).unwrap();
    until(
        WAIT,
        "reviewed",
        || task(&store).status == Status::Review,
        || {
            format!(
                "task_1 never reached review: {:?}\n{}",
                task(&store),
                bob.log()
            )
        },
    );
    let in_review = task(&store);
    assert_eq!(in_review.owner, Some(AgentName::parse("bob").unwrap()));
    let result = in_review.result.clone().unwrap_or_default();
    assert!(result.contains("the person's checkout: hidden"), "{result}");
    let commits = in_review.commits.clone().expect("bob's commits");
    assert_eq!(commits.branch, "crew/bob");
    // The commits travelled through the remote, at the head the store records.
    let pushed = person.remote_head("crew/bob/task_1");
    assert!(pushed.starts_with(&commits.head), "{pushed} vs {commits:?}");
    assert!(bob.clone.join(".worktrees/bob").is_dir(), "{}", bob.log());

    // The person reviews and merges it from the store, in their checkout.
    let merged = person.on_store(&["review", "merge", "task_1"]);
    assert!(merged.contains("task_1"), "{merged}");
    assert_eq!(
        std::fs::read_to_string(person.path().join("from-host2.txt")).unwrap(),
        "Task task_1: write from-host2.txt\n"
    );
    assert_eq!(task(&store).status, Status::Completed);
    let person_main = git_out(person.path(), &["rev-parse", "main"]);
    assert!(
        person.remote_head("main").starts_with(&person_main),
        "the base was pushed back"
    );

    // With nothing left to do bob idles out, its status in the store saying so.
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
    let said = bob.log();
    assert!(
        said.contains("bob: joined team test through the store"),
        "{said}"
    );
    assert!(said.contains("bob: shut down after being idle"), "{said}");
    let status = runtime
        .block_on(store.agent_status(&AgentName::parse("bob").unwrap()))
        .unwrap()
        .unwrap();
    assert_eq!(status.state, AgentState::Shutdown);
    assert!(status.host.is_some());
}

#[test]
fn a_host_cut_off_mid_task_loses_it_to_another_host_and_its_late_work_is_not_recorded() {
    let Some(person) = Person::new(
        &["bob", "dave"],
        true,
        "idle_poll_secs = 1\nidle_timeout_secs = 30\nheartbeat_secs = 1\nlease_secs = 3\nrequest_timeout_secs = 30",
    ) else {
        return;
    };
    person.on_store(&["task", "add", "write from-host2.txt"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let task = |store: &PgStore| runtime.block_on(store.task(TaskId(1))).unwrap();
    let bob_name = AgentName::parse("bob").unwrap();
    let dave_name = AgentName::parse("dave").unwrap();

    // bob claims it and is cut off (no heartbeat, no work) while its agent runs.
    let mut bob = person.join("bob");
    until(
        WAIT,
        "started",
        || {
            let now = task(&store);
            now.status == Status::InProgress
                && now.owner.as_ref() == Some(&bob_name)
                && now.commits.is_some_and(|c| c.branch == "crew/bob")
        },
        || format!("bob never started task_1: {}", bob.log()),
    );
    bob.signal(libc::SIGSTOP);

    // dave, on a third host, takes it once bob's lease lapses, and finishes it.
    let mut dave = person.join("dave");
    until(
        WAIT,
        "taken",
        || {
            let now = task(&store);
            now.status == Status::Review && now.owner.as_ref() == Some(&dave_name)
        },
        || {
            format!(
                "dave never finished task_1: {:?}\n{}",
                task(&store),
                dave.log()
            )
        },
    );
    let commits = task(&store).commits.expect("dave's commits");
    assert_eq!(commits.branch, "crew/dave");

    // bob comes back: its agent's work is committed on its own branch but not recorded, the
    // lead told so; the task stays dave's.
    bob.signal(libc::SIGCONT);
    let lead = AgentName::parse("lead").unwrap();
    until(
        WAIT,
        "told",
        || {
            runtime
                .block_on(store.inbox(&lead))
                .unwrap()
                .iter()
                .any(|m| {
                    m.from == bob_name
                        && m.text
                            .as_deref()
                            .is_some_and(|t| t.contains("not recorded"))
                })
        },
        || format!("bob's late finish was not reported:\n{}", bob.log()),
    );
    let now = task(&store);
    assert_eq!(now.owner, Some(dave_name.clone()));
    assert_eq!(now.commits.map(|c| c.head), Some(commits.head.clone()));
    let done_by_dave = runtime
        .block_on(store.inbox(&lead))
        .unwrap()
        .iter()
        .filter(|m| {
            m.from == dave_name
                && m.text
                    .as_deref()
                    .is_some_and(|t| t.starts_with("task_1 is ready for review"))
        })
        .count();
    assert_eq!(done_by_dave, 1, "recorded once");

    // The person merges dave's work; both hosts then idle out.
    person.on_store(&["review", "merge", "task_1"]);
    assert_eq!(task(&store).status, Status::Completed);
    for host in [&mut bob, &mut dave] {
        host.signal(libc::SIGTERM);
        host.wait(WAIT);
    }
}

#[test]
fn a_simulated_teammate_on_another_host_works_through_its_team_tools_and_the_persons_approval() {
    let Some(person) = Person::with(
        &[Mate::implementer("bob", SIMULATED)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
        "",
    ) else {
        return;
    };
    person.on_store(&["task", "add", "write from-host2.txt"]);
    let mut bob = person.join("bob");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let bob_name = AgentName::parse("bob").unwrap();

    // bob's write bubbles up to the person as a permission request, through the store.
    let mut asked = None;
    until(
        WAIT,
        "came",
        || {
            asked = runtime
                .block_on(store.requests(Duration::from_secs(60)))
                .unwrap()
                .into_iter()
                .find(|r| {
                    r.from == bob_name
                        && r.kind == crew_store::MessageKind::PermissionRequest
                        && r.state == crew_store::requests::RequestState::Pending
                });
            asked.is_some()
        },
        || format!("no permission request from bob:\n{}", bob.log()),
    );
    let asked = asked.unwrap();
    assert_eq!(asked.request.extra["tool"], "write", "{:?}", asked.request);
    let status = runtime
        .block_on(store.agent_status(&bob_name))
        .unwrap()
        .unwrap();
    assert_eq!(status.state, AgentState::Waiting, "{status:?}");
    person.on_store(&["respond", &asked.request_id, "--as", "user", "approve"]);

    let task = |store: &PgStore| runtime.block_on(store.task(TaskId(1))).unwrap();
    until(
        WAIT,
        "reviewed",
        || task(&store).status == Status::Review,
        || {
            format!(
                "task_1 never reached review: {:?}\n{}",
                task(&store),
                bob.log()
            )
        },
    );
    person.on_store(&["review", "merge", "task_1"]);
    let written = std::fs::read_to_string(person.path().join("from-host2.txt")).unwrap();
    // Its team tools read the store: the task list it saw holds its own task, running.
    assert!(
        written.starts_with("written by bob on the second host, which saw ")
            && written.contains("running (bob)"),
        "{written}"
    );
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
}

#[test]
fn the_lead_beside_the_persons_checkout_and_a_teammate_on_another_host_are_one_team_on_the_store() {
    let Some(person) = Person::with(
        &[Mate::implementer("bob", SIMULATED)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
        "",
    ) else {
        return;
    };
    // The lead on the store, in the person's checkout, with its own role; bob on host 2.
    let lead_url = person.cluster.url_as(&role_of(&person.setup, "lead"));
    let mut lead = person
        .team
        .spawn("lead", &["--store", &lead_url, "worker", "--name", "lead"]);
    let mut bob = person.join("bob");
    let lead_log =
        || std::fs::read_to_string(person.path().join(".crew/test-lead.log")).unwrap_or_default();
    person.on_store(&[
        "send",
        "--from",
        "user",
        "--to",
        "lead",
        "GOAL: write from-host2.txt",
    ]);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let bob_name = AgentName::parse("bob").unwrap();
    let mut asked = None;
    until(
        WAIT,
        "came",
        || {
            asked = runtime
                .block_on(store.requests(Duration::from_secs(60)))
                .unwrap()
                .into_iter()
                .find(|r| {
                    r.from == bob_name && r.state == crew_store::requests::RequestState::Pending
                });
            asked.is_some()
        },
        || {
            format!(
                "no request from bob:\nlead: {}\nbob: {}",
                lead_log(),
                bob.log()
            )
        },
    );
    let task = runtime.block_on(store.task(TaskId(1))).unwrap();
    assert_eq!(task.subject, "write from-host2.txt", "the lead made it");
    person.on_store(&[
        "respond",
        &asked.unwrap().request_id,
        "--as",
        "user",
        "approve",
    ]);
    until(
        WAIT,
        "reviewed",
        || runtime.block_on(store.task(TaskId(1))).unwrap().status == Status::Review,
        || format!("never in review:\n{}", bob.log()),
    );
    person.on_store(&["review", "merge", "task_1"]);
    assert!(person.path().join("from-host2.txt").is_file());
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());

    // The lead heard of it through the store, and shuts down when the person asks.
    let lead_name = AgentName::parse("lead").unwrap();
    let heard = runtime.block_on(store.inbox(&lead_name)).unwrap();
    assert!(
        heard.iter().any(|m| m.from == bob_name
            && m.text
                .as_deref()
                .is_some_and(|t| t.starts_with("task_1 is ready for review"))),
        "{heard:?}"
    );
    person.on_store(&[
        "send",
        "--from",
        "user",
        "--to",
        "lead",
        "--type",
        "shutdown_request",
        "--request",
        "we are done",
    ]);
    assert_eq!(lead.wait(WAIT), Some(0), "{}", lead_log());
    assert!(lead_log().contains("lead: shut down"), "{}", lead_log());
}

/// The issue's "done when", on the simulator: the lead and alice beside the person's checkout,
/// bob and the reviewer carol each on a host of its own, one PostgreSQL store and the git
/// remote between them. The lead splits the goal into a task for each side; each is claimed on
/// its side, asks the person, is reviewed by carol from the merged code (fetched from the
/// remote on carol's host), and merged by the person.
#[test]
fn a_team_across_hosts_claims_on_both_sides_and_every_diff_is_reviewed_and_merged_by_the_person() {
    let Some(person) = Person::with(
        &[
            Mate::implementer("alice", SIMULATED),
            Mate::implementer("bob", SIMULATED),
            Mate {
                name: "carol",
                role: "reviewer",
                writes: false,
                model: SIMULATED,
            },
        ],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 60\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
        "\n[worktree]\nreview_by = \"carol\"\n",
    ) else {
        return;
    };
    let as_agent = |name: &str| person.cluster.url_as(&role_of(&person.setup, name));
    let log_of = |label: &str| {
        std::fs::read_to_string(person.path().join(format!(".crew/test-{label}.log")))
            .unwrap_or_default()
    };
    let lead_url = as_agent("lead");
    let mut lead = person
        .team
        .spawn("lead", &["--store", &lead_url, "worker", "--name", "lead"]);
    person.on_store(&[
        "send",
        "--from",
        "user",
        "--to",
        "lead",
        "TEAM GOAL: two files",
    ]);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let task = |id: u64| runtime.block_on(store.task(TaskId(id))).unwrap();
    // The teammates start once the lead has handed each task to its side.
    until(
        WAIT,
        "assigned",
        || {
            runtime.block_on(store.tasks()).unwrap().len() == 2
                && task(1).owner.is_some()
                && task(2).owner.is_some()
        },
        || format!("the lead did not assign both: {}", log_of("lead")),
    );
    let alice_url = as_agent("alice");
    let mut alice = person.team.spawn(
        "alice",
        &["--store", &alice_url, "worker", "--name", "alice"],
    );
    let mut bob = person.join("bob");
    let mut carol = person.join("carol");

    // The person answers every permission request, as at the screen; both reach review and
    // carol reviews each.
    until(
        Duration::from_secs(90),
        "reviewed",
        || {
            for request in pending_requests(&runtime, &store) {
                person.on_store(&["respond", &request.request_id, "--as", "user", "approve"]);
            }
            [1, 2].iter().all(|id| {
                let t = task(*id);
                t.status == Status::Review && t.review.is_some()
            })
        },
        || {
            format!(
                "not both reviewed: {:?} {:?}\nalice: {}\nbob: {}\ncarol: {}",
                task(1),
                task(2),
                log_of("alice"),
                bob.log(),
                carol.log()
            )
        },
    );
    for (id, owner) in [(1, "bob"), (2, "alice")] {
        let t = task(id);
        assert_eq!(t.owner.as_deref(), Some(owner), "claimed on its side");
        let commits = t.commits.clone().unwrap();
        assert_eq!(commits.branch, format!("crew/{owner}"));
        let verdict = t.review.clone().unwrap();
        assert_eq!(
            (verdict.by.as_str(), verdict.verdict.as_str()),
            ("carol", "pass")
        );
        assert_eq!(
            verdict.head, commits.head,
            "a verdict on the task's own commits"
        );
        assert!(verdict.report.contains("written by"), "{}", verdict.report);
    }

    // The person merges both; each host's work is in the person's checkout.
    for id in ["task_1", "task_2"] {
        person.on_store(&["review", "merge", id]);
    }
    assert_eq!(
        std::fs::read_to_string(person.path().join("from-checkout.txt")).unwrap(),
        "written by alice in the person's checkout\n"
    );
    assert!(
        std::fs::read_to_string(person.path().join("from-host2.txt"))
            .unwrap()
            .starts_with("written by bob on the second host")
    );
    assert_eq!(task(1).status, Status::Completed);
    assert_eq!(task(2).status, Status::Completed);

    // Everyone shuts down when the person asks.
    for name in ["alice", "bob", "carol", "lead"] {
        person.on_store(&[
            "send",
            "--from",
            "user",
            "--to",
            name,
            "--type",
            "shutdown_request",
            "--request",
            "we are done",
        ]);
    }
    assert_eq!(lead.wait(WAIT), Some(0), "{}", log_of("lead"));
    assert_eq!(alice.wait(WAIT), Some(0), "{}", log_of("alice"));
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
    assert_eq!(carol.wait(WAIT), Some(0), "{}", carol.log());
}

/// Chaos: the PostgreSQL server restarts while a joined host's teammate is mid-task. The
/// worker's calls carry across the restart and its wake-ups reconnect: both tasks reach review
/// once each, with their commits on the remote, and nothing is reported twice.
#[test]
fn a_server_restart_mid_task_loses_and_doubles_nothing_on_a_joined_host() {
    let Some(person) = Person::new(
        &["bob"],
        true,
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    ) else {
        return;
    };
    person.on_store(&["task", "add", "write from-host2.txt"]);
    person.on_store(&["task", "add", "write it again"]);
    let mut bob = person.join("bob");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let bob_name = AgentName::parse("bob").unwrap();
    let task = |id: u64| runtime.block_on(store.task(TaskId(id))).unwrap();
    until(
        WAIT,
        "started",
        || task(1).commits.is_some_and(|c| c.branch == "crew/bob"),
        || format!("bob never started task_1: {}", bob.log()),
    );
    // bob's agent takes 6 s: the server goes away and comes back meanwhile.
    person.cluster.restart();
    until(
        WAIT,
        "both",
        || task(1).status == Status::Review && task(2).status == Status::Review,
        || format!("{:?} {:?}\n{}", task(1), task(2), bob.log()),
    );
    for id in [1, 2] {
        let commits = task(id).commits.unwrap();
        assert!(
            person
                .remote_head(&format!("crew/bob/task_{id}"))
                .starts_with(&commits.head),
            "task_{id}'s commits on the remote"
        );
    }
    let lead = AgentName::parse("lead").unwrap();
    let told = runtime.block_on(store.inbox(&lead)).unwrap();
    for id in ["task_1", "task_2"] {
        let said = told
            .iter()
            .filter(|m| {
                m.from == bob_name
                    && m.text
                        .as_deref()
                        .is_some_and(|t| t.starts_with(&format!("{id} is ready for review")))
            })
            .count();
        assert_eq!(said, 1, "{id} reported once: {told:?}");
    }
    for id in ["task_1", "task_2"] {
        person.on_store(&["review", "merge", id]);
    }
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
}

/// A hostile teammate on a host that keeps other agents' database passwords (a shared
/// `~/.pgpass`, a client key in `~/.postgresql`): its commands read everywhere, but crew's
/// sandbox hides the store's credential files, so it cannot log in as another agent (a
/// reviewer, to pass its own work).
#[test]
fn a_teammate_cannot_read_the_stores_credentials_kept_on_its_host() {
    let Some(person) = Person::new(
        &["bob"],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    ) else {
        return;
    };
    let home = person.outside.path().join("host-bob/home");
    std::fs::create_dir_all(home.join(".postgresql")).unwrap();
    let secret = "carol-pw-7f3a9c";
    std::fs::write(
        home.join(".pgpass"),
        format!("127.0.0.1:*:*:crew_postgres_carol:{secret}\n"),
    )
    .unwrap();
    // As PostgreSQL's clients want it (and crew: a file others may read is refused).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(home.join(".pgpass"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(
        home.join(".postgresql/postgresql.key"),
        format!("KEY {secret}\n"),
    )
    .unwrap();
    person.on_store(&["task", "add", "STEAL the store's passwords"]);
    let mut bob = person.join("bob");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let task = || runtime.block_on(store.task(TaskId(1))).unwrap();
    until(
        WAIT,
        "ended",
        || matches!(task().status, Status::Review | Status::Failed),
        || format!("{:?}\n{}", task(), bob.log()),
    );
    let result = task().result.unwrap_or_default();
    assert!(!result.contains(secret), "the password leaked: {result}");
    assert!(
        result.contains("the person's checkout: hidden"),
        "it ran: {result}"
    );
    // The worker itself still reached the store with its own credentials all along.
    assert_eq!(task().status, Status::Review, "{result}");
    person.on_store(&["review", "merge", "task_1"]);
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
}

/// A teammate's conversation lasts in the store: bob, cut off on one host while it waits for
/// the person, is started on another, which resumes the task's conversation from the store
/// (nothing of it on that host's disk) and finishes it.
#[test]
fn a_teammate_resumes_its_conversation_on_another_host_from_the_store() {
    let Some(person) = Person::with(
        &[Mate::implementer("bob", SIMULATED)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nlease_secs = 3\nrequest_timeout_secs = 60",
        "",
    ) else {
        return;
    };
    person.on_store(&["task", "add", "MOVE between hosts"]);
    let mut first = person.join_from("bob", "host-a");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let bob = AgentName::parse("bob").unwrap();
    until(
        WAIT,
        "waiting",
        || {
            runtime
                .block_on(store.requests(Duration::from_secs(60)))
                .unwrap()
                .iter()
                .any(|r| r.from == bob && r.state == crew_store::requests::RequestState::Pending)
        },
        || format!("bob never asked: {}", first.log()),
    );
    // The reply that asked is kept in the store (its tool may start asking while the reply
    // is still being kept).
    let kept = || {
        runtime
            .block_on(store.conversation(&bob, "task_1"))
            .unwrap()
    };
    until(
        WAIT,
        "the reply kept",
        || {
            kept()
                .iter()
                .any(|m| m.to_string().contains("first try, on the first host"))
        },
        || format!("{:?}", kept()),
    );
    assert_eq!(
        runtime
            .block_on(store.latest_conversation(&bob))
            .unwrap()
            .as_deref(),
        Some("task_1")
    );
    first.signal(libc::SIGKILL);
    first.wait(WAIT);

    // Started again at once, while the store still heard from it within its lease, bob is
    // refused: two processes acting as bob would work the same task.
    let mut early = person.join_from("bob", "host-b");
    assert_eq!(early.wait(WAIT), Some(3), "{}", early.log());
    assert!(
        early.log().contains("bob already runs on"),
        "{}",
        early.log()
    );
    std::thread::sleep(Duration::from_secs(4));
    let mut second = person.join_from("bob", "host-b");
    let task = || runtime.block_on(store.task(TaskId(1))).unwrap();
    // It changed nothing, so it waits in review, empty, for the person (on PostgreSQL a writing
    // teammate's word that nothing changed does not complete its task).
    until(
        WAIT,
        "done",
        || task().status == Status::Review,
        || format!("{:?}\n{}", task(), second.log()),
    );
    assert!(
        task()
            .result
            .unwrap_or_default()
            .contains("Resumed on another host where the first one stopped."),
        "{:?}",
        task()
    );
    let local = person
        .outside
        .path()
        .join("host-b/web/.crew/conversations/bob/task_1.jsonl");
    assert!(!local.exists(), "kept in the store, not on the host");
    let commits = task().commits.unwrap();
    assert_eq!(commits.start, commits.head, "nothing to merge");
    person.on_store(&["review", "merge", "task_1"]);
    assert_eq!(task().status, Status::Completed);
    assert_eq!(second.wait(WAIT), Some(0), "{}", second.log());
}

/// Memories live in the store for a joined host: what bob keeps for the team on one host it
/// reads back on another (nothing on either disk), and the person reads it from the store.
#[test]
fn a_memory_kept_on_one_host_is_read_on_another_through_the_store() {
    let Some(person) = Person::with(
        &[Mate::implementer("bob", SIMULATED)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
        "",
    ) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let task = |id: u64| runtime.block_on(store.task(TaskId(id))).unwrap();
    person.on_store(&["task", "add", "REMEMBER how we build"]);
    let mut first = person.join_from("bob", "host-a");
    until(
        WAIT,
        "kept",
        || task(1).status == Status::Review,
        || format!("{:?}\n{}", task(1), first.log()),
    );
    assert!(
        task(1)
            .result
            .unwrap_or_default()
            .contains("kept memory `build`"),
        "{:?}",
        task(1)
    );
    person.on_store(&["review", "merge", "task_1"]);
    assert_eq!(first.wait(WAIT), Some(0), "{}", first.log());
    let listed = person.on_store(&["memory", "list"]);
    assert!(listed.contains("build"), "{listed}");

    person.on_store(&["task", "add", "RECALL how we build"]);
    let mut second = person.join_from("bob", "host-b");
    until(
        WAIT,
        "recalled",
        || task(2).status == Status::Review,
        || format!("{:?}\n{}", task(2), second.log()),
    );
    assert!(
        task(2)
            .result
            .unwrap_or_default()
            .contains("run make, never make -j"),
        "{:?}",
        task(2)
    );
    for host in ["host-a", "host-b"] {
        let folder = person.outside.path().join(host).join("web/.crew/memory");
        let files: Vec<_> = walk(&folder);
        assert!(files.is_empty(), "memory files on {host}: {files:?}");
    }
    person.on_store(&["review", "merge", "task_2"]);
    assert_eq!(second.wait(WAIT), Some(0), "{}", second.log());
}

/// Every file below `dir` (none if it does not exist).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

/// A task that changes hands continues from its earlier owner's commits: bob's work was sent
/// back, bob's host is gone, the person hands the task to dave on another host, whose branch
/// starts from bob's commits (fetched from the remote); the merge brings both.
#[test]
fn a_task_that_changes_hands_continues_from_its_earlier_owners_commits() {
    let Some(person) = Person::new(
        &["bob", "dave"],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    ) else {
        return;
    };
    person.on_store(&["task", "add", "write from-host2.txt"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let task = || runtime.block_on(store.task(TaskId(1))).unwrap();
    let mut bob = person.join("bob");
    until(
        WAIT,
        "reviewed",
        || task().status == Status::Review,
        || format!("{:?}\n{}", task(), bob.log()),
    );
    let bobs = task().commits.unwrap();
    bob.signal(libc::SIGKILL);
    bob.wait(WAIT);

    person.on_store(&["review", "send-back", "task_1", "--note", "one more line"]);
    person.on_store(&["task", "assign", "task_1", "dave"]);
    let mut dave = person.join("dave");
    until(
        WAIT,
        "again",
        || {
            let now = task();
            now.status == Status::Review && now.owner.as_deref() == Some("dave")
        },
        || format!("{:?}\n{}", task(), dave.log()),
    );
    let daves = task().commits.unwrap();
    assert_eq!(daves.branch, "crew/dave");
    person.on_store(&["review", "merge", "task_1"]);
    let merged = std::fs::read_to_string(person.path().join("from-host2.txt")).unwrap();
    assert_eq!(
        merged.lines().count(),
        2,
        "bob's line and dave's: {merged:?} (bob's head {}, dave's {daves:?})",
        bobs.head
    );
    assert_eq!(dave.wait(WAIT), Some(0), "{}", dave.log());
}

/// Work the person discards stays out: bob's discarded task was on bob's branch on its own
/// host (the person's side cannot revert it there), so bob takes it out before its next task,
/// once; merging that next task brings only its own change.
#[test]
fn work_the_person_discards_is_taken_out_of_a_joined_hosts_branch() {
    let Some(person) = Person::new(
        &["bob"],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 30\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    ) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let task = |id: u64| runtime.block_on(store.task(TaskId(id))).unwrap();
    person.on_store(&["task", "add", "write the wrong thing"]);
    let mut bob = person.join("bob");
    until(
        WAIT,
        "first",
        || task(1).status == Status::Review,
        || format!("{:?}\n{}", task(1), bob.log()),
    );
    person.on_store(&["review", "discard", "task_1", "--reason", "not wanted"]);
    assert_eq!(task(1).status, Status::Failed);

    person.on_store(&["task", "add", "write the right thing"]);
    until(
        WAIT,
        "second",
        || task(2).status == Status::Review,
        || format!("{:?}\n{}", task(2), bob.log()),
    );
    person.on_store(&["review", "merge", "task_2"]);
    assert_eq!(
        std::fs::read_to_string(person.path().join("from-host2.txt")).unwrap(),
        "Task task_2: write the right thing\n",
        "only the second task's change"
    );
    person.ask_to_shut_down("bob");
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
}

/// The person's screen on a team kept in PostgreSQL (`crew --store URL ui` in their checkout):
/// it shows the task, the teammate working on its own host, its permission request, which the
/// person approves there, the review, which the person merges there; and a host gone silent
/// shows as such (its lease lapsed).
#[test]
fn the_person_watches_and_steers_a_team_on_the_store_from_the_screen() {
    let Some(person) = Person::with(
        &[Mate::implementer("bob", SIMULATED)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 30\nheartbeat_secs = 1\nlease_secs = 3\nrequest_timeout_secs = 60",
        "\n[ui]\nnotify_command = \"echo \\\"$CREW_REQUEST_FROM $CREW_REQUEST_TYPE\\\" >> .crew/notified\"\n",
    ) else {
        return;
    };
    let url = person.url();
    let mut screen =
        crate::support::pty::Screen::start(person.path(), &["--store", &url, "ui"], 160, 45);
    let shown = url.split_once('@').map_or(url.as_str(), |(_, rest)| rest);
    screen.wait_for(shown);
    person.on_store(&["task", "add", "write from-host2.txt"]);
    screen.wait_for("write from-host2.txt");
    let bob = person.join("bob");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    screen.wait_for(&format!(" on {} ", host.trim()));
    screen.wait_for("bob asks for write");
    // From the lead's text box to the approvals, and approve.
    screen.keys("\x12");
    screen.wait_for("approvals · ? help");
    screen.keys("\x1b[H");
    screen.keys("a");
    screen.wait_for("(bob told)");
    // The person's notify_command ran for it, as on a file team.
    let notified = person.path().join(".crew/notified");
    until(
        WAIT,
        "notified",
        || std::fs::read_to_string(&notified).is_ok_and(|t| t.contains("bob permission_request")),
        || std::fs::read_to_string(&notified).unwrap_or_default(),
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 2).unwrap();
    let task = |store: &PgStore| runtime.block_on(store.task(TaskId(1))).unwrap();
    until(
        WAIT,
        "reviewed",
        || task(&store).status == Status::Review,
        || format!("{:?}\n{}", task(&store), bob.log()),
    );
    screen.wait_until("task_1 in the review queue", WAIT, |t| {
        t.contains("▶ task_1")
    });
    // bob's host is not this one: its pane shows the conversation its host keeps in the store.
    screen.wait_for("assistant: Wrote from-host2.txt.");
    screen.keys("M");
    screen.wait_for("task_1 merged into main");
    assert_eq!(task(&store).status, Status::Completed);
    let written = std::fs::read_to_string(person.path().join("from-host2.txt")).unwrap();
    assert!(written.starts_with("written by bob"), "{written}");

    // bob takes another task and its host goes silent: the screen says its lease lapsed.
    person.on_store(&["task", "add", "write it again"]);
    until(
        WAIT,
        "bob on task_2",
        || {
            task_n(&runtime, &store, 2)
                .owner
                .as_ref()
                .map(AgentName::as_str)
                == Some("bob")
        },
        || format!("{:?}\n{}", task_n(&runtime, &store, 2), bob.log()),
    );
    bob.signal(libc::SIGSTOP);
    screen.wait_until("bob's lease lapsed", WAIT, |t| {
        t.contains("LEASE LAPSED task_2")
    });
    bob.signal(libc::SIGKILL);
    screen.keys("q");
    screen.wait_exit();
    screen.assert_restored();
}

/// The permission requests waiting for the person now.
fn pending_requests(
    runtime: &tokio::runtime::Runtime,
    store: &PgStore,
) -> Vec<crew_store::RequestInfo> {
    runtime
        .block_on(store.requests(Duration::from_secs(600)))
        .unwrap()
        .into_iter()
        .filter(|r| {
            r.state == crew_store::requests::RequestState::Pending
                && r.kind == crew_store::MessageKind::PermissionRequest
        })
        .collect()
}

fn task_n(runtime: &tokio::runtime::Runtime, store: &PgStore, n: u64) -> crew_store::Task {
    runtime.block_on(store.task(TaskId(n))).unwrap()
}

/// `crew --store URL up --here bob` in the person's checkout readies the store, starts the lead
/// and bob as workers of this machine (each with its own role) and opens the screen on the
/// store; the person approves bob's request there and its diff into the merge queue, which the
/// screen runs and which lands it; the team outlives the screen, and `crew --store URL down`
/// stops it.
#[test]
fn the_person_starts_the_team_on_the_store_with_crew_up_and_stops_it_with_crew_down() {
    let Some(person) = Person::with(
        &[Mate::implementer("bob", SIMULATED)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 60\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
        "",
    ) else {
        return;
    };
    let url = person.url();
    person.on_store(&["task", "add", "write from-host2.txt"]);
    let _workers = Stragglers(person.path().to_path_buf());
    // The person's own store password is theirs: no worker `up` starts is handed it.
    let mine = "person-secret-4e1d";
    let mut screen = crate::support::pty::Screen::start_with_env(
        person.path(),
        &["--store", &url, "up", "--here", "bob", "--goal", "write it"],
        &[("PGPASSWORD", Path::new(mine))],
        160,
        45,
    );
    screen.wait_for("bob asks for write");
    let pattern = format!("-C {} worker", person.path().display());
    let pids = Command::new("pgrep")
        .args(["-f", "--", &pattern])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&pids.stdout).to_string();
    assert_eq!(pids.lines().count(), 2, "the lead and bob: {pids}");
    for pid in pids.lines() {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        assert!(
            !String::from_utf8_lossy(&environ).contains(mine),
            "worker {pid} was handed the person's password"
        );
    }
    screen.keys("\x12");
    screen.wait_for("approvals · ? help");
    screen.keys("\x1b[H");
    screen.keys("a");
    screen.wait_for("(bob told)");
    screen.wait_until("task_1 in the review queue", WAIT, |t| {
        t.contains("▶ task_1")
    });
    // bob runs here: its pane shows its transcript, read from the checkout.
    screen.wait_for("assistant: Wrote from-host2.txt.");
    // Approved into the merge queue, which the screen runs in the checkout: it lands.
    screen.keys("A");
    screen.wait_for("task_1 approved into the merge queue by user");
    screen.wait_for("task_1 merged into main (merge queue: tested on main");
    screen.keys("\x12");
    screen.wait_until("the queue's view", WAIT, |t| {
        t.contains("task_1") && t.contains("merged")
    });
    // ctrl-r again leaves it (a lone escape waits for the rest of a sequence).
    screen.keys("\x12");
    screen.wait_until("the queue's view closed", WAIT, |t| {
        !t.contains("┌ merge queue")
    });
    screen.keys("q");
    screen.wait_exit();
    assert!(
        std::fs::read_to_string(person.path().join("from-host2.txt"))
            .unwrap()
            .starts_with("written by bob"),
        "landed in the person's checkout"
    );

    // The team runs on without the screen: each worker logged in with its own role.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 2).unwrap();
    let seen = runtime.block_on(store.agents_seen()).unwrap();
    for name in ["lead", "bob"] {
        let agent = seen.iter().find(|a| a.name.as_str() == name);
        let state = agent.and_then(|a| a.status.as_ref()).map(|s| s.state);
        assert!(
            state.is_some_and(|s| s != AgentState::Shutdown && s != AgentState::Dead),
            "{name} not running: {seen:?}"
        );
    }
    let lead = AgentName::parse("lead").unwrap();
    let goal = runtime.block_on(store.inbox(&lead)).unwrap();
    assert!(
        goal.iter()
            .any(|m| m.from == crew_store::USER && m.text.as_deref() == Some("Goal: write it")),
        "{goal:?}"
    );
    let log = std::fs::read_to_string(person.path().join(".crew/logs/bob.log")).unwrap();
    assert!(log.contains(&role_of(&person.setup, "bob")), "{log}");
    // A second `up` starts nobody twice (here without a terminal for its screen).
    let again = person
        .team
        .repo
        .crew(&["--store", &url, "up", "--here", "bob"]);
    for name in ["lead", "bob"] {
        assert!(
            again.stdout.contains(&format!("{name}: already runs on")),
            "{}\n{}",
            again.stdout,
            again.stderr
        );
    }
    assert!(!again.stdout.contains("started here"), "{}", again.stdout);
    let down = person.on_store(&["down", "--timeout", "60"]);
    assert!(down.contains("every agent shut down"), "{down}");
    let seen = runtime.block_on(store.agents_seen()).unwrap();
    for agent in &seen {
        assert_eq!(
            agent.status.as_ref().map(|s| s.state),
            Some(AgentState::Shutdown),
            "{seen:?}"
        );
    }
}

/// Ends, even when a test fails, the workers `crew up` started detached in the checkout at
/// its path (they are not this test's children).
pub(crate) struct Stragglers(pub(crate) PathBuf);

impl Drop for Stragglers {
    fn drop(&mut self) {
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", "--"])
            .arg(format!("-C {} worker", self.0.display()))
            .status();
    }
}

/// The person's merge queue on a team kept in PostgreSQL: `crew --store URL review approve`
/// in their checkout queues bob's task (done on another host); `crew --store URL queue run`
/// there tests what would land with the team's test_command and lands it (the task completed,
/// the base pushed to the remote for every host); a task that breaks the tests is sent back to
/// bob with the failing output and never reaches the base. Only one process runs the queue.
#[test]
fn the_persons_merge_queue_on_the_store_lands_what_passes_and_sends_back_what_breaks() {
    let command = "{ provider = \"command\", cmd = [\"./agent.sh\"] }";
    let Some(person) = Person::with_team(
        &[Mate::implementer("bob", command)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
        "test_command = \"! grep -q BREAK from-host2.txt\"",
        "\n[merge_queue]\nbatch = 1\n",
    ) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let task = |id: u64| task_n(&runtime, &store, id);
    person.on_store(&["task", "add", "write from-host2.txt"]);
    let mut bob = person.join("bob");
    until(
        WAIT,
        "task_1 in review",
        || task(1).status == Status::Review,
        || format!("{:?}\n{}", task(1), bob.log()),
    );
    let approved = person.on_store(&["review", "approve", "task_1"]);
    assert!(
        approved.contains("task_1 approved into the merge queue by user (place 1)")
            && approved.contains("no merge queue runs in this checkout"),
        "{approved}"
    );
    let url = person.url();
    let queue_log = person.outside.path().join("queue.log");
    let mut queue = Command::new(crew_exe())
        .args(["--store", &url, "queue", "run"])
        .current_dir(person.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&queue_log).unwrap())
        .stderr(std::fs::File::create(person.outside.path().join("queue.err")).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&queue_log).unwrap_or_default();
    until(
        WAIT,
        "task_1 landed",
        || task(1).status == Status::Completed,
        || format!("{:?}\n{}", task(1), said()),
    );
    // What it said is printed a moment after it is done.
    until(
        WAIT,
        "the landing said",
        || said().contains("task_1 merged into main (merge queue: tested on main at"),
        said,
    );
    assert!(
        said().contains("merge queue: testing task_1 on main"),
        "{}",
        said()
    );
    let person_main = git_out(person.path(), &["rev-parse", "main"]);
    assert_eq!(
        git_out(person.path(), &["show", "main:from-host2.txt"]),
        "Task task_1: write from-host2.txt"
    );
    assert!(
        person.remote_head("main").starts_with(&person_main),
        "the landed base was pushed to the team's remote"
    );
    let listed = person.on_store(&["queue", "list"]);
    assert!(
        listed.contains("task_1") && listed.contains("merged"),
        "{listed}"
    );

    // A second process does not run the queue the first one runs.
    let second = person.team.repo.crew(&["--store", &url, "queue", "run"]);
    assert!(
        second.code == 3 && second.stderr.contains("another crew process runs it here"),
        "{}\n{}",
        second.stdout,
        second.stderr
    );

    // The next task breaks the tests: sent back to bob with their output, the base untouched.
    person.on_store(&["task", "add", "BREAK the build"]);
    until(
        WAIT,
        "task_2 in review",
        || task(2).status == Status::Review,
        || format!("{:?}\n{}", task(2), bob.log()),
    );
    person.on_store(&["review", "approve", "task_2"]);
    let failed = || {
        let listed = person.on_store(&["queue", "list", "--json"]);
        let value: serde_json::Value = serde_json::from_str(&listed).unwrap();
        value["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == "task_2" && e["state"] == "failed")
    };
    until(WAIT, "task_2 failed in the queue", failed, said);
    until(
        WAIT,
        "the send-back said",
        || said().contains("merge queue: task_2 breaks the tests; sent back to its teammate"),
        said,
    );
    assert_eq!(git_out(person.path(), &["rev-parse", "main"]), person_main);
    // bob has it back with why, and the failing output, in the task's notes.
    let back = task(2);
    let notes = back.notes.join("\n");
    assert!(
        notes.contains(
            "sent back by user: the merge queue's tests (`! grep -q BREAK from-host2.txt`) fail"
        ) && back.owner.as_ref().is_some_and(|o| o.as_str() == "bob"),
        "{back:?}"
    );

    // SIGTERM stops the queue, saying so.
    // SAFETY: kill takes no pointers; the pid is this test's child.
    unsafe { libc::kill(queue.id() as libc::pid_t, libc::SIGTERM) };
    let ended = eventually_showing("the queue to stop", WAIT, || {
        queue.try_wait().unwrap().ok_or_else(said)
    });
    assert!(ended.success(), "{}", said());
    assert!(said().contains("merge queue stopped"), "{}", said());
    person.ask_to_shut_down("bob");
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
}

/// `crew --store URL up --headless … --until-done` runs a team on the store to its end with no
/// screen: the lead and alice started here, bob on a host of its own; `--approve allow`
/// answers every permission request as the person, `--merge auto` merges each review into the
/// checkout, the progress is told as it comes, and once every task is done every agent, on
/// either host, is asked to shut down and does.
#[test]
fn a_team_on_the_store_runs_headless_to_the_end_with_policies_standing_in_for_the_person() {
    let Some(person) = Person::with(
        &[
            Mate::implementer("alice", SIMULATED),
            Mate::implementer("bob", SIMULATED),
        ],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
        "",
    ) else {
        return;
    };
    let url = person.url();
    let _workers = Stragglers(person.path().to_path_buf());
    let mut bob = person.join("bob");
    let mut up = person.team.spawn(
        "headless",
        &[
            "--store",
            &url,
            "up",
            "--headless",
            "--here",
            "alice",
            "--goal",
            "TEAM GOAL: two files",
            "--approve",
            "allow",
            "--merge",
            "auto",
            "--until-done",
        ],
    );
    let said = || {
        std::fs::read_to_string(person.path().join(".crew/test-headless.log")).unwrap_or_default()
    };
    let code = up.wait(Duration::from_secs(120));
    let text = said();
    assert_eq!(code, Some(0), "{text}\n{}", bob.log());
    for line in [
        "lead: started here",
        "alice: started here",
        "task_1 created: write from-host2.txt",
        "task_2 created: write from-checkout.txt",
        "merged into main automatically",
        "every agent shut down",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 2).unwrap();
    // Whichever side claimed each task (the lead assigns them only after making both), its
    // write was approved by the policy and merged into the person's checkout.
    for n in [1, 2] {
        let task = task_n(&runtime, &store, n);
        assert_eq!(task.status, Status::Completed, "{text}");
        let owner = task
            .owner
            .as_ref()
            .map(AgentName::as_str)
            .unwrap_or_default();
        let file = if owner == "bob" {
            "from-host2.txt"
        } else {
            "from-checkout.txt"
        };
        let written = std::fs::read_to_string(person.path().join(file)).unwrap_or_default();
        assert!(
            written.starts_with(&format!("written by {owner}")),
            "{file}: {written}\n{text}"
        );
        assert!(
            text.contains(&format!("approved {owner}'s request ")),
            "{text}"
        );
    }
    // bob, on the other host, was asked to stop with the rest and did.
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
    let seen = runtime.block_on(store.agents_seen()).unwrap();
    for agent in &seen {
        assert_eq!(
            agent.status.as_ref().map(|s| s.state),
            Some(AgentState::Shutdown),
            "{seen:?}"
        );
    }
}

/// A headless run on the store whose lead makes no task would never end: `--until-done` reads
/// the lead's turn from its transcript (the lead is a worker of its own there) and ends, exit 4,
/// saying why, the team shut down; with `--json` its stdout is JSON objects alone.
#[test]
fn a_headless_run_on_the_store_ends_when_the_lead_makes_no_task() {
    let Some(person) = Person::with(
        &[Mate::implementer("alice", SIMULATED)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
        "",
    ) else {
        return;
    };
    let url = person.url();
    let _workers = Stragglers(person.path().to_path_buf());
    // With --json, stdout is the progress alone, one object per line; the rest is on stderr.
    let run: crate::support::Run = Command::new(crew_exe())
        .args(["--store", &url, "up", "--headless", "--json"])
        .args(["--goal", "say hello", "--until-done"])
        .current_dir(person.path())
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    let events: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{}", run.stdout)))
        .collect();
    let said = |kind: &str, text: &str| {
        events
            .iter()
            .any(|e| e["type"] == kind && e.to_string().contains(text))
    };
    assert!(said("agent", "\"started\""), "{}", run.stdout);
    assert!(said("stopping", "every agent shut down"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("the lead ended its turn without creating a task: Noted.")
            && run.stderr.contains("schema version"),
        "{}",
        run.stderr
    );
}

/// The issue's done-when with crew's own demo: the built-in demo team and goal (plan, two
/// implementations in parallel, the docs, the reviewer running the project's tests) as one team
/// on one PostgreSQL store across two hosts: the lead, alice and the reviewer carol beside the
/// person's checkout (`up --headless --here alice,carol`, `--approve allow` answering the
/// requests to run the tests), bob on a host of its own. The person (this test) merges every
/// diff from the store; carol's verdict comes from the merged code; every task completes and
/// every agent shuts down at the end.
#[test]
fn the_built_in_demo_runs_as_one_team_across_two_hosts_on_the_store() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    if let Err(why) = mount_namespaces() {
        eprintln!("skipped: no mount namespace for the second host ({why})");
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let bare = outside.path().join("demo.git");
    git(
        outside.path(),
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch=main",
            "demo.git",
        ],
    );
    let person = outside.path().join("demo");
    crew_team::demo::build(&person).unwrap();
    let toml = std::fs::read_to_string(person.join("crew.toml")).unwrap();
    let toml = toml.replacen(
        "name = \"demo\"\n",
        &format!("name = \"demo\"\nremote = \"{}\"\n", bare.display()),
        1,
    );
    std::fs::write(person.join("crew.toml"), toml).unwrap();
    git(&person, &["commit", "-qam", "the team's remote"]);
    git(
        &person,
        &["push", "--quiet", bare.to_str().unwrap(), "main"],
    );
    let _workers = Stragglers(person.clone());
    let url = cluster.url();
    let crew = |args: &[&str]| -> crate::support::Run {
        let mut all = vec!["--store", url.as_str()];
        all.extend_from_slice(args);
        Command::new(crew_exe())
            .args(&all)
            .current_dir(&person)
            .output()
            .unwrap()
            .into()
    };
    let setup = crew(&["store", "setup", &url]);
    assert_eq!(setup.code, 0, "{}", setup.stderr);
    let bob_url = cluster.url_as(&role_of(&setup.stdout, "bob"));
    let mut bob = join_host(outside.path(), &person, &bob_url, "bob", "host-bob");
    let log = outside.path().join("up.log");
    let mut up = Command::new(crew_exe())
        .args(["--store", &url, "up", "--headless", "--here", "alice,carol"])
        .args([
            "--goal",
            crew_team::demo::GOAL,
            "--approve",
            "allow",
            "--until-done",
            "--simulator",
        ])
        .current_dir(&person)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(outside.path().join("up.err")).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    // The person merges each diff as it comes to review, until the run ends by itself.
    let mut merged = Vec::new();
    let ended = eventually_showing("the demo to end", Duration::from_secs(240), || {
        if let Some(status) = up.try_wait().unwrap() {
            return Ok(status);
        }
        let listed = crew(&["review", "list", "--json"]);
        let reviews: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap_or_default();
        for review in reviews["reviews"].as_array().into_iter().flatten() {
            let id = review["id"].as_str().unwrap_or_default().to_string();
            let merge = crew(&["review", "merge", &id]);
            assert_eq!(merge.code, 0, "{id}: {}\n{}", merge.stderr, said());
            merged.push(id);
        }
        Err(format!("{}\n{}", said(), bob.log()))
    });
    let text = said();
    let errors = std::fs::read_to_string(outside.path().join("up.err")).unwrap_or_default();
    assert!(ended.success(), "{text}\n{errors}\n{}", bob.log());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 2).unwrap();
    let tasks = runtime.block_on(store.tasks()).unwrap();
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    let owners: Vec<&str> = tasks
        .iter()
        .filter_map(|t| t.owner.as_ref().map(AgentName::as_str))
        .collect();
    for task in &tasks {
        assert_eq!(task.status, Status::Completed, "{task:?}\n{text}");
    }
    assert!(
        owners.contains(&"bob") && owners.contains(&"alice"),
        "claimed on both sides: {owners:?}"
    );
    // The three writers' tasks were merged by the person; the reviewer's verdict is from the
    // merged project's tests.
    assert_eq!(merged.len(), 3, "{merged:?}\n{text}");
    let review = tasks
        .iter()
        .find(|t| t.subject.starts_with("Review"))
        .unwrap();
    let verdict = review.result.clone().unwrap_or_default();
    assert!(
        verdict.contains("VERDICT: PASS") && verdict.contains("sub") && verdict.contains("mul"),
        "{verdict}"
    );
    for file in [
        "lib/sub.sh",
        "lib/mul.sh",
        "tests/sub_test.sh",
        "tests/mul_test.sh",
    ] {
        assert!(
            person.join(file).is_file(),
            "{file} merged into the checkout"
        );
    }
    assert!(text.contains("every agent shut down"), "{text}");
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
}

/// A CLI teammate `name` on a host of its own, its model `model` of the fixture CLI `bin` in
/// `tests/fixtures/DIR` (which replays the recorded `sample`, logging what it gets to the path
/// returned, both told it by `VAR_SAMPLE`/`VAR_LOG` named from `vars`), the person's task
/// `subject` waiting for it.
fn fixture_cli_on_another_host(
    dir: &str,
    model: impl Fn(&Path) -> String,
    name: &str,
    subject: &str,
    sample: &str,
    vars: &str,
) -> Option<(Person, Host, PathBuf)> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let model = model(&fixtures);
    let person = Person::with(
        &[Mate::implementer(name, &model)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 60\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
        "",
    )?;
    person.on_store(&["task", "add", subject]);
    let log = person.outside.path().join(format!("{dir}.log"));
    let sample = fixtures.join(sample);
    let url = person.cluster.url_as(&role_of(&person.setup, name));
    let host = join_host_with(
        person.outside.path(),
        person.path(),
        &url,
        name,
        &format!("host-{name}"),
        &[
            (&format!("{vars}_SAMPLE"), sample.to_str().unwrap()),
            (&format!("{vars}_LOG"), log.to_str().unwrap()),
        ],
    );
    Some((person, host, log))
}

impl Person {
    /// Answers, as the person through the store, each permission request of `host`'s teammate
    /// as it comes (`answer` of how many were answered before) until task_1 is in review; the
    /// requests answered.
    fn answer_until_in_review(
        &self,
        host: &Host,
        mut answer: impl FnMut(usize) -> &'static str,
    ) -> Vec<crew_store::RequestInfo> {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let store = PgStore::connect(&self.url(), 2).unwrap();
        let task = || task_n(&runtime, &store, 1);
        let mut answered = Vec::new();
        until(
            WAIT,
            "task_1 in review",
            || {
                for request in pending_requests(&runtime, &store) {
                    let said = answer(answered.len());
                    self.on_store(&["respond", &request.request_id, "--as", "user", said]);
                    answered.push(request);
                }
                task().status == Status::Review
            },
            || format!("{:?}\n{}", task(), host.log()),
        );
        answered
    }
}

/// A Claude Code teammate on another host, on the store: bob's worker there runs the CLI (the
/// fixture `claude` replaying a recorded session) in its worktree of the clone, its permission
/// requests come to the person through the store and their answers go back to the CLI, the
/// CLI's team tools are `crew --store ROLE_URL mcp` with bob's own role, and its work enters
/// review through the remote, merged by the person.
#[test]
fn a_claude_code_teammate_on_another_host_works_through_the_store() {
    let model = |fixtures: &Path| {
        format!(
            "{{ provider = \"claude-code\", model = \"claude-opus-4-8\", bin = \"{}\", args = [\"--max-turns\", \"5\"] }}",
            fixtures.join("fake-claude").display()
        )
    };
    let Some((person, mut bob, log)) = fixture_cli_on_another_host(
        "claude-code",
        model,
        "bob",
        "do the things",
        "permission-stdio.transcript.jsonl",
        "FAKE_CLAUDE",
    ) else {
        return;
    };
    // The first request approved, the second refused.
    let answered =
        person.answer_until_in_review(&bob, |n| if n == 0 { "approve" } else { "reject" });
    assert_eq!(answered.len(), 2, "{answered:?}");
    assert!(
        answered.iter().all(|r| r.from.as_str() == "bob"),
        "{answered:?}"
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    assert_eq!(
        task_n(&runtime, &store, 1).result.as_deref(),
        Some("Finished.")
    );
    let responses: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["in"]["type"] == "control_response")
        .map(|l| l["in"]["response"]["response"].clone())
        .collect();
    assert_eq!(responses[0]["behavior"], "allow", "{responses:?}");
    assert_eq!(responses[1]["behavior"], "deny", "{responses:?}");
    // Its team tools: crew's MCP server on the store, as bob's role, in bob's clone.
    let mcp = std::fs::read_to_string(bob.clone.join(".crew/mcp/bob.json")).unwrap();
    assert!(
        mcp.contains("\"--store\"")
            && mcp.contains("crew_postgres_bob@")
            && mcp.contains("\"mcp\""),
        "{mcp}"
    );
    let merged = person.on_store(&["review", "merge", "task_1"]);
    assert!(merged.contains("task_1 merged into main"), "{merged}");
    assert!(person.path().join("claude-did.txt").is_file());
    person.ask_to_shut_down("bob");
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
}

/// A Codex teammate on another host, on the store: the fixture `codex` (replaying a recorded
/// session) asks twice, the person approves both through the store, and the file it wrote in
/// its worktree there reaches the person's checkout by review and merge.
#[test]
fn a_codex_teammate_on_another_host_works_through_the_store() {
    let model = |fixtures: &Path| {
        format!(
            "{{ provider = \"codex\", model = \"gpt-5.5\", bin = \"{}\", args = [\"-c\", \"analytics.enabled=false\"] }}",
            fixtures.join("fake-codex").display()
        )
    };
    let Some((person, mut carol, _)) = fixture_cli_on_another_host(
        "codex",
        model,
        "carol",
        "run a command and patch",
        "approvals-followup-interrupt.transcript.jsonl",
        "FAKE_CODEX",
    ) else {
        return;
    };
    let answered = person.answer_until_in_review(&carol, |_| "approve");
    assert_eq!(answered.len(), 2, "{answered:?}");
    let merged = person.on_store(&["review", "merge", "task_1"]);
    assert!(merged.contains("task_1 merged into main"), "{merged}");
    assert_eq!(
        std::fs::read_to_string(person.path().join("hello.txt")).unwrap(),
        "hello world\n"
    );
    person.ask_to_shut_down("carol");
    assert_eq!(carol.wait(WAIT), Some(0), "{}", carol.log());
}

/// `crew --store URL down` stops a teammate that waits on the person: bob, on another host,
/// waits on a permission request (it would see the shutdown request only once that is answered
/// or expires, minutes later); `down` denies it as the team stops, and bob shuts down within
/// the wait.
#[test]
fn down_on_the_store_stops_a_teammate_waiting_on_a_permission_request() {
    let Some(person) = Person::with(
        &[Mate::implementer("bob", SIMULATED)],
        false,
        "idle_poll_secs = 1\nidle_timeout_secs = 60\nheartbeat_secs = 1\nrequest_timeout_secs = 600",
        "",
    ) else {
        return;
    };
    person.on_store(&["task", "add", "write from-host2.txt"]);
    let mut bob = person.join("bob");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&person.url(), 2).unwrap();
    let pending = || pending_requests(&runtime, &store).len();
    until(WAIT, "bob's request", || pending() == 1, || bob.log());
    let url = person.url();
    let run = person
        .team
        .repo
        .crew(&["--store", &url, "down", "--timeout", "30"]);
    let down = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(run.code, 0, "{down}\n{}", bob.log());
    assert!(
        down.contains("denied bob's pending request")
            && down.contains("(the team stops)")
            && down.contains("every agent shut down"),
        "{down}"
    );
    assert_eq!(bob.wait(WAIT), Some(0), "{}", bob.log());
    assert_eq!(pending(), 0);
}
