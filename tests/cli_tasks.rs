//! `crew task ...` end to end: ids, the DAG, claims, owners and exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crate::support::Repo;

#[test]
fn add_prints_ids_from_a_high_water_mark_that_never_reuses() {
    let repo = Repo::init();
    assert_eq!(repo.ok(&["task", "add", "one"]).trim(), "task_1");
    assert_eq!(repo.ok(&["task", "add", "two"]).trim(), "task_2");
    std::fs::remove_file(repo.join(".tasks/task_2.json")).unwrap();
    assert_eq!(repo.ok(&["task", "add", "three"]).trim(), "task_3");
}

#[test]
fn claim_follows_the_protocol_and_refusals_exit_3_with_the_reason() {
    let repo = Repo::init();
    repo.ok(&["task", "add", "schema"]);
    repo.ok(&["task", "add", "api", "--blocked-by", "task_1"]);
    repo.ok(&["task", "add", "review", "--role", "reviewer"]);

    let blocked = repo.crew(&["task", "claim", "task_2", "--as", "alice"]);
    assert_eq!(blocked.code, 3);
    assert_eq!(blocked.stderr.trim(), "crew: task_2 is blocked by task_1");

    let role = repo.crew(&["task", "claim", "task_3", "--as", "alice"]);
    assert_eq!(role.code, 3);
    assert_eq!(
        role.stderr.trim(),
        "crew: task_3 needs role reviewer, but alice has role implementer"
    );

    let claimed = repo.json(&["task", "claim", "--next", "--as", "alice", "--json"]);
    assert_eq!(claimed["id"], "task_1");
    assert_eq!(claimed["status"], "in_progress");
    assert_eq!(claimed["owner"], "alice");

    let taken = repo.crew(&["task", "claim", "task_1", "--as", "bob"]);
    assert_eq!(taken.code, 3);
    assert_eq!(
        taken.stderr.trim(),
        "crew: task_1 is already claimed by alice"
    );

    let not_owner = repo.crew(&["task", "done", "task_1", "--as", "bob"]);
    assert_eq!(not_owner.code, 3);
    assert_eq!(
        not_owner.stderr.trim(),
        "crew: task_1 is owned by alice, not bob"
    );

    repo.ok(&[
        "task",
        "done",
        "task_1",
        "--as",
        "alice",
        "--result",
        "tables made",
    ]);
    let next = repo.json(&["task", "claim", "--next", "--as", "bob", "--json"]);
    assert_eq!(next["id"], "task_2", "unblocked once its blocker completed");
    let carol = repo.json(&["task", "claim", "--next", "--as", "carol", "--json"]);
    assert_eq!(carol["id"], "task_3", "the reviewer gets the reviewer task");

    let none = repo.crew(&["task", "claim", "--next", "--as", "alice"]);
    assert_eq!(none.code, 3);
    assert_eq!(none.stderr.trim(), "crew: no claimable task for alice");

    repo.ok(&["task", "release", "task_2", "--as", "bob"]);
    let released = repo.json(&["task", "show", "task_2", "--json"]);
    assert_eq!(released["status"], "pending");
    assert_eq!(released["owner"], serde_json::Value::Null);

    repo.ok(&["task", "claim", "2", "--as", "alice"]);
    repo.ok(&[
        "task",
        "fail",
        "task_2",
        "--as",
        "alice",
        "--reason",
        "no network",
    ]);
    let failed = repo.json(&["task", "show", "task_2", "--json"]);
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["result"], "no network");
}

