//! `crew demo` with its screen, in a real pseudo-terminal: the person approves every permission
//! request and merges every review from the approvals pane (reached with ctrl-r from the lead's
//! text box), and the scripted team finishes the goal behind the screen.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::pty::{DaemonGuard, Screen};
use crew_test_support::wait::eventually_showing;

/// Generous: the team's workers are separate processes on a shared machine.
const DEMO_TIMEOUT: Duration = Duration::from_secs(120);

const TASKS: usize = 4;

fn done_tasks(text: &str) -> usize {
    text.matches("● task_").count()
}

/// Who asks in the selected request (`▶ NAME asks for ...`) of the approvals pane.
fn selected_asker(text: &str) -> Option<String> {
    text.split("▶ ").skip(1).find_map(|rest| {
        let (name, after) = rest.split_once(' ')?;
        after.starts_with("asks for ").then(|| name.to_string())
    })
}

/// The task of the selected review (`▶ task_N owner ...`) in the review queue.
fn selected_review(text: &str) -> Option<String> {
    text.split("▶ ").skip(1).find_map(|rest| {
        let id = rest.split_once(' ')?.0;
        id.starts_with("task_").then(|| id.to_string())
    })
}

fn task_states(dir: &Path) -> Vec<String> {
    (1..=TASKS)
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(format!(".tasks/task_{n}.json"))).unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v["status"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn the_demo_team_finishes_as_the_person_approves_from_the_screen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let mut screen = Screen::start(
        tmp.path(),
        &["demo", "--dir", dir.to_str().unwrap()],
        160,
        45,
    );
    let _daemon = DaemonGuard { root: dir.clone() };
    screen.wait_until("a permission request", DEMO_TIMEOUT, |t| {
        t.contains("asks for bash")
    });
    // One key from the lead's text box to the approvals and the review queue.
    screen.keys("\x12");
    screen.wait_for("approvals · ? help");
    let (mut approved, mut merged) = (Vec::new(), Vec::new());
    eventually_showing("every task done", 3 * DEMO_TIMEOUT, || {
        if done_tasks(&screen.text()) == TASKS {
            return Ok(());
        }
        // Home selects the first entry: a request while any waits, else the oldest review.
        // What is on the screen is only read after the redraw the key causes.
        screen.keys("\x1b[H");
        screen.pump(Duration::from_millis(300));
        screen.wait_until(
            "a request, a review or every task done",
            DEMO_TIMEOUT,
            |t| {
                selected_asker(t).is_some()
                    || selected_review(t).is_some()
                    || done_tasks(t) == TASKS
            },
        );
        let text = screen.text();
        if let Some(name) = selected_asker(&text) {
            screen.keys("a");
            screen.wait_for(&format!("({name} told)"));
            // The worker goes on: its badge leaves WAITING.
            let waiting = format!(" {name}  ! WAITING");
            screen.wait_until(&format!("{name} working again"), DEMO_TIMEOUT, |t| {
                !t.contains(&waiting)
            });
            // As for reviews: until the list is read again, the answered request may still be
            // the selected one.
            screen.wait_until(
                &format!("{name}'s request gone from approvals"),
                DEMO_TIMEOUT,
                |t| selected_asker(t).as_deref() != Some(name.as_str()),
            );
            approved.push(name);
        } else if let Some(task) = selected_review(&text) {
            // The docs task may only start once both implementations are merged.
            if task == "task_3" {
                assert_eq!(&task_states(&dir)[..2], ["completed", "completed"]);
            }
            screen.keys("M");
            // The status line says so (the lead's inbox in the mailboxes pane says it too).
            let said = format!("{task} merged into main");
            screen.wait_until(&said, DEMO_TIMEOUT, |t| {
                t.lines().last().is_some_and(|l| l.contains(&said))
            });
            // The queue is worked out again off the screen's thread: until it is, the merged
            // task may still be shown selected, and a second `M` would be refused.
            screen.wait_until(&format!("{task} gone from the queue"), DEMO_TIMEOUT, |t| {
                selected_review(t).as_deref() != Some(task.as_str())
            });
            merged.push(task);
        }
        Err(screen.text())
    });
    assert_eq!(approved.len(), 3, "alice, bob and carol each ask once");
    merged.sort();
    assert_eq!(
        merged,
        ["task_1", "task_2", "task_3"],
        "the person merged every change"
    );
    assert!(screen.text().contains("approvals (0) · reviews (0)"));
    assert_eq!(task_states(&dir), vec!["completed"; TASKS]);
    // `q` detaches: the team keeps running until it is stopped.
    screen.keys("q");
    screen.wait_exit();
    screen.assert_restored();
    let down = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["-C", dir.to_str().unwrap(), "down"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&down.stdout);
    assert!(down.status.success(), "{said}");
    assert!(said.contains("the team stopped"), "{said}");
    let tests = Command::new("sh")
        .arg("test.sh")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        tests.status.success(),
        "{}",
        String::from_utf8_lossy(&tests.stdout)
    );
}
