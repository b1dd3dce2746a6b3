//! A worker killed with SIGKILL mid-task: the supervisor (`crew up --headless`) notices, gives
//! its task back with a note, tells the lead and shows it DEAD; another worker finishes the
//! task; `crew worker restart` brings the dead one back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{signal, slow_step_holder, slow_team};
use crew_test_support::wait::{BUDGET, eventually};

#[test]
fn a_killed_worker_is_declared_dead_its_task_goes_to_another_and_it_can_be_restarted() {
    let team = slow_team();
    team.repo.ok(&["task", "add", "a slow task"]);
    let mut up = team.spawn(
        "up",
        &["up", "--headless", "--approve", "allow", "--until-done"],
    );
    let victim = slow_step_holder(&team, "task_1");
    let other = if victim == "alice" { "bob" } else { "alice" };
    let before = team.status(&victim);
    assert_eq!(before["state"], "WORK", "{before}");
    assert_eq!(before["task"], "task_1", "{before}");
    let pid = u32::try_from(before["pid"].as_u64().unwrap()).unwrap();
    signal(pid, libc::SIGKILL);

    let dead = team.wait_state(&victim, "DEAD", BUDGET);
    assert_eq!(dead["pid"], pid, "{dead}");
    // What its bash was running did not outlive it.
    let slow: u32 = std::fs::read_to_string(team.repo.join(".crew/slow.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eventually("the dead worker's slow.sh to end", BUDGET, || {
        (!crew_store::pid_alive(slow)).then_some(())
    });
    // The other worker takes the task over and finishes it (slow.sh is quick the second time).
    let done = team.wait_task("task_1", "completed", BUDGET);
    assert_eq!(done["owner"], other, "{done}");
    let notes: Vec<&str> = done["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains(&format!("released: {victim} died"))),
        "{done}"
    );
    let told = team.inbox("lead");
    assert!(
        told.iter().any(|m| m["type"] == "status_update"
            && m["text"]
                .as_str()
                .is_some_and(|t| t.starts_with(&format!("{victim} died")) && t.contains("task_1"))),
        "{told:?}"
    );
    assert_eq!(
        up.wait(Duration::from_secs(30)),
        Some(0),
        "crew up --until-done"
    );
    assert_eq!(team.state(&victim), "DEAD");

    let run = team.repo.crew(&["worker", "restart", &victim]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let back = eventually("the restarted worker", BUDGET, || {
        let s = team.status(&victim);
        (s["state"] == "IDLE" && s["pid"] != pid).then_some(s)
    });
    // A live worker is not started twice.
    let again = team.repo.crew(&["worker", "restart", &victim]);
    assert_eq!(again.code, 3, "{}", again.stderr);
    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(team.state(&victim), "SHUTDOWN", "was {back}");
}
