//! The built `crew ui` in a real pseudo-terminal (portable-pty), its screen read back with
//! vt100. Every wait polls the screen or the store with a timeout; nothing sleeps blindly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crate::support::Repo;
use crate::support::pty::Screen;
use crew_test_support::wait::poll;

#[test]
fn a_request_from_another_process_is_approved_from_the_screen() {
    let repo = Repo::init();
    let mut screen = Screen::start(repo.path(), &["ui"], 120, 40);
    screen.wait_for("approvals (0)");
    let id = repo.ok(&[
        "send",
        "--from",
        "alice",
        "--to",
        "user",
        "--type",
        "permission_request",
        "--request",
        "run the tests",
    ]);
    let id = id.trim().to_string();
    screen.wait_for("alice asks for permission");
    screen.wait_for(&id);
    // Leave the lead's text box, focus approvals, approve.
    screen.keys("\t");
    screen.wait_for("teammates · ? help");
    screen.keys("5");
    screen.wait_for("approvals · ? help");
    screen.keys("a");
    let answer = poll("the answer in alice's inbox", || {
        let json = repo.ok(&["requests", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["request_id"] == id.as_str() && r["state"] == "approved")
            .cloned()
    });
    assert_eq!(answer["answered_by"], "user");
    screen.wait_for("approvals (0)");
    screen.keys("q");
    screen.wait_exit();
    screen.assert_restored();
}

#[test]
fn a_task_added_elsewhere_shows_at_80x24_with_the_vim_keymap() {
    let repo = Repo::init();
    let mut screen = Screen::start(
        repo.path(),
        &["ui", "--keymap", "vim", "--theme", "light"],
        80,
        24,
    );
    screen.wait_for("1 lead");
    screen.keys("\t");
    screen.wait_for("teammates · ? help");
    screen.keys("3");
    screen.wait_for("no tasks yet");
    repo.ok(&["task", "add", "write the docs"]);
    screen.wait_for("task_1 write the docs");
    screen.keys("?");
    screen.wait_for("go to the top");
    screen.keys("?");
    screen.wait_for("tasks · ? help");
    screen.keys("\u{3}");
    screen.wait_exit();
    screen.assert_restored();
}
