//! The merge queue end to end: real `crew worker` processes make the tasks' commits, the
//! person approves them with `crew review approve`, and the team's process (`crew up
//! --headless`, or the daemon) tests what would land in its sandbox and lands it, bisects a red
//! batch, sends a culprit or a conflicting task back, tests again when the person commits
//! meanwhile, and resumes after the daemon is SIGKILLed mid-test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::PathBuf;
use std::time::Duration;

use crate::support::team::{Bg, Team, crew_toml, git, signal};
use crew_test_support::wait::eventually;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(90);

/// Fails when mul.txt and extra.txt are both there: each task passes alone, two break together.
const CLASH_SH: &str = "if [ -f mul.txt ] && [ -f extra.txt ]; then echo 'mul and extra clash'; \
                        exit 1; fi\necho 'tests pass'\n";
/// Says which files it sees in `started`, then waits for the test to drop `go` beside it.
const GATED_SH: &str = "ls > started\nwhile [ ! -e go ]; do sleep 0.1; done\necho 'tests pass'\n";

fn team(test_sh: &str, batch: usize) -> Team {
    team_with(test_sh, batch, "")
}

/// As [`team`], with `more` after the `[merge_queue]` table.
fn team_with(test_sh: &str, batch: usize, more: &str) -> Team {
    let toml = crew_toml(
        &format!("test_command = \"sh test.sh\"\n\n[merge_queue]\nbatch = {batch}{more}"),
        &[
            ("alice", "implementer", "writes = true"),
            ("bob", "implementer", "writes = true"),
            ("carol", "implementer", "writes = true"),
        ],
        "mode = \"accept-edits\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    Team::new(&toml, "test_review.toml", &[("test.sh", test_sh)])
}

/// Adds each task, assigned to its teammate, and starts the team (headless).
fn start(team: &Team, tasks: &[(&str, &str)]) -> Bg {
    start_with(team, tasks, &["up", "--headless"])
}

fn start_with(team: &Team, tasks: &[(&str, &str)], up: &[&str]) -> Bg {
    for (n, (subject, owner)) in tasks.iter().enumerate() {
        team.repo.ok(&["task", "add", subject]);
        team.repo
            .ok(&["task", "assign", &format!("task_{}", n + 1), owner]);
    }
    team.spawn("up", up)
}

fn wait_review(team: &Team, id: &str) {
    eventually(&format!("{id} in review"), WAIT, || {
        let t = team.task(id);
        assert_ne!(t["status"], "failed", "{t}");
        (t["status"] == "review").then_some(())
    });
}

/// Approves `ids` with the queue paused, so they are tested as one batch.
fn approve_all(team: &Team, ids: &[&str]) {
    team.repo.ok(&["queue", "pause"]);
    for id in ids {
        let said = team.repo.ok(&["review", "approve", id]);
        assert!(said.contains("approved into the merge queue"), "{said}");
    }
    team.repo.ok(&["queue", "resume"]);
}

fn queue(team: &Team) -> Value {
    team.repo.json(&["queue", "list", "--json"])
}

fn entry_state(team: &Team, id: &str) -> String {
    let q = queue(team);
    q["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .map_or(String::new(), |e| e["state"].as_str().unwrap().to_string())
}

/// Waits for `id`'s entry to be in `state` (a task is marked completed just before its entry).
fn wait_entry(team: &Team, id: &str, state: &str) {
    eventually(&format!("{id} {state} in the queue"), WAIT, || {
        (entry_state(team, id) == state).then_some(())
    });
}

fn runs(team: &Team) -> Vec<Value> {
    queue(team)["runs"].as_array().unwrap().clone()
}

fn main_log(team: &Team) -> String {
    crew_test_support::git::git_cli(
        std::path::Path::new("git"),
        team.repo.path(),
        &["log", "--format=%s", "main"],
    )
}

fn notes(team: &Team, id: &str) -> String {
    team.task(id)["notes"].to_string()
}

fn tree(team: &Team, file: &str) -> PathBuf {
    team.repo.join(&format!(".crew/merge-queue/tree/{file}"))
}

fn log(team: &Team) -> String {
    std::fs::read_to_string(team.repo.join(".crew/test-up.log")).unwrap_or_default()
}

#[test]
fn two_that_break_together_the_queue_lands_the_good_ones_and_sends_the_culprit_back() {
    let team = team(CLASH_SH, 3);
    let _up = start(
        &team,
        &[
            ("sub: one", "alice"),
            ("mul: two", "bob"),
            ("extra: three", "carol"),
        ],
    );
    for id in ["task_1", "task_2", "task_3"] {
        wait_review(&team, id);
    }
    approve_all(&team, &["task_1", "task_2", "task_3"]);

    team.wait_task("task_1", "completed", WAIT);
    team.wait_task("task_2", "completed", WAIT);
    wait_entry(&team, "task_3", "failed");
    let note = notes(&team, "task_3");
    assert!(
        note.contains("sent back by user: the merge queue's tests")
            && note.contains("mul and extra clash"),
        "{note}"
    );
    let runs = runs(&team);
    // 1 + ⌈log2 3⌉ + 1 at most: the batch, then its halves (the rest of a red set is not rerun).
    assert!(
        runs.len() <= 4,
        "{} runs: {runs:?}\n{}",
        runs.len(),
        log(&team)
    );
    assert_eq!(runs[0]["tasks"].as_array().unwrap().len(), 3, "{runs:?}");
    assert_eq!(runs[0]["outcome"], "failed", "{runs:?}");
    let history = main_log(&team);
    assert!(
        history.contains("task_1: sub") && history.contains("task_2: mul"),
        "{history}"
    );
    assert!(
        !history.contains("task_3"),
        "the culprit landed:\n{history}"
    );
    // What landed is what was tested: the base's files pass the tests.
    assert!(team.repo.join("mul.txt").exists() && !team.repo.join("extra.txt").exists());
    let out = log(&team);
    assert!(
        out.contains("merge queue: testing task_1, task_2, task_3"),
        "{out}"
    );
}

#[test]
fn a_conflict_sends_the_later_task_back_and_the_base_is_unchanged_by_it() {
    let team = team("echo 'tests pass'\n", 2);
    let _up = start(&team, &[("same: one", "alice"), ("same: two", "bob")]);
    wait_review(&team, "task_1");
    wait_review(&team, "task_2");
    approve_all(&team, &["task_1", "task_2"]);

    team.wait_task("task_1", "completed", WAIT);
    wait_entry(&team, "task_2", "failed");
    let note = notes(&team, "task_2");
    assert!(note.contains("conflicts in shared.txt"), "{note}");
    let runs = runs(&team);
    assert_eq!(runs.len(), 1, "the conflict needs no test run: {runs:?}");
    assert_eq!(runs[0]["tasks"], serde_json::json!(["task_1"]));
    let shared = std::fs::read_to_string(team.repo.join("shared.txt")).unwrap();
    assert_eq!(shared, "the alice version\n");
    assert!(!main_log(&team).contains("task_2"));
}

#[test]
fn the_person_committing_mid_test_restarts_the_test_on_the_new_base() {
    let team = team(GATED_SH, 1);
    let _up = start(&team, &[("sub: one", "alice")]);
    wait_review(&team, "task_1");
    team.repo.ok(&["review", "approve", "task_1"]);
    eventually("the test to start", WAIT, || {
        tree(&team, "started").exists().then_some(())
    });

    std::fs::write(team.repo.join("person.txt"), "mine\n").unwrap();
    git(team.repo.path(), &["add", "person.txt"]);
    git(
        team.repo.path(),
        &["commit", "-q", "-m", "person's own commit"],
    );

    // The test starts again, on a tree that holds the person's commit.
    eventually("the test to run on the new base", WAIT, || {
        let seen = std::fs::read_to_string(tree(&team, "started")).unwrap_or_default();
        seen.contains("person.txt").then_some(())
    });
    std::fs::write(tree(&team, "go"), "").unwrap();
    team.wait_task("task_1", "completed", WAIT);
    let runs = runs(&team);
    let outcomes: Vec<&str> = runs
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["base_moved", "passed"], "{runs:?}");
    assert_ne!(runs[0]["base"], runs[1]["base"]);
    let history = main_log(&team);
    assert!(
        history.contains("task_1: sub") && history.contains("person's own commit"),
        "{history}"
    );
}

#[test]
fn a_daemon_killed_mid_test_resumes_the_queue_with_nothing_half_merged() {
    let team = team(GATED_SH, 1);
    let mut up = start_with(&team, &[("sub: one", "alice")], &["up", "--daemon"]);
    wait_review(&team, "task_1");
    team.repo.ok(&["review", "approve", "task_1"]);
    eventually("the test to start", WAIT, || {
        tree(&team, "started").exists().then_some(())
    });
    let before = main_log(&team);

    signal(up.pid, libc::SIGKILL);
    up.wait(WAIT);
    assert_eq!(entry_state(&team, "task_1"), "testing");
    assert_eq!(team.task("task_1")["status"], "review");
    assert_eq!(main_log(&team), before, "nothing landed");
    std::fs::remove_file(tree(&team, "started")).unwrap();

    let _again = team.spawn("up-again", &["up", "--daemon"]);
    eventually("the test to start again", WAIT, || {
        tree(&team, "started").exists().then_some(())
    });
    std::fs::write(tree(&team, "go"), "").unwrap();
    team.wait_task("task_1", "completed", WAIT);
    wait_entry(&team, "task_1", "merged");
    assert!(main_log(&team).contains("task_1: sub"));
    assert!(team.repo.join("sub.txt").exists());
}

#[test]
fn approving_a_change_to_what_governs_the_team_is_refused() {
    let team = team("echo 'tests pass'\n", 1);
    let _up = start(&team, &[("ci: a workflow", "alice")]);
    wait_review(&team, "task_1");
    let refused = team.repo.crew(&["review", "approve", "task_1"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("only the person merges that"),
        "{}",
        refused.stderr
    );
    assert!(queue(&team)["entries"].as_array().unwrap().is_empty());
}

#[test]
fn headless_merge_queue_approves_each_review_and_lands_it_once_tested() {
    let team = team("echo 'tests pass'\n", 2);
    team.repo.ok(&["task", "add", "sub: one"]);
    team.repo.ok(&["task", "assign", "task_1", "alice"]);
    let _up = team.spawn("up", &["up", "--headless", "--merge", "queue"]);
    let done = team.wait_task("task_1", "completed", WAIT);
    assert!(
        done["notes"]
            .to_string()
            .contains("merge queue: tested on main"),
        "{done}"
    );
    wait_entry(&team, "task_1", "merged");
    let out = log(&team);
    assert!(
        out.contains("task_1 approved into the merge queue by user"),
        "{out}"
    );
    assert!(out.contains("(--merge queue)"), "{out}");
}

#[test]
fn without_a_sandbox_the_queue_runs_nothing_and_retry_tests_it_once_there_is_one() {
    let team = team("echo 'tests pass'\n", 1);
    team.repo.ok(&["task", "add", "sub: one"]);
    team.repo.ok(&["task", "assign", "task_1", "alice"]);
    team.repo.ok(&["task", "add", "mul: two"]);
    team.repo.ok(&["task", "assign", "task_2", "bob"]);
    // The probe reports Landlock missing: an agent's code is never tested unconfined.
    let mut up = team.spawn_with_env(
        "up",
        &["up", "--headless"],
        &[("CREW_SANDBOX_TEST_MISSING", "landlock")],
    );
    wait_review(&team, "task_1");
    wait_review(&team, "task_2");
    team.repo.ok(&["review", "approve", "task_1"]);
    wait_entry(&team, "task_1", "failed");
    let q = queue(&team);
    let note = q["entries"][0]["note"].as_str().unwrap();
    assert!(note.contains("the sandbox is unavailable"), "{note}");
    assert_eq!(
        team.task("task_1")["status"],
        "review",
        "not sent back: nothing ran"
    );
    assert!(!main_log(&team).contains("task_1"));
    signal(up.pid, libc::SIGTERM);
    up.wait(WAIT);

    // Approved and then taken out again: it stays in review, out of the queue.
    team.repo.ok(&["review", "approve", "task_2"]);
    let removed = team.repo.ok(&["queue", "remove", "task_2"]);
    assert!(
        removed.contains("task_2 taken out of the merge queue"),
        "{removed}"
    );
    let again = team.repo.crew(&["queue", "remove", "task_2"]);
    assert_eq!(again.code, 3, "{}", again.stderr);

    let _up = team.spawn("up-again", &["up", "--headless"]);
    team.repo.ok(&["queue", "retry", "task_1"]);
    team.wait_task("task_1", "completed", WAIT);
    wait_entry(&team, "task_1", "merged");
    assert_eq!(team.task("task_2")["status"], "review");
    let list = team.repo.ok(&["queue", "list"]);
    assert!(
        list.contains("task_1") && list.contains("merged") && list.contains("test runs"),
        "{list}"
    );
}

/// A hostile teammate (test_attack.toml runs its task's description) tries to steer the queue:
/// approve, pause, remove and retry are the person's, and the queue's file is out of reach of
/// its commands.
#[test]
fn a_hostile_teammate_cannot_approve_pause_remove_or_rewrite_the_queue() {
    let team = crate::security_person::hostile_team();
    team.repo.ok(&["queue", "pause"]);
    let before = std::fs::read(team.repo.join(".crew/merge-queue.json")).unwrap();
    let crew = crate::support::crew_exe();
    let file = team.repo.join(".crew/merge-queue.json");
    let script = format!(
        "{crew} review approve task_1\n\
         {crew} queue resume\n\
         {crew} queue remove task_1\n\
         {crew} queue retry task_1\n\
         {crew} queue list\n\
         echo '{{\"paused\":false,\"entries\":[]}}' > {}\n",
        file.display()
    );
    team.repo.ok(&["task", "add", "attack", "--desc", &script]);
    let _alice = team.worker("alice");
    let done = team.wait_task("task_1", "completed", WAIT);
    let result = done["result"].as_str().unwrap();
    let refusals = result
        .matches("acts for the person or the team, and this process was started by an agent's tool")
        .count();
    assert_eq!(refusals, 4, "{result}");
    assert!(
        result.contains("`crew review") && result.contains("`crew queue"),
        "{result}"
    );
    // Reading stays open: the list printed.
    assert!(result.contains("merge queue PAUSED"), "{result}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the queue's file is unchanged"
    );
}

#[test]
fn reviews_approved_one_after_the_other_are_tested_together() {
    // The person on the screen approves one review, then the next: the queue waits a moment
    // for a batch that is not full, so both are tested in one run (not paused, not at once).
    let team = team("echo 'tests pass'\n", 3);
    let _up = start(&team, &[("sub: one", "alice"), ("mul: two", "bob")]);
    wait_review(&team, "task_1");
    wait_review(&team, "task_2");
    for id in ["task_1", "task_2"] {
        let said = team.repo.ok(&["review", "approve", id]);
        assert!(said.contains("approved into the merge queue"), "{said}");
        std::thread::sleep(Duration::from_millis(500));
    }
    team.wait_task("task_1", "completed", WAIT);
    team.wait_task("task_2", "completed", WAIT);
    let runs = runs(&team);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["tasks"], serde_json::json!(["task_1", "task_2"]));
}

/// The queue runs a branch's tests as an agent's code: under the team's `[limits]` (a fork bomb
/// committed to a branch must not take the person's machine), as the agents' commands are.
#[test]
fn the_queue_runs_the_tests_under_the_teams_limits() {
    let team = team_with(
        "grep 'Max processes' /proc/self/limits\n",
        1,
        "\n\n[limits]\nmax_processes = 77",
    );
    team.repo.ok(&["task", "add", "sub: one"]);
    team.repo.ok(&["task", "assign", "task_1", "alice"]);
    let _up = team.spawn("up", &["up", "--headless", "--merge", "queue"]);
    team.wait_task("task_1", "completed", WAIT);
    let output = std::fs::read_to_string(team.repo.join(".crew/merge-queue/output.log")).unwrap();
    let limit: Vec<&str> = output.split_whitespace().collect();
    assert_eq!(limit.get(2..4), Some(&["77", "77"][..]), "{output}");
}
