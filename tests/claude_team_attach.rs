//! `crew attach claude`: a Claude Code agent team's files, replayed version by version from the
//! recording (`tests/fixtures/claude-team/`, Claude Code 2.1.197) into a temporary home, kept in
//! crew's own log and shown on the workbench; a teammate's permission request answered from
//! the approvals pane reaches its inbox in the format Claude Code wrote; broken files are shown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crew_team::claude_team::{self, Mirror};
use crew_test_support::wait::poll;
use crew_tui::Pane;
use crew_tui_test_support::{Harness, screen_text};
use serde_json::Value;

const TEAM: &str = "session-ef9e4dc5";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-team")
}

/// Every recorded version, in the order they appeared: (seconds, path under the team folder).
fn versions() -> Vec<(f64, PathBuf)> {
    let dir = fixtures().join("versions/teams").join(TEAM);
    let mut out = Vec::new();
    for sub in ["", "inboxes"] {
        for entry in fs::read_dir(dir.join(sub)).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some((file, at)) = name.rsplit_once('@') else {
                continue;
            };
            let secs: f64 = at.trim_end_matches('s').parse().unwrap();
            out.push((secs, Path::new(sub).join(file)));
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

fn version_file(secs: f64, rel: &Path) -> PathBuf {
    let name = format!(
        "{}@{secs:07.3}s",
        rel.file_name().unwrap().to_string_lossy()
    );
    fixtures()
        .join("versions/teams")
        .join(TEAM)
        .join(rel.parent().unwrap())
        .join(name)
}

/// A temporary HOME holding the team's tasks (their last version) and nothing else yet.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let tasks = dir.path().join(".claude/tasks").join(TEAM);
        fs::create_dir_all(&tasks).unwrap();
        for entry in fs::read_dir(fixtures().join("dot-claude/tasks").join(TEAM)).unwrap() {
            let entry = entry.unwrap();
            fs::copy(entry.path(), tasks.join(entry.file_name())).unwrap();
        }
        fs::create_dir_all(dir.path().join(".claude/teams").join(TEAM).join("inboxes")).unwrap();
        Home { dir }
    }

    fn claude(&self) -> PathBuf {
        self.dir.path().join(".claude")
    }

    fn team(&self) -> PathBuf {
        self.claude().join("teams").join(TEAM)
    }

    fn mirror(&self) -> Mirror {
        Mirror::open(&self.claude(), TEAM, &self.dir.path().join("crew-data")).unwrap()
    }

    /// Writes one recorded version where Claude Code wrote it: a temporary file is renamed
    /// over its inbox by the next version of that inbox.
    fn put(&self, secs: f64, rel: &Path) {
        let target = self.team().join(rel);
        let name = rel.file_name().unwrap().to_string_lossy().to_string();
        if !name.contains(".tmp.") {
            let stem = name.clone();
            for entry in fs::read_dir(target.parent().unwrap()).unwrap().flatten() {
                let other = entry.file_name().to_string_lossy().to_string();
                if other.starts_with(&format!("{stem}.tmp.")) {
                    fs::remove_file(entry.path()).unwrap();
                }
            }
        }
        fs::copy(version_file(secs, rel), target).unwrap();
    }
}

/// The msg_id of every message in every recorded inbox version.
fn recorded_ids() -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for (secs, rel) in versions() {
        if !rel.starts_with("inboxes") {
            continue;
        }
        let text = fs::read_to_string(version_file(secs, &rel)).unwrap();
        let Ok(Value::Array(messages)) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        for m in messages {
            ids.insert(m["msg_id"].as_str().unwrap().to_string());
        }
    }
    ids
}

