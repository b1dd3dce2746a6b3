//! The team as a daemon, with real processes: `crew up` starts it detached from the terminal
//! and attaches a screen; the screen can go (detach, a closed terminal) and come back, two can
//! watch at once, `crew down` and the screen's stop end it through the shutdown protocol with
//! its progress shown, and a killed daemon is taken over by the next `crew up`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::pty::{DaemonGuard, Screen};
use crate::support::team::{Team, crew_toml, signal, slow_step_holder, slow_team};
use crew_test_support::wait::eventually;

const COLS: u16 = 260;
/// ctrl-q: detaches from anywhere, the lead's text box included (`q` does elsewhere).
const DETACH: &str = "\x11";
const ROWS: u16 = 50;
/// Generous: teammates are separate processes on a shared, loaded machine.
const LONG: Duration = Duration::from_secs(60);

/// alice asks to `touch asked.txt` in her worktree (test_ask.toml) and the person answers from
/// a screen; the lead answers every message with "Noted: ...".
fn asking_team() -> Team {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"ask\"\nsandbox = \"off\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 300\nheartbeat_secs = 1\nrequest_timeout_secs = 120",
    );
    Team::new(&toml, "test_ask.toml", &[])
}

/// `crew up` in a pseudo-terminal, once the screen shows it is attached to the daemon.
fn up(team: &Team) -> (Screen, DaemonGuard) {
    let guard = DaemonGuard {
        root: team.repo.path().to_path_buf(),
    };
    let screen = attach(team, &["up"]);
    (screen, guard)
}

fn attach(team: &Team, args: &[&str]) -> Screen {
    let mut screen = Screen::start(team.repo.path(), args, COLS, ROWS);
    screen.wait_until("the screen attached to the daemon", LONG, |t| {
        t.contains("daemon ") && t.contains("screen(s)")
    });
    screen
}

fn team_json(team: &Team) -> serde_json::Value {
    team.repo.json(&["status", "--json"])["team"].clone()
}