#[test]
fn an_assigned_task_is_only_claimed_by_its_assignee_and_can_be_taken_back() {
    let repo = Repo::init();
    repo.ok(&["task", "add", "schema"]);
    repo.ok(&["task", "add", "api", "--blocked-by", "task_1"]);
    repo.ok(&["task", "add", "review", "--role", "reviewer"]);

    let out = repo.ok(&["task", "assign", "task_2", "bob"]);
    assert_eq!(out.trim(), "assigned to bob: task_2 (pending) api");
    let blocked = repo.crew(&["task", "claim", "--next", "--as", "bob", "--json"]);
    assert_eq!(
        repo.json(&["task", "show", "task_2", "--json"])["owner"],
        "bob"
    );
    // Blocked still means blocked: bob gets the open task_1 meanwhile.
    assert_eq!(blocked.code, 0);
    assert!(blocked.stdout.contains("\"task_1\""), "{}", blocked.stdout);
    repo.ok(&["task", "done", "task_1", "--as", "bob"]);
    let alice = repo.crew(&["task", "claim", "task_2", "--as", "alice"]);
    assert_eq!(alice.code, 3);
    assert_eq!(
        alice.stderr.trim(),
        "crew: task_2 is already claimed by bob"
    );
    let none = repo.crew(&["task", "claim", "--next", "--as", "alice"]);
    assert_eq!(none.stderr.trim(), "crew: no claimable task for alice");
    let next = repo.json(&["task", "claim", "--next", "--as", "bob", "--json"]);
    assert_eq!(next["id"], "task_2", "the assignee takes its task first");

    // Reassigning a task in progress takes it from its owner, whose finish is then refused.
    let moved = repo.json(&["task", "assign", "task_2", "alice", "--json"]);
    assert_eq!(
        (moved["status"].as_str(), moved["owner"].as_str()),
        (Some("pending"), Some("alice"))
    );
    assert!(
        moved["notes"][1]
            .as_str()
            .unwrap()
            .ends_with("reassigned from bob to alice by user")
    );
    let late = repo.crew(&["task", "done", "task_2", "--as", "bob"]);
    assert_eq!(late.code, 3);
    assert_eq!(
        late.stderr.trim(),
        "crew: task_2 is pending; only an in_progress task can be completed"
    );

    let unassigned = repo.ok(&["task", "assign", "task_2", "--nobody"]);
    assert_eq!(unassigned.trim(), "unassigned: task_2 (pending) api");
    assert_eq!(
        repo.json(&["task", "claim", "--next", "--as", "alice", "--json"])["id"],
        "task_2"
    );

    let role = repo.crew(&["task", "assign", "task_3", "alice"]);
    assert_eq!(role.code, 3);
    assert_eq!(
        role.stderr.trim(),
        "crew: task_3 needs role reviewer, but alice has role implementer"
    );
    let stranger = repo.crew(&["task", "assign", "task_3", "mallory"]);
    assert_eq!(stranger.code, 3);
    assert!(
        stranger.stderr.contains("unknown agent \"mallory\""),
        "{}",
        stranger.stderr
    );
    repo.ok(&["task", "done", "task_2", "--as", "alice"]);
    let done = repo.crew(&["task", "assign", "task_1", "alice"]);
    assert_eq!(done.code, 3);
    assert_eq!(
        done.stderr.trim(),
        "crew: task_1 is completed; a completed task cannot be assigned"
    );
}

#[test]
fn cycles_and_unknown_blockers_are_refused_at_write_time() {
    let repo = Repo::init();
    repo.ok(&["task", "add", "a"]);
    repo.ok(&["task", "add", "b", "--blocked-by", "task_1"]);
    repo.ok(&["task", "add", "c", "--blocked-by", "task_2"]);
    let cycle = repo.crew(&["task", "update", "task_1", "--blocked-by", "task_3"]);
    assert_eq!(cycle.code, 3);
    assert_eq!(
        cycle.stderr.trim(),
        "crew: blockedBy would make a cycle: task_1 -> task_3 -> task_2 -> task_1"
    );
    let own = repo.crew(&["task", "update", "task_1", "--blocked-by", "task_1"]);
    assert_eq!(own.code, 3);
    assert_eq!(
        own.stderr.trim(),
        "crew: blockedBy would make a cycle: task_1 -> task_1"
    );
    let unknown = repo.crew(&["task", "add", "d", "--blocked-by", "task_9"]);
    assert_eq!(unknown.code, 3);
    assert_eq!(
        unknown.stderr.trim(),
        "crew: task_4 cannot be blocked by unknown task task_9"
    );
    let unchanged = repo.json(&["task", "show", "task_1", "--json"]);
    assert_eq!(unchanged["blockedBy"], serde_json::json!([]));
    repo.ok(&[
        "task",
        "update",
        "task_3",
        "--clear-blocked-by",
        "--subject",
        "c2",
    ]);
    let c = repo.json(&["task", "show", "task_3", "--json"]);
    assert_eq!(c["blockedBy"], serde_json::json!([]));
    assert_eq!(c["subject"], "c2");
}

