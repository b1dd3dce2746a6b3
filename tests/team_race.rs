//! Two `crew worker` processes, both idle and watching, wake on the same new task: exactly one
//! claims it and does it, every time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::BUDGET;

#[test]
fn two_idle_workers_racing_for_each_new_task_do_it_exactly_once() {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", ""), ("bob", "implementer", "")],
        "mode = \"ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
    );
    let team = Team::new(&toml, "test_race.toml", &[]);
    let mut alice = team.worker("alice");
    let mut bob = team.worker("bob");
    for round in 1..=3 {
        team.wait_state("alice", "IDLE", BUDGET);
        team.wait_state("bob", "IDLE", BUDGET);
        team.repo.ok(&["task", "add", &format!("race {round}")]);
        let id = format!("task_{round}");
        let done = team.wait_task(&id, "completed", BUDGET);
        let owner = done["owner"].as_str().unwrap();
        assert_eq!(done["result"], format!("{owner} did it"), "{done}");
        // The worker tells the lead once it has finished; wait for that before counting.
        let reports = crew_test_support::wait::eventually("the report", BUDGET, || {
            let reports: Vec<_> = team
                .inbox("lead")
                .into_iter()
                .filter(|m| {
                    m["type"] == "status_update"
                        && m["text"]
                            .as_str()
                            .is_some_and(|t| t.starts_with(&format!("{id} ")))
                })
                .collect();
            (!reports.is_empty()).then_some(reports)
        });
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert_eq!(reports[0]["from"], owner, "{reports:?}");
    }
    // Nothing was done twice, not even late: one report per task in the whole inbox.
    let reports: Vec<String> = team
        .inbox("lead")
        .iter()
        .filter(|m| m["type"] == "status_update")
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(reports.len(), 3, "{reports:?}");
    // Both took part in the race to the end: each is still alive and idle.
    assert_eq!(team.state("alice"), "IDLE");
    assert_eq!(team.state("bob"), "IDLE");
    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
    assert_eq!(bob.wait(Duration::from_secs(10)), Some(0));
    assert_eq!(team.state("alice"), "SHUTDOWN");
    assert_eq!(team.state("bob"), "SHUTDOWN");
}