#[test]
fn a_hung_up_screen_leaves_the_team_working_and_crew_attaches_again() {
    let team = asking_team();
    let (mut screen, guard) = up(&team);
    let daemon = guard.pid().expect("the daemon wrote its pid");
    assert_ne!(daemon, screen.pid(), "the team runs in its own process");
    team.wait_state("alice", "IDLE", LONG);
    // A scripted team says so in the daemon's log.
    let log = std::fs::read_to_string(team.repo.join(".crew/logs/daemon.log")).unwrap();
    assert!(
        log.contains("SIMULATOR: lead, alice played by crew's offline simulator"),
        "{log}"
    );

    screen.hang_up();
    let status = team_json(&team);
    assert_eq!(status["running"], true, "{status}");
    assert_eq!(status["pid"], daemon, "{status}");
    // The lead and alice are still there, and still work: a task given now completes.
    team.wait_state("alice", "IDLE", LONG);
    team.repo.ok(&["task", "add", "touch a file"]);
    let (request_id, _) = team.waiting_request("alice", LONG);
    team.repo
        .ok(&["respond", &request_id, "--as", "user", "approve"]);
    team.wait_task("task_1", "review", LONG);
    team.repo.ok(&["review", "merge", "task_1"]);
    team.wait_task("task_1", "completed", LONG);
    assert!(team.repo.join("asked.txt").exists(), "merged into main");
    // The lead works too: it answers a message sent while no screen is attached.
    team.repo.ok(&[
        "send",
        "--from",
        "user",
        "--to",
        "lead",
        "while you were away",
    ]);
    eventually("no screen attached", LONG, || {
        (team_json(&team)["screens"] == 0).then_some(())
    });

    // `crew` alone attaches again, shows the result and what happened meanwhile.
    let mut again = attach(&team, &[]);
    again.wait_until("the completed task", LONG, |t| t.contains("● task_1"));
    again.wait_until("the lead's answer", LONG, |t| {
        t.contains("Noted: Message from user (message): while you were away")
    });
    again.wait_until("the summary since the last visit", LONG, |t| {
        t.contains("since you were last here") && t.contains("completed: task_1")
    });
    assert_eq!(guard.pid(), Some(daemon), "the same team, not a new one");
    again.keys(DETACH);
    again.wait_exit();
    assert!(
        again
            .text()
            .contains("`crew` attaches again, `crew down` stops it"),
        "{}",
        again.text()
    );
    let down = team.repo.crew(&["down"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(team_json(&team)["running"], false);
}

/// What the person did in one screen: the other shows it within a frame or so.
#[test]
fn two_screens_see_the_same_team_and_an_answer_from_one_leaves_the_other() {
    let team = asking_team();
    let (mut one, _guard) = up(&team);
    let mut two = attach(&team, &["ui"]);
    for screen in [&mut one, &mut two] {
        screen.wait_until("two screens counted", LONG, |t| t.contains("· 2 screen(s)"));
    }
    assert_eq!(team_json(&team)["screens"], 2);

    // What the person types to the lead, and the lead's answer, are in both.
    one.keys("hello from one\r");
    for screen in [&mut one, &mut two] {
        screen.wait_until("what the person typed and the lead's answer", LONG, |t| {
            t.contains("user: Message from user (message): hello from one")
                && t.contains("assistant: Noted: Message from user (message): hello from one")
        });
    }

    team.wait_state("alice", "IDLE", LONG);
    team.repo.ok(&["task", "add", "touch a file"]);
    for screen in [&mut one, &mut two] {
        screen.wait_until("the request", LONG, |t| t.contains("asks for bash"));
    }
    one.keys("\x12");
    one.wait_until("the approvals focused", LONG, |t| {
        t.contains("┃ a  approve")
    });
    one.keys("\x1b[H");
    one.pump(Duration::from_millis(300));
    one.keys("a");
    one.wait_for("(alice told)");
    two.wait_until("the request gone from the other screen", LONG, |t| {
        !t.contains("asks for bash")
    });
    team.wait_task("task_1", "review", LONG);
    one.keys(DETACH);
    one.wait_exit();
    two.keys(DETACH);
    two.wait_exit();
    assert_eq!(team.repo.crew(&["down"]).code, 0);
}

#[test]
fn detaching_is_immediate_while_a_teammate_is_busy() {
    let team = slow_team();
    // Started from another folder: the way back names the team's folder.
    let guard = DaemonGuard {
        root: team.repo.path().to_path_buf(),
    };
    let elsewhere = tempfile::tempdir().unwrap();
    let root = team.repo.path().canonicalize().unwrap();
    let mut screen = Screen::start(
        elsewhere.path(),
        &["-C", root.to_str().unwrap(), "up"],
        COLS,
        ROWS,
    );
    screen.wait_until("the screen attached to the daemon", LONG, |t| {
        t.contains("daemon ") && t.contains("screen(s)")
    });
    team.repo.ok(&["task", "add", "a slow task"]);
    let busy = slow_step_holder(&team, "task_1");
    assert_eq!(team.state(&busy), "WORK");

    screen.keys(DETACH);
    screen.wait_exit();
    let back = format!("`crew -C {}` attaches again", root.display());
    assert!(screen.text().contains(&back), "{}", screen.text());
    // Nothing waited for the team: the slow step (30 s) still runs, on the same task.
    assert_eq!(team.state(&busy), "WORK", "the teammate was left alone");
    let task = team.task("task_1");
    assert_eq!(task["status"], "in_progress", "{task}");
    assert_eq!(task["owner"], busy.as_str(), "{task}");
    assert!(guard.pid().is_some_and(|p| team_json(&team)["pid"] == p));
    // Ended by force here: the slow step is 30 s.
    let down = team.repo.crew(&["down", "--timeout", "1"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
}

#[test]
fn crew_down_shows_who_is_busy_and_ends_within_the_grace_period() {
    let team = slow_team();
    let (mut screen, _guard) = up(&team);
    team.repo.ok(&["task", "add", "a slow task"]);
    let busy = slow_step_holder(&team, "task_1");
    screen.keys(DETACH);
    screen.wait_exit();

    let grace = 4;
    let down = team.repo.crew(&["down", "--timeout", &grace.to_string()]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert!(
        down.stdout
            .contains(&format!("still running: {busy} WORK on task_1")),
        "{}",
        down.stdout
    );
    assert!(down.stdout.contains("left of 4s"), "{}", down.stdout);
    assert!(down.stdout.contains("the team stopped"), "{}", down.stdout);
    // Ended at the grace period's end, not by waiting out the slow step (30 s).
    let ended = team.status(&busy);
    assert_eq!(ended["state"], "DEAD", "{ended}");
    assert_eq!(
        ended["note"],
        format!("did not stop within {grace}s"),
        "{ended}"
    );
    assert_eq!(team.task("task_1")["status"], "pending");
    assert_eq!(team_json(&team)["running"], false);
}

#[test]
fn the_screen_stops_the_team_after_asking_and_shows_the_progress() {
    let team = slow_team();
    let (mut screen, _guard) = up(&team);
    team.repo.ok(&["task", "add", "a slow task"]);
    let busy = slow_step_holder(&team, "task_1");
    // Out of the lead's text box (ctrl-r: to the approvals); Q asks before stopping anything.
    screen.keys("\x12");
    screen.wait_until("the approvals focused", LONG, |t| {
        t.contains("┃nothing waiting for you")
    });
    screen.keys("Q");
    screen.wait_for("Stop the whole team?");
    screen.keys("y");
    screen.wait_until("the progress view", LONG, |t| {
        t.contains("stopping the team") && t.contains(&busy) && t.contains("works on task_1")
    });
    screen.wait_for("left of 15s");
    // Forcing ends it without waiting out the grace period; the screen goes with the team.
    screen.keys("y");
    screen.wait_exit();
    assert_eq!(team_json(&team)["running"], false);
    let ended = team.status(&busy);
    assert_eq!(ended["state"], "DEAD", "{ended}");
    assert_eq!(
        ended["note"], "ended when the person forced the stop",
        "{ended}"
    );
}

#[test]
fn a_second_up_attaches_and_headless_refuses() {
    let team = asking_team();
    let (mut one, guard) = up(&team);
    let daemon = guard.pid().unwrap();

    let headless = team.repo.crew(&["up", "--headless"]);
    assert_eq!(headless.code, 3, "{}", headless.stderr);
    assert!(
        headless.stderr.contains("already runs as a daemon")
            && headless.stderr.contains(&format!("pid {daemon}"))
            && headless
                .stderr
                .contains(&team.repo.path().display().to_string()),
        "{}",
        headless.stderr
    );

    let mut two = attach(&team, &["up"]);
    two.wait_for("· 2 screen(s)");
    assert_eq!(guard.pid(), Some(daemon), "no second team was started");
    let status = team.repo.ok(&["status"]);
    assert!(
        status.contains(&format!("team: running as a daemon (pid {daemon}")),
        "{status}"
    );
    assert!(status.contains("2 screen(s) attached"), "{status}");
    two.keys(DETACH);
    two.wait_exit();
    one.wait_for("· 1 screen(s)");
    one.keys(DETACH);
    one.wait_exit();
    assert_eq!(team.repo.crew(&["down"]).code, 0);
}

#[test]
fn a_killed_daemon_is_taken_over_by_the_next_up() {
    let team = asking_team();
    let (mut screen, guard) = up(&team);
    let old = guard.pid().unwrap();
    let alice = u32::try_from(
        team.wait_state("alice", "IDLE", LONG)["pid"]
            .as_u64()
            .unwrap(),
    )
    .unwrap();
    signal(old, libc::SIGKILL);
    // The screen sees its team gone and ends.
    screen.wait_exit();
    assert_eq!(team_json(&team)["running"], false);

    let mut again = attach(&team, &["up"]);
    let new = guard.pid().unwrap();
    assert_ne!(new, old);
    let log = std::fs::read_to_string(team.repo.join(".crew/logs/daemon.log")).unwrap();
    eventually("alice watched again", LONG, || {
        let log = std::fs::read_to_string(team.repo.join(".crew/logs/daemon.log")).ok()?;
        log.contains(&format!("alice still runs (pid {alice})"))
            .then_some(())
    });
    drop(log);
    // The new team works: alice (the same process) takes a task and asks.
    team.repo.ok(&["task", "add", "touch a file"]);
    let (request_id, _) = team.waiting_request("alice", LONG);
    assert_eq!(team.status("alice")["pid"], alice);
    team.repo
        .ok(&["respond", &request_id, "--as", "user", "approve"]);
    team.wait_task("task_1", "review", LONG);
    again.keys(DETACH);
    again.wait_exit();
    assert_eq!(team.repo.crew(&["down"]).code, 0);
}

/// The parent of process `pid`, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses: state, then the parent's pid.
    stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
}

/// A worker restarted from a terminal while the daemon runs is the daemon's child, in the
/// team's session: closing that terminal does not take it down.
#[test]
fn a_restarted_worker_belongs_to_the_daemon_not_the_terminal() {
    let team = asking_team();
    let (mut screen, guard) = up(&team);
    let daemon = guard.pid().unwrap();
    let first = u32::try_from(
        team.wait_state("alice", "IDLE", LONG)["pid"]
            .as_u64()
            .unwrap(),
    )
    .unwrap();
    signal(first, libc::SIGKILL);
    team.wait_state("alice", "DEAD", LONG);

    let restarted = team.repo.ok(&["worker", "restart", "alice"]);
    assert!(
        restarted.contains("restarted alice in the team"),
        "{restarted}"
    );
    let second = eventually("alice running again", LONG, || {
        let s = team.status("alice");
        let pid = u32::try_from(s["pid"].as_u64()?).ok()?;
        (s["state"] == "IDLE" && pid != first).then_some(pid)
    });
    assert_eq!(parent_of(second), Some(daemon));
    screen.keys(DETACH);
    screen.wait_exit();
    assert_eq!(team.repo.crew(&["down"]).code, 0);
}
