//! `crew demo` with its screen, in a real pseudo-terminal: the person approves every permission
//! request from the approvals pane and the scripted team finishes the goal behind the screen.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod pty_support;

use pty_support::Screen;

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
    screen.wait_until("a permission request", DEMO_TIMEOUT, |t| {
        t.contains("asks for bash")
    });
    // Leave the lead's text box, focus approvals.
    screen.keys("\t");
    screen.wait_for("teammates · ? help");
    screen.keys("5");
    screen.wait_for("approvals · ? help");
    let mut approved = Vec::new();
    while done_tasks(&screen.text()) < TASKS {
        screen.wait_until("a request or every task done", DEMO_TIMEOUT, |t| {
            selected_asker(t).is_some() || done_tasks(t) == TASKS
        });
        let Some(name) = selected_asker(&screen.text()) else {
            break;
        };
        screen.keys("a");
        screen.wait_for(&format!("({name} told)"));
        // The worker goes on: its badge leaves WAITING.
        let waiting = format!(" {name}  ! WAITING");
        screen.wait_until(&format!("{name} working again"), DEMO_TIMEOUT, |t| {
            !t.contains(&waiting)
        });
        approved.push(name);
    }
    assert_eq!(approved.len(), 3, "alice, bob and carol each ask once");
    assert!(screen.text().contains("approvals (0)"));
    assert_eq!(task_states(&dir), vec!["completed"; TASKS]);
    screen.keys("q");
    screen.wait_exit();
    screen.assert_restored();
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