/// crew's log: every message in the mirror's inboxes.
fn logged(root: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for entry in fs::read_dir(root.join(".mailboxes")).unwrap().flatten() {
        if entry.path().extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let text = fs::read_to_string(entry.path()).unwrap();
        out.extend(
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
    }
    out
}

#[test]
fn every_recorded_version_replayed_keeps_every_message_in_crews_log_and_shows_the_team() {
    let home = Home::new();
    let mut mirror = home.mirror();
    for (secs, rel) in versions() {
        home.put(secs, &rel);
        mirror.sync().unwrap();
    }
    let root = mirror.root().to_path_buf();
    let kept: BTreeSet<String> = logged(&root)
        .iter()
        .filter_map(|m| m["claude_key"].as_str().map(str::to_string))
        .collect();
    let recorded = recorded_ids();
    assert!(recorded.len() >= 10, "{recorded:?}");
    assert_eq!(
        kept, recorded,
        "every message ever in an inbox is in crew's log, once"
    );
    let log = logged(&root);
    assert_eq!(log.len(), recorded.len());

    // The permission request and the lead's answer, as crew sees them.
    let request = log
        .iter()
        .find(|m| m["type"] == "permission_request")
        .unwrap();
    assert_eq!(request["from"], "worker1");
    assert_eq!(request["tool"], "Bash");
    assert_eq!(
        request["input"]["command"],
        "date > /home/dev/project/worker1.txt"
    );
    let answer = log
        .iter()
        .find(|m| m["type"] == "permission_response")
        .unwrap();
    assert_eq!(answer["approve"], true);
    assert_eq!(answer["request_id"], request["request_id"]);

    let mut h = Harness::new(&root);
    h.state.now = humantime::parse_rfc3339("2026-12-01T10:47:00Z").unwrap();
    h.state.attached = Some(format!("Claude Code version unknown team {TEAM}"));
    h.reload();
    let screen = screen_text(&mut h.state, 140, 40);
    insta::assert_snapshot!("attached_claude_team", screen);
    for pane in [Pane::Tasks, Pane::Mailboxes, Pane::Approvals] {
        h.state.focus = pane;
        insta::assert_snapshot!(
            format!("attached_claude_team_{}", pane.title()),
            screen_text(&mut h.state, 120, 30)
        );
    }
}

#[test]
fn a_request_answered_from_the_approvals_pane_reaches_the_teammates_inbox_as_claude_code_wrote_it()
{
    let home = Home::new();
    let mut mirror = home.mirror();
    // Up to the request, before the lead answered it.
    let recorded_answer_at = 7.254;
    for (secs, rel) in versions().into_iter().filter(|(s, _)| *s < 7.0) {
        home.put(secs, &rel);
        mirror.sync().unwrap();
    }
    let root = mirror.root().to_path_buf();
    let mut h = Harness::new(&root);
    h.state.now = humantime::parse_rfc3339("2026-12-01T10:47:00Z").unwrap();
    h.state.attached = Some(format!("Claude Code version unknown team {TEAM}"));
    h.reload();
    assert_eq!(
        h.state.workspace.pending().len(),
        1,
        "the request waits for the person"
    );
    h.state.focus = Pane::Approvals;
    insta::assert_snapshot!(
        "attached_claude_team_request_pending",
        screen_text(&mut h.state, 120, 30)
    );
    h.press(&["a"]);
    assert!(h.status().contains("approved"), "{}", h.status());
    mirror.sync().unwrap();

    let inbox = home.team().join("inboxes/worker1.json");
    let messages: Vec<Value> = serde_json::from_slice(&fs::read(&inbox).unwrap()).unwrap();
    let ours = messages.last().unwrap();
    let recorded: Vec<Value> = serde_json::from_slice(
        &fs::read(version_file(
            recorded_answer_at,
            Path::new("inboxes/worker1.json"),
        ))
        .unwrap(),
    )
    .unwrap();
    let theirs = &recorded[0];
    let keys = |v: &Value| {
        v.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(keys(ours), keys(theirs), "{ours}");
    assert_eq!(ours["from"], theirs["from"]);
    assert_eq!(ours["type"], "message");
    let said: Value = serde_json::from_str(ours["text"].as_str().unwrap()).unwrap();
    let recorded_said: Value = serde_json::from_str(theirs["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        said, recorded_said,
        "the permission_response Claude Code expects"
    );
    assert!(!home.team().join("inboxes/worker1.json.lock").exists());

    // Forwarded once: syncing again, or a new mirror over the same log, writes nothing more.
    mirror.sync().unwrap();
    let mut again = home.mirror();
    again.sync().unwrap();
    let after: Vec<Value> = serde_json::from_slice(&fs::read(&inbox).unwrap()).unwrap();
    assert_eq!(after.len(), messages.len());
}

#[test]
fn a_denial_is_written_as_an_error_response() {
    let home = Home::new();
    let mut mirror = home.mirror();
    for (secs, rel) in versions().into_iter().filter(|(s, _)| *s < 7.0) {
        home.put(secs, &rel);
        mirror.sync().unwrap();
    }
    let mut h = Harness::new(mirror.root());
    h.state.now = humantime::parse_rfc3339("2026-12-01T10:47:00Z").unwrap();
    h.reload();
    h.state.focus = Pane::Approvals;
    h.press(&["d", "enter"]);
    mirror.sync().unwrap();
    let messages: Vec<Value> =
        serde_json::from_slice(&fs::read(home.team().join("inboxes/worker1.json")).unwrap())
            .unwrap();
    let said: Value =
        serde_json::from_str(messages.last().unwrap()["text"].as_str().unwrap()).unwrap();
    assert_eq!(said["type"], "permission_response");
    assert_eq!(said["subtype"], "error");
    assert_eq!(said["request_id"], "perm-1796122013107-zbh94v2");
}

#[test]
fn malformed_and_unknown_files_are_shown_never_fatal() {
    let home = Home::new();
    let team = home.team();
    fs::write(team.join("config.json"), "{ not json").unwrap();
    fs::write(team.join("inboxes/worker1.json"), "[{\"from\": 3}]").unwrap();
    fs::write(
        team.join("inboxes/team-lead.json"),
        r#"[{"from":"worker9","text":"{\"type\":\"telepathy_request\",\"depth\":3}","timestamp":"2026-12-01T10:46:55.409Z","msg_id":"m1","msgV":7,"mood":"new"}]"#,
    )
    .unwrap();
    let tasks = home.claude().join("tasks").join(TEAM);
    fs::write(tasks.join("9.json"), "not a task").unwrap();
    fs::write(
        tasks.join("4.json"),
        r#"{"id":"4","subject":"Dream","status":"dreaming","blockedBy":["1"],"novel":1}"#,
    )
    .unwrap();
    let mut mirror = home.mirror();
    mirror.sync().unwrap();
    mirror.sync().unwrap();
    let root = mirror.root().to_path_buf();
    let log = logged(&root);
    let unreadable: Vec<&str> = log
        .iter()
        .filter(|m| m["type"] == "unreadable")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(unreadable.len(), 3, "each said once: {unreadable:?}");
    assert!(unreadable.iter().any(|t| t.contains("config.json")));
    assert!(unreadable.iter().any(|t| t.contains("worker1.json")));
    assert!(unreadable.iter().any(|t| t.contains("9.json")));
    let odd = log
        .iter()
        .find(|m| m["type"] == "telepathy_request")
        .unwrap();
    assert_eq!(odd["mood"], "new", "unknown fields kept: {odd}");
    assert!(odd["text"].as_str().unwrap().contains("\"depth\":3"));
    let task: Value =
        serde_json::from_slice(&fs::read(root.join(".tasks/task_4.json")).unwrap()).unwrap();
    assert_eq!(task["status"], "pending");
    assert!(task["notes"][0].as_str().unwrap().contains("dreaming"));
    assert_eq!(task["novel"], 1);

    let mut h = Harness::new(&root);
    h.state.focus = Pane::Mailboxes;
    let screen = screen_text(&mut h.state, 120, 30);
    assert!(screen.contains("crew unreadable"), "{screen}");
    assert!(screen.contains("telepathy_request"), "{screen}");
}

#[test]
fn the_team_is_the_only_one_a_named_one_or_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let err = claude_team::choose_team(home.path(), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no Claude Code agent teams"), "{err}");
    fs::create_dir_all(home.path().join("teams/alpha")).unwrap();
    assert_eq!(
        claude_team::choose_team(home.path(), None).unwrap(),
        "alpha"
    );
    fs::create_dir_all(home.path().join("teams/beta")).unwrap();
    let err = claude_team::choose_team(home.path(), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("alpha") && err.contains("beta"), "{err}");
    assert_eq!(
        claude_team::choose_team(home.path(), Some("beta")).unwrap(),
        "beta"
    );
    let err = claude_team::choose_team(home.path(), Some("gamma"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("gamma") && err.contains("alpha, beta"),
        "{err}"
    );
    let err = claude_team::choose_team(home.path(), Some("../x"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a folder name"), "{err}");
}

#[test]
fn the_watcher_captures_a_message_its_reader_deletes_at_once() {
    let home = Home::new();
    home.put(1.030, Path::new("config.json"));
    let mirror = home.mirror();
    let root = mirror.root().to_path_buf();
    let _watcher = mirror.watch().unwrap();
    let inbox = home.team().join("inboxes/worker1.json");
    let version = fs::read(version_file(3.681, Path::new("inboxes/worker1.json"))).unwrap();
    fs::write(&inbox, &version).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    fs::write(&inbox, "[]").unwrap();
    poll("the message in crew's log", || {
        (root.join(".mailboxes").is_dir() && !logged(&root).is_empty()).then_some(())
    });
}

#[test]
fn crew_attach_claude_in_a_terminal_shows_the_version_refuses_to_send_and_answers_a_request() {
    let home = Home::new();
    home.put(3.559, Path::new("config.json"));
    let sessions = home.claude().join("sessions");
    fs::create_dir_all(&sessions).unwrap();
    fs::write(
        sessions.join("4242.json"),
        r#"{"pid":4242,"sessionId":"ef9e4dc5-5452-4f7c-bc4d-b17a26dfb2ec","version":"2.1.197","kind":"interactive"}"#,
    )
    .unwrap();
    let data = home.dir.path().join("data");
    let mut screen = crate::support::pty::Screen::start_with_env(
        home.dir.path(),
        &["attach", "claude"],
        &[("HOME", home.dir.path()), ("XDG_DATA_HOME", &data)],
        140,
        40,
    );
    screen.wait_for("Claude Code 2.1.197 team session-ef9e4dc5");
    screen.keys("hello lead\r");
    screen.wait_for("read-only");

    // The request arrives and its reader takes it away 20 ms later.
    let inbox = home.team().join("inboxes/team-lead.json");
    fs::copy(
        version_file(5.809, Path::new("inboxes/team-lead.json")),
        &inbox,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    fs::write(&inbox, "[]").unwrap();
    screen.wait_for("worker1 asks for Bash");
    screen.keys("\t");
    screen.keys("5");
    screen.wait_for("┏ approvals");
    screen.keys("a");
    let said = poll("the answer in worker1's inbox", || {
        let bytes = fs::read(home.team().join("inboxes/worker1.json")).ok()?;
        let messages: Vec<Value> = serde_json::from_slice(&bytes).ok()?;
        let text = messages.last()?["text"].as_str()?.to_string();
        serde_json::from_str::<Value>(&text).ok()
    });
    assert_eq!(said["type"], "permission_response");
    assert_eq!(said["subtype"], "success");
    assert_eq!(said["request_id"], "perm-1796122013107-zbh94v2");
    screen.keys("q");
    screen.wait_exit();
    screen.assert_restored();
    let log = data
        .join("crew/claude-code")
        .join(TEAM)
        .join(".mailboxes/team-lead.jsonl");
    assert!(
        fs::read_to_string(log)
            .unwrap()
            .contains("permission_request")
    );
}