#[test]
fn graph_shows_layers_and_why_each_task_waits() {
    let repo = Repo::init();
    repo.ok(&["task", "add", "schema"]);
    repo.ok(&["task", "add", "api", "--blocked-by", "1"]);
    repo.ok(&["task", "add", "docs", "--blocked-by", "1"]);
    repo.ok(&[
        "task",
        "add",
        "deploy",
        "--blocked-by",
        "2",
        "--blocked-by",
        "3",
    ]);
    repo.ok(&["task", "claim", "1", "--as", "alice"]);
    let text = repo.ok(&["task", "graph"]);
    assert_eq!(
        text,
        "layer 0\n  ▶ task_1    running    (alice) schema\nlayer 1\n  ⧗ task_2    blocked    (by task_1) api\n  ⧗ task_3    blocked    (by task_1) docs\nlayer 2\n  ⧗ task_4    blocked    (by task_2, task_3) deploy\n"
    );
    repo.ok(&["task", "done", "1", "--as", "alice"]);
    let graph = repo.json(&["task", "graph", "--json"]);
    assert_eq!(graph["layers"][0][0]["state"], "done");
    assert_eq!(graph["layers"][1][0]["state"], "claimable");
    assert_eq!(
        graph["layers"][2][0]["openBlockers"],
        serde_json::json!(["task_2", "task_3"])
    );
}

#[test]
fn json_output_is_one_document_and_nothing_else() {
    let repo = Repo::init();
    repo.ok(&["task", "add", "a"]);
    for args in [
        vec!["task", "list", "--json"],
        vec!["task", "show", "task_1", "--json"],
        vec!["task", "graph", "--json"],
        vec!["task", "add", "b", "--json"],
        vec!["send", "--from", "lead", "--to", "alice", "hi", "--json"],
        vec!["inbox", "alice", "--json"],
        vec!["requests", "--json"],
    ] {
        let out = repo.ok(&args);
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(&out);
        assert!(parsed.is_ok(), "{args:?} printed {out:?}");
    }
}

#[test]
fn usage_errors_exit_2_and_other_errors_exit_1() {
    let repo = Repo::init();
    assert_eq!(repo.crew(&["task", "frobnicate"]).code, 2);
    assert_eq!(repo.crew(&["task", "claim", "--as", "alice"]).code, 2);
    let traversal = repo.crew(&["task", "show", "../../etc/passwd"]);
    assert_eq!(traversal.code, 2);
    assert_eq!(
        traversal.stderr.trim(),
        "crew: invalid task id \"../../etc/passwd\": expected task_<number>"
    );
    let missing = repo.crew(&["task", "show", "task_42"]);
    assert_eq!(missing.code, 1);
    assert_eq!(missing.stderr.trim(), "crew: no such task: task_42");
    let stranger = repo.crew(&["task", "claim", "--next", "--as", "mallory"]);
    assert_eq!(stranger.code, 3);
    assert_eq!(
        stranger.stderr.trim(),
        "crew: unknown agent \"mallory\"; the team is: lead, alice, bob, carol, user"
    );
}
