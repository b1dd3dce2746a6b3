//! Review before merge, end to end with real `crew worker` processes and manual merges through
//! `crew review`: per-task commits, dependents that wait for the merge, the reviewer on merged
//! code, send-back, discard, conflicts that change nothing, verdicts that must be explicit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::Command;
use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::{eventually, eventually_showing};
use serde_json::{Value, json};

/// Generous: the workers are separate processes on a shared, sometimes busy machine.
const WAIT: Duration = Duration::from_secs(60);
const TEST_SH: &str =
    "test -f sub.txt && test -f mul.txt && test -f docs.txt && echo all present\n";

fn team(teammates: &[(&str, &str, &str)]) -> Team {
    let toml = crew_toml(
        "test_command = \"sh test.sh\"",
        teammates,
        "mode = \"accept-edits\"\nallow = [\"bash(sh test.sh)\"]",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    Team::new(&toml, "test_review.toml", &[("test.sh", TEST_SH)])
}

/// `git ARGS` in `dir`, its output trimmed.
fn git(dir: &std::path::Path, args: &[&str]) -> String {
    crew_test_support::git::git_cli(std::path::Path::new("git"), dir, args)
        .trim()
        .to_string()
}

fn add(team: &Team, args: &[&str]) {
    let mut all = vec!["task", "add"];
    all.extend_from_slice(args);
    team.repo.ok(&all);
}

/// Waits for `id` to be in review; a task that failed instead says why at once.
fn wait_review(team: &Team, id: &str) -> Value {
    eventually(&format!("{id} to be in review"), WAIT, || {
        let t = team.task(id);
        assert_ne!(t["status"], "failed", "{t}");
        (t["status"] == "review").then_some(t)
    })
}

/// What still blocks `id`, as `crew task graph` says: a task with an open blocker cannot be
/// claimed (claims check the blockers under the lock), so nothing has to be waited out to know
/// it has not started.
fn open_blockers(team: &Team, id: &str) -> Value {
    let graph = team.repo.json(&["task", "graph", "--json"]);
    let task = graph["layers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|layer| layer.as_array().unwrap())
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in the graph: {graph}"));
    assert_eq!(task["state"], "blocked", "{task}");
    task["openBlockers"].clone()
}

fn review_files(team: &Team, id: &str) -> Vec<String> {
    let diff = team.repo.json(&["review", "diff", id, "--json"]);
    diff["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn dependents_wait_for_manual_merges_and_the_reviewer_tests_the_merged_code() {
    let team = team(&[
        ("alice", "implementer", "writes = true"),
        ("bob", "implementer", "writes = true"),
        ("carol", "reviewer", ""),
    ]);
    add(&team, &["sub: write sub.txt"]);
    add(&team, &["mul: write mul.txt"]);
    add(
        &team,
        &[
            "docs: combine them",
            "--blocked-by",
            "task_1",
            "--blocked-by",
            "task_2",
            "--role",
            "implementer",
        ],
    );
    add(
        &team,
        &[
            "review: run the tests",
            "--blocked-by",
            "task_3",
            "--role",
            "reviewer",
        ],
    );
    team.repo.ok(&["task", "assign", "task_1", "alice"]);
    team.repo.ok(&["task", "assign", "task_2", "bob"]);
    let _workers = ["alice", "bob", "carol"].map(|n| team.worker(n));

    let one = wait_review(&team, "task_1");
    wait_review(&team, "task_2");
    assert_eq!(one["commits"]["branch"], "crew/alice", "{one}");
    // Each task's commit: its id and subject, the agent's summary as the body, the teammate
    // as author.
    let commit = git(
        team.repo.path(),
        &["log", "-1", "--format=%an|%s|%b", "crew/alice"],
    );
    assert!(
        commit.starts_with("alice|task_1: sub: write sub.txt|Done: wrote the file."),
        "{commit}"
    );
    assert_eq!(review_files(&team, "task_1"), ["sub.txt"]);
    assert_eq!(review_files(&team, "task_2"), ["mul.txt"]);
    let list = team.repo.json(&["review", "list", "--json"]);
    assert_eq!(list["reviews"].as_array().unwrap().len(), 2, "{list}");

    // Nothing merged yet: the docs task may not start.
    assert_eq!(open_blockers(&team, "task_3"), json!(["task_1", "task_2"]));
    assert_eq!(team.task("task_3")["status"], "pending");

    // The person commits to the base meanwhile; the next task's worktree picks it up.
    std::fs::write(team.repo.join("person.txt"), "from the person\n").unwrap();
    git(team.repo.path(), &["add", "person.txt"]);
    git(
        team.repo.path(),
        &["commit", "-q", "-m", "person's own commit"],
    );

    let merged = team.repo.ok(&["review", "merge", "task_1"]);
    assert!(merged.contains("task_1 merged into main"), "{merged}");
    assert_eq!(team.task("task_1")["status"], "completed");
    assert_eq!(
        open_blockers(&team, "task_3"),
        json!(["task_2"]),
        "task_2 is not merged yet"
    );
    assert_eq!(team.task("task_3")["status"], "pending");
    team.repo.ok(&["review", "merge", "task_2"]);

    let docs = wait_review(&team, "task_3");
    let owner = docs["owner"].as_str().unwrap().to_string();
    let worktree = team.repo.join(&format!(".worktrees/{owner}"));
    let written = std::fs::read_to_string(worktree.join("docs.txt")).unwrap();
    assert!(
        written.contains("alice wrote sub") && written.contains("bob wrote mul"),
        "{written}"
    );
    assert!(
        worktree.join("person.txt").exists(),
        "the base was not brought in"
    );
    assert_eq!(
        review_files(&team, "task_3"),
        ["docs.txt"],
        "only task_3's own commits"
    );
    assert_eq!(team.task("task_4")["status"], "pending");
    team.repo.ok(&["review", "merge", "task_3"]);

    let review = team.wait_task("task_4", "completed", WAIT);
    let report = review["result"].as_str().unwrap();
    assert!(
        report.contains("all present") && report.ends_with("VERDICT: PASS"),
        "{review}"
    );

    let again = team.repo.crew(&["review", "merge", "task_3"]);
    assert_eq!(again.code, 3, "{}", again.stderr);
    assert!(
        again.stderr.contains("task_3 is completed, not in review"),
        "{}",
        again.stderr
    );
    let log = git(team.repo.path(), &["log", "--format=%s", "main"]);
    for subject in [
        "task_1: sub",
        "task_2: mul",
        "task_3: docs",
        "person's own commit",
    ] {
        assert!(log.contains(subject), "{subject} missing from main:\n{log}");
    }
    let lead = team.inbox("lead");
    assert!(
        lead.iter().any(|m| m["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("task_1 merged"))),
        "the lead was not told: {lead:?}"
    );
}

#[test]
fn a_task_sent_back_returns_to_its_teammate_and_a_discarded_one_fails_leaving_nothing() {
    let team = team(&[("alice", "implementer", "writes = true")]);
    add(&team, &["greet: write greet.txt"]);
    let _alice = team.worker("alice");
    wait_review(&team, "task_1");

    let sent = team.repo.crew(&[
        "review",
        "send-back",
        "task_1",
        "--note",
        "say more",
        "--json",
    ]);
    assert_eq!(sent.code, 0, "{}", sent.stderr);
    let back: Value = serde_json::from_str(&sent.stdout).unwrap();
    assert_eq!(back["outcome"], "sent_back");
    let again = eventually("task_1 back in review after more work", WAIT, || {
        let t = team.task("task_1");
        (t["status"] == "review" && t["notes"].to_string().contains("say more")).then_some(t)
    });
    assert_eq!(again["owner"], "alice");
    let diff = team.repo.json(&["review", "diff", "task_1", "--json"]);
    assert!(diff.to_string().contains("hello, fixed by alice"), "{diff}");
    let subjects = git(team.repo.path(), &["log", "--format=%s", "crew/alice"]);
    assert_eq!(subjects.matches("task_1: greet").count(), 2, "{subjects}");
    assert!(
        subjects.contains("task_1: greet: write greet.txt (sent back by user: say more)"),
        "the second round says it is one: {subjects}"
    );
    team.repo.ok(&["review", "merge", "task_1"]);
    assert_eq!(
        std::fs::read_to_string(team.repo.join("greet.txt")).unwrap(),
        "hello, fixed by alice\n"
    );

    add(&team, &["extra: write extra.txt"]);
    wait_review(&team, "task_2");
    let main_before = git(team.repo.path(), &["rev-parse", "main"]);
    team.repo
        .ok(&["review", "discard", "task_2", "--reason", "not wanted"]);
    let failed = team.task("task_2");
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["result"].as_str().unwrap().contains("not wanted"),
        "{failed}"
    );
    assert!(!team.repo.join(".worktrees/alice/extra.txt").exists());
    assert_eq!(git(team.repo.path(), &["rev-parse", "main"]), main_before);
    // Nothing is lost: the discarded commit stays in the branch's history.
    let subjects = git(team.repo.path(), &["log", "--format=%s", "crew/alice"]);
    assert!(
        subjects.contains("task_2: extra") && subjects.contains("task_2: discarded"),
        "{subjects}"
    );
    let not_in_review = team.repo.crew(&["review", "show", "task_2"]);
    assert_eq!(not_in_review.code, 3, "{}", not_in_review.stderr);
}

#[test]
fn the_second_of_two_conflicting_reviews_shows_the_conflict_and_merging_it_changes_nothing() {
    let team = team(&[
        ("alice", "implementer", "writes = true"),
        ("bob", "implementer", "writes = true"),
    ]);
    add(&team, &["same: alice's shared.txt"]);
    add(&team, &["same: bob's shared.txt"]);
    team.repo.ok(&["task", "assign", "task_1", "alice"]);
    team.repo.ok(&["task", "assign", "task_2", "bob"]);
    let _workers = ["alice", "bob"].map(|n| team.worker(n));
    wait_review(&team, "task_1");
    wait_review(&team, "task_2");
    team.repo.ok(&["review", "merge", "task_1"]);

    let shown = team.repo.json(&["review", "show", "task_2", "--json"]);
    assert_eq!(
        shown["conflicts"],
        serde_json::json!(["shared.txt"]),
        "{shown}"
    );
    let listed = team.repo.ok(&["review", "list"]);
    assert!(listed.contains("CONFLICTS: shared.txt"), "{listed}");
    let main_before = git(team.repo.path(), &["rev-parse", "main"]);
    let bob_before = git(&team.repo.join(".worktrees/bob"), &["rev-parse", "HEAD"]);
    let refused = team.repo.crew(&["review", "merge", "task_2"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("conflicts in shared.txt"),
        "{}",
        refused.stderr
    );
    assert_eq!(git(team.repo.path(), &["rev-parse", "main"]), main_before);
    assert_eq!(
        git(&team.repo.join(".worktrees/bob"), &["rev-parse", "HEAD"]),
        bob_before
    );
    assert_eq!(git(team.repo.path(), &["status", "--porcelain"]), "");
    assert_eq!(
        git(
            &team.repo.join(".worktrees/bob"),
            &["status", "--porcelain"]
        ),
        ""
    );
    assert_eq!(
        std::fs::read_to_string(team.repo.join("shared.txt")).unwrap(),
        "the alice version\n"
    );
    assert_eq!(team.task("task_2")["status"], "review");
}

#[test]
fn a_review_without_a_verdict_is_never_a_pass() {
    let team = team(&[("carol", "reviewer", "")]);
    add(&team, &["silent review of nothing", "--role", "reviewer"]);
    let _carol = team.worker("carol");
    let task = team.wait_task("task_1", "failed", WAIT);
    assert!(
        task["result"].as_str().unwrap().starts_with("no verdict"),
        "{task}"
    );
}

/// alice writes greet.txt and carol reviews it by running `test_sh`, sending a FAIL back on
/// her own; the task is added (for an implementer only: the reviewer reviews, it does not build).
fn reviewed_greeting(test_sh: &str) -> Team {
    let mut toml = crew_toml(
        "test_command = \"sh test.sh\"",
        &[
            ("alice", "implementer", "writes = true"),
            ("carol", "reviewer", ""),
        ],
        "mode = \"accept-edits\"\nallow = [\"bash(sh test.sh)\"]",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    toml.push_str("\n[worktree]\nreview_by = \"carol\"\nauto_send_back_on_fail = true\n");
    let team = Team::new(&toml, "test_review.toml", &[("test.sh", test_sh)]);
    add(&team, &["greet: write greet.txt", "--role", "implementer"]);
    team
}

#[test]
fn a_reviewer_sends_a_task_back_on_its_own_at_most_three_times() {
    // Nothing alice does passes: without a bound the two would bounce the task for ever.
    let team = reviewed_greeting("exit 1\n");
    let _workers = ["alice", "carol"].map(|n| team.worker(n));

    let said = eventually("the person being left the decision", WAIT, || {
        let lead = team.inbox("lead");
        lead.iter()
            .filter_map(|m| m["text"].as_str())
            .find(|t| t.contains("left for the person"))
            .map(str::to_string)
    });
    assert!(said.contains("sent back automatically 3 times"), "{said}");
    let task = team.task("task_1");
    assert_eq!(task["status"], "review", "{task}");
    assert_eq!(task["review"]["verdict"], "fail", "{task}");
    let sent_back = task["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n.as_str().unwrap().contains("sent back by carol"))
        .count();
    assert_eq!(sent_back, 3, "{task}");
}

#[test]
fn a_reviewer_agent_tests_the_merged_commits_and_its_fail_sends_the_task_back() {
    // Passes only once greet.txt (which is not on the base) says it was fixed.
    let team = reviewed_greeting("grep -q fixed greet.txt && echo all present\n");
    let _workers = ["alice", "carol"].map(|n| team.worker(n));

    let passed = eventually_showing("a pass from carol", WAIT, || {
        let t = team.task("task_1");
        if t["status"] == "review" && t["review"]["verdict"] == "pass" {
            Ok(t)
        } else {
            Err(t.to_string())
        }
    });
    assert_eq!(passed["review"]["by"], "carol");
    assert_eq!(
        passed["review"]["head"], passed["commits"]["head"],
        "{passed}"
    );
    assert!(
        passed["review"]["report"]
            .as_str()
            .unwrap()
            .contains("all present")
    );
    // Its first attempt failed the reviewer's tests and went back to alice without the person.
    let notes = passed["notes"].to_string();
    assert!(
        notes.contains("sent back by carol: carol found it failing"),
        "{passed}"
    );
    let lead = team.inbox("lead");
    let said: Vec<&str> = lead.iter().filter_map(|m| m["text"].as_str()).collect();
    assert!(
        said.iter()
            .any(|t| t.starts_with("carol reviewed task_1: fail; sent back")),
        "{said:?}"
    );
    assert!(said.contains(&"carol reviewed task_1: pass"), "{said:?}");
    let listed = team.repo.ok(&["review", "list"]);
    assert!(listed.contains("VERDICT carol: pass"), "{listed}");
    assert!(
        !team.repo.join(".crew/reviews/task_1-carol").exists(),
        "the temporary checkout is removed"
    );
    assert!(
        !team.repo.join("greet.txt").exists(),
        "nothing reached the base yet"
    );
    team.repo.ok(&["review", "merge", "task_1"]);
    assert_eq!(team.task("task_1")["status"], "completed");
}

#[test]
fn review_by_must_name_a_teammate() {
    let mut toml = crew_toml("", &[("alice", "implementer", "writes = true")], "", "");
    toml.push_str("\n[worktree]\nreview_by = \"carl\"\n");
    let team = Team::new(&toml, "test_review.toml", &[]);
    let run = team.repo.crew(&["review", "list"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("review_by = \"carl\" is not a teammate; the teammates are: alice"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_demo_goal_headless_with_manual_merges_ends_merged_with_six_passing_tests() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("demo");
    crew_team::demo::build(&dir).unwrap();
    let crew = |args: &[&str]| {
        Command::new(crate::support::crew_exe())
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let mut up = Command::new(crate::support::crew_exe())
        .args([
            "up",
            "--headless",
            "--approve",
            "allow",
            "--merge",
            "manual",
            "--until-done",
            // The demo scenario with a goal of the person's: asked for, not a surprise.
            "--simulator",
        ])
        .args(["--goal", crew_team::demo::GOAL])
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The person merges from another terminal, as each review arrives.
    let mut merged = Vec::new();
    let finished = eventually("crew up to finish", 2 * WAIT, || {
        if let Some(status) = up.try_wait().unwrap() {
            return Some(status);
        }
        let out = crew(&["review", "list", "--json"]);
        let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        for r in list["reviews"].as_array().cloned().unwrap_or_default() {
            let id = r["id"].as_str().unwrap().to_string();
            let done = crew(&["review", "merge", &id]);
            assert!(
                done.status.success(),
                "{}",
                String::from_utf8_lossy(&done.stderr)
            );
            merged.push(id);
        }
        None
    });
    assert!(finished.success());
    merged.sort();
    assert_eq!(
        merged,
        ["task_1", "task_2", "task_3"].map(String::from).to_vec()
    );
    let tests = Command::new("sh")
        .arg("test.sh")
        .current_dir(&dir)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&tests.stdout).to_string();
    assert!(printed.contains("6 passed, 0 failed"), "{printed}");
    // Each task's own commit is on main, by the teammate that did it.
    let log = git(&dir, &["log", "--format=%an %s", "main"]);
    for subject in [
        "task_1: Add a sub function",
        "task_2: Add a mul function",
        "task_3: Document",
    ] {
        let line = log.lines().find(|l| l.contains(subject));
        let author = line.and_then(|l| l.split(' ').next());
        assert!(
            matches!(author, Some("alice" | "bob")),
            "{subject} missing from main or not by its teammate:\n{log}"
        );
    }
    let status: Value = serde_json::from_slice(&crew(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["verdicts"]["task_4"], "pass", "{status}");
    let review = std::fs::read_to_string(dir.join(".tasks/task_4.json")).unwrap();
    assert!(
        review.contains("6 passed, 0 failed"),
        "the reviewer tested merged code: {review}"
    );
}

#[test]
fn merge_when_done_merges_at_once_but_never_a_change_to_ci_or_crew_toml() {
    let mut toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"accept-edits\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    toml.push_str("\n[worktree]\nmerge_when_done = true\n");
    let team = Team::new(&toml, "test_review.toml", &[]);
    add(&team, &["sub: write sub.txt"]);
    add(&team, &["ci: write the workflow", "--blocked-by", "task_1"]);
    let _alice = team.worker("alice");

    let sub = team.wait_task("task_1", "completed", WAIT);
    assert!(
        sub["result"].as_str().unwrap().contains("merged task_1"),
        "{sub}"
    );
    assert!(team.repo.join("sub.txt").exists(), "merged at once");
    let ci = wait_review(&team, "task_2");
    let result = ci["result"].as_str().unwrap();
    assert!(
        result.contains("task_2 changes .github/workflows/ci.yml (CI and repository automation), which govern the team"),
        "{ci}"
    );
    assert!(
        !team.repo.join(".github").exists(),
        "not merged without the person"
    );
    let listed = team.repo.ok(&["review", "list"]);
    assert!(
        listed.contains("WARNING changes .github/workflows/ci.yml"),
        "{listed}"
    );
    team.repo.ok(&["review", "merge", "task_2"]);
    assert!(team.repo.join(".github/workflows/ci.yml").exists());
}

#[test]
fn merge_when_done_never_merges_an_earlier_tasks_protected_change_that_waits_in_review() {
    let mut toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"accept-edits\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    toml.push_str("\n[worktree]\nmerge_when_done = true\n");
    let team = Team::new(&toml, "test_review.toml", &[]);
    add(&team, &["ci: write the workflow"]);
    let _alice = team.worker("alice");
    wait_review(&team, "task_1");
    // task_2's own commits change nothing protected, but its branch still holds task_1's.
    add(&team, &["sub: write sub.txt"]);
    let sub = wait_review(&team, "task_2");
    assert!(
        sub["result"]
            .as_str()
            .unwrap()
            .contains("task_2 changes .github/workflows/ci.yml (CI and repository automation), which govern the team"),
        "{sub}"
    );
    assert!(!team.repo.join(".github").exists(), "{sub}");
    assert!(!team.repo.join("sub.txt").exists(), "{sub}");

    team.repo.ok(&["review", "merge", "task_2"]);
    assert!(team.repo.join(".github/workflows/ci.yml").exists());
    assert_eq!(team.task("task_1")["status"], "completed");
}

#[test]
fn a_conflict_bringing_the_worktree_up_to_date_leaves_the_task_unstarted_and_changes_nothing() {
    let team = team(&[("alice", "implementer", "writes = true")]);
    add(
        &team,
        &["same: alice's shared.txt", "--role", "implementer"],
    );
    let _alice = team.worker("alice");
    wait_review(&team, "task_1");
    // The person writes the same file on the base meanwhile.
    std::fs::write(team.repo.join("shared.txt"), "the person's version\n").unwrap();
    git(team.repo.path(), &["add", "shared.txt"]);
    git(
        team.repo.path(),
        &["commit", "-q", "-m", "person's shared.txt"],
    );
    let main_before = git(team.repo.path(), &["rev-parse", "main"]);
    let worktree = team.repo.join(".worktrees/alice");
    let alice_before = git(&worktree, &["rev-parse", "HEAD"]);

    add(&team, &["sub: write sub.txt", "--role", "implementer"]);
    let failed = team.wait_task("task_2", "failed", WAIT);
    let why = failed["result"].as_str().unwrap();
    assert!(
        why.starts_with(
            "not started: bringing crew/alice up to date with main conflicts in shared.txt"
        ),
        "{failed}"
    );
    assert!(!worktree.join("sub.txt").exists(), "the task did not run");
    assert_eq!(git(&worktree, &["rev-parse", "HEAD"]), alice_before);
    assert_eq!(git(&worktree, &["status", "--porcelain"]), "");
    assert_eq!(git(team.repo.path(), &["rev-parse", "main"]), main_before);
    assert_eq!(
        std::fs::read_to_string(worktree.join("shared.txt")).unwrap(),
        "the alice version\n"
    );
    let lead = team.inbox("lead");
    assert!(
        lead.iter().any(|m| m["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("task_2 failed: not started"))),
        "{lead:?}"
    );
}
