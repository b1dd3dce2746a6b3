//! A teammate on a second "host": `crew worker --join` in a folder and HOME of its own, in a
//! mount namespace where the person's checkout is not there at all (a tmpfs over it), reaching
//! the person's side only through PostgreSQL and the team's git remote. It reads the published
//! team, clones the remote, claims the person's task, does it in its own worktree, pushes the
//! task's branch and puts it in review; the person reviews and merges it from the store into
//! their checkout, and the teammate, with nothing left, idles out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crew_store::{AgentName, AgentState, Status, TaskId};
use crew_store_pg::PgStore;

use crate::support::crew_exe;
use crate::support::team::{Team, crew_toml, git};

const WAIT: Duration = Duration::from_secs(60);

/// bob's CLI agent: writes the first line of its job into from-host2.txt and says whether the
/// person's checkout (`PERSON`) is to be seen from where it runs.
const BOB_SH: &str = r#"#!/bin/sh
prompt="$(cat)"
printf '%s\n' "$prompt" | head -n 1 > from-host2.txt
if [ -e "PERSON/crew.toml" ]; then echo "the person's checkout: visible"; else echo "the person's checkout: hidden"; fi
"#;

/// Whether `check` holds within `budget`.
fn within(budget: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + budget;
    while std::time::Instant::now() < end {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
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

#[test]
fn a_teammate_on_another_host_does_the_persons_task_through_the_store_and_the_remote() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    if let Err(why) = mount_namespaces() {
        eprintln!("skipped: no mount namespace for the second host ({why})");
        return;
    }
    let url = cluster.url();
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

    // The person's checkout: bob is a command teammate, the remote a bare repository.
    let mut toml = crew_toml(
        &format!("remote = \"{}\"", bare.display()),
        &[],
        "mode = \"ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 3\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    toml.push_str(
        "\n[[teammate]]\nname = \"bob\"\nrole = \"implementer\"\nwrites = true\nmodel = { provider = \"command\", cmd = [\"./bob.sh\"] }\n",
    );
    let team = Team::new(&toml, "echo.toml", &[]);
    let person = team.repo.path().to_path_buf();
    let script = person.join("bob.sh");
    std::fs::write(
        &script,
        BOB_SH.replace("PERSON", &person.display().to_string()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(&person, &["add", "bob.sh"]);
    git(&person, &["commit", "-qm", "bob's agent"]);
    git(
        &person,
        &["push", "--quiet", bare.to_str().unwrap(), "main"],
    );
    let setup = team.repo.ok(&["store", "setup", &url]);
    let bob_url = cluster.url_as(&role_of(&setup, "bob"));
    let added = team
        .repo
        .ok(&["--store", &url, "task", "add", "write from-host2.txt"]);
    assert!(added.contains("task_1"), "{added}");

    // The second host: its own folder and HOME; the person's checkout hidden under a tmpfs.
    let host2 = outside.path().join("host2");
    std::fs::create_dir_all(host2.join("home")).unwrap();
    let clone = host2.join("web");
    let log = std::fs::File::create(host2.join("worker.log")).unwrap();
    let mut bob = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(
            "mount -t tmpfs crew-hidden \"$1\" && test ! -e \"$1/crew.toml\" || exit 97; \
             exec \"$2\" worker --join \"$3\" --name bob --into \"$4\"",
        )
        .args(["sh", person.to_str().unwrap(), crew_exe(), &bob_url])
        .arg(&clone)
        .current_dir(&host2)
        .env("HOME", host2.join("home"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let worker_log = || std::fs::read_to_string(host2.join("worker.log")).unwrap_or_default();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 2).unwrap();
    let task = |store: &PgStore| runtime.block_on(store.task(TaskId(1))).unwrap();
    let reviewed = within(WAIT, || task(&store).status == Status::Review);
    assert!(
        reviewed,
        "task_1 never reached review: {:?}\n{}",
        task(&store),
        worker_log()
    );
    let in_review = task(&store);
    assert_eq!(in_review.owner, Some(AgentName::parse("bob").unwrap()));
    let result = in_review.result.clone().unwrap_or_default();
    assert!(result.contains("the person's checkout: hidden"), "{result}");
    let commits = in_review.commits.clone().expect("bob's commits");
    assert_eq!(commits.branch, "crew/bob");
    // The commits travelled through the remote, at the head the store records.
    let pushed = git_out(
        outside.path(),
        &[
            "ls-remote",
            bare.to_str().unwrap(),
            "refs/heads/crew/bob/task_1",
        ],
    );
    assert!(pushed.starts_with(&commits.head), "{pushed} vs {commits:?}");
    assert!(clone.join(".worktrees/bob").is_dir(), "{}", worker_log());

    // The person reviews and merges it from the store, in their checkout.
    let merged = team
        .repo
        .ok(&["--store", &url, "review", "merge", "task_1"]);
    assert!(merged.contains("task_1"), "{merged}");
    assert_eq!(
        std::fs::read_to_string(person.join("from-host2.txt")).unwrap(),
        "Task task_1: write from-host2.txt\n"
    );
    assert_eq!(task(&store).status, Status::Completed);
    let remote_main = git_out(
        outside.path(),
        &["ls-remote", bare.to_str().unwrap(), "refs/heads/main"],
    );
    let person_main = git_out(&person, &["rev-parse", "main"]);
    assert!(
        remote_main.starts_with(&person_main),
        "the base was pushed back"
    );

    // With nothing left to do bob idles out, its status in the store saying so.
    let mut exited = None;
    let gone = within(WAIT, || {
        exited = bob.try_wait().unwrap();
        exited.is_some()
    });
    assert!(gone, "bob still runs:\n{}", worker_log());
    assert_eq!(exited.unwrap().code(), Some(0), "{}", worker_log());
    let said = worker_log();
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
