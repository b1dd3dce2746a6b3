//! Claude Code's own agent teams under crew: `crew claude setup` writes this repository's
//! `.claude/settings.local.json` (and `--undo` puts it back), and the launcher it names in
//! `CLAUDE_CODE_TEAMMATE_COMMAND` is run here exactly as the recorded Claude Code 2.1.197 lead
//! runs it (`tests/fixtures/claude-team/teams-tmux/teammate-shim.log`: its arguments and
//! environment). The real `claude` cannot run here (no network, no account), so a scripted
//! stand-in on PATH answers `--version` and logs what it was started with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{Repo, Run};
use crew_test_support::git::git_cli;

const TEAM: &str = "session-dd379740";
const LEAD_SESSION: &str = "dd379740-b5fa-4cdf-85c2-79d5c9d1275d";

/// worker1's arguments as the recorded lead launched it.
fn recorded_args() -> Vec<String> {
    let log = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-team/teams-tmux/teammate-shim.log"),
    )
    .unwrap();
    log.split("=== ")
        .nth(1)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("ARG: "))
        .map(str::to_string)
        .collect()
}

/// A Claude Code home with the team's folder and the lead's session file at `lead_version`.
fn claude_home(dir: &Path, lead_version: &str) -> PathBuf {
    let home = dir.join("home/.claude");
    fs::create_dir_all(home.join("teams").join(TEAM).join("inboxes")).unwrap();
    fs::create_dir_all(home.join("sessions")).unwrap();
    fs::write(
        home.join("teams").join(TEAM).join("config.json"),
        json!({"name": TEAM, "leadAgentId": format!("team-lead@{TEAM}"),
               "leadSessionId": LEAD_SESSION, "members": []})
        .to_string(),
    )
    .unwrap();
    fs::write(
        home.join("sessions/4242.json"),
        json!({"pid": 4242, "sessionId": LEAD_SESSION, "version": lead_version,
               "kind": "interactive"})
        .to_string(),
    )
    .unwrap();
    home
}

/// A stand-in `claude` at `version`: logs its parent's pid, its folder, two variables and its
/// arguments, writes `made-by-teammate.txt` where it runs, exits 7.
fn stand_in(dir: &Path, version: &str) -> PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let path = bin.join("claude");
    fs::write(
        &path,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version} (Claude Code)'; exit 0; fi\n\
             echo made > made-by-teammate.txt\n{{ echo \"ppid=$PPID\"; echo \"cwd=$PWD\"; echo \"key=$ANTHROPIC_API_KEY\"; echo \"teams=$CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS\"; \
             for a in \"$@\"; do echo \"ARG: $a\"; done; }} > \"{}\"\nexit 7\n",
            dir.join("claude-ran.log").display()
        ),
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// The launcher named in the settings, run as the lead runs a teammate (with `$$` echoed
/// first by `sh`, so the test knows the pid the lead sees).
fn launch(launcher: &str, dir: &Path, home: &Path, bin: &Path, args: &[String]) -> (Run, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg("echo \"pid=$$\" >&2; exec \"$0\" \"$@\"")
        .arg(launcher)
        .args(args)
        .current_dir(dir)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("CLAUDE_CONFIG_DIR", home)
        .env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "1")
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", launcher)
        .env("ANTHROPIC_API_KEY", "sk-test-teammate")
        .output()
        .unwrap();
    let run = Run::from(out);
    let pid = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .unwrap()
        .to_string();
    (run, pid)
}

fn settings(repo: &Repo) -> Value {
    serde_json::from_slice(&fs::read(repo.join(".claude/settings.local.json")).unwrap()).unwrap()
}

fn lead_inbox(home: &Path) -> Vec<Value> {
    let path = home.join("teams").join(TEAM).join("inboxes/team-lead.json");
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// `git ARGS` in `repo`; its stdout.
fn git(repo: &Repo, args: &[&str]) -> String {
    git_cli(Path::new("git"), repo.path(), args)
}

#[test]
fn setup_launches_each_teammate_in_its_own_worktree_and_undo_puts_everything_back() {
    let repo = Repo::git();
    // A lead's repository has a commit to branch from.
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "init"]);
    let out = repo.ok(&["claude", "setup"]);
    assert!(
        out.contains("teammateMode: set to \"tmux\" (was unset)"),
        "{out}"
    );
    assert!(
        out.contains("env.CLAUDE_CODE_TEAMMATE_COMMAND: set to"),
        "{out}"
    );
    let launcher = settings(&repo)["env"]["CLAUDE_CODE_TEAMMATE_COMMAND"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(Path::new(&launcher), repo.join(".crew/bin/cc-teammate"));
    assert!(
        repo.ok(&["claude", "setup"])
            .contains("already set up; nothing changed")
    );

    let scratch = tempfile::tempdir().unwrap();
    let home = claude_home(scratch.path(), "2.1.197");
    let bin = stand_in(scratch.path(), "2.1.197");
    let args = recorded_args();
    let (run, pid) = launch(&launcher, repo.path(), &home, &bin, &args);
    // crew ends as the teammate's `claude` did: the lead sees its teammate stop as it would.
    assert_eq!(run.code, 7, "{}", run.stderr);
    let worktree = repo.join(".worktrees/worker1");
    assert!(
        run.stderr.contains(&format!(
            "worker1 of team session-dd379740 runs Claude Code 2.1.197 in {} (branch crew/worker1)",
            worktree.display()
        )),
        "{}",
        run.stderr
    );
    let ran = fs::read_to_string(scratch.path().join("claude-ran.log")).unwrap();
    let mut lines = ran.lines();
    // The pane's process (crew) is the parent of the teammate's `claude`.
    assert_eq!(lines.next(), Some(format!("ppid={pid}").as_str()));
    assert_eq!(
        lines.next(),
        Some(format!("cwd={}", worktree.canonicalize().unwrap().display()).as_str())
    );
    // The key reaches Claude Code (crew seals keys away from its own processes only).
    assert_eq!(lines.next(), Some("key=sk-test-teammate"));
    assert_eq!(lines.next(), Some("teams=1"));
    let passed: Vec<&str> = lines.filter_map(|l| l.strip_prefix("ARG: ")).collect();
    assert_eq!(passed, args.iter().map(String::as_str).collect::<Vec<_>>());

    // Its work is not in the lead's checkout: it is a commit on its branch, kept and said.
    assert!(!repo.join("made-by-teammate.txt").exists());
    assert_eq!(
        git(&repo, &["show", "crew/worker1:made-by-teammate.txt"]),
        "made\n"
    );
    assert!(
        git(&repo, &["log", "-1", "--format=%s", "crew/worker1"])
            .starts_with("worker1: work of Claude Code teammate worker1@session-dd379740")
    );
    assert!(
        run.stderr.contains("worker1's work is kept as commit"),
        "{}",
        run.stderr
    );
    let told = lead_inbox(&home);
    assert_eq!(told.len(), 1);
    assert_eq!(told[0]["from"], "worker1");
    assert!(
        told[0]["text"]
            .as_str()
            .unwrap()
            .contains("on branch crew/worker1")
    );
    let log = fs::read_to_string(repo.join(".crew/logs/cc-teammates.log")).unwrap();
    assert!(log.contains("worker1's work is kept as commit"), "{log}");
    let status = git(&repo, &["status", "--porcelain"]);
    assert!(
        !status.contains(".worktrees") && !status.contains(".crew"),
        "the worktrees stay out of git status: {status}"
    );

    // Arguments of a later Claude Code are shown and passed on, never fatal; a second run of
    // the same teammate goes on in its worktree.
    let mut more = args.clone();
    more.extend(["--effort".to_string(), "high".to_string()]);
    let (run, _) = launch(&launcher, repo.path(), &home, &bin, &more);
    assert_eq!(run.code, 7);
    assert!(
        run.stderr
            .contains("arguments crew does not know, passed on: --effort high")
    );
    assert!(
        run.stderr.contains("worker1 left nothing uncommitted"),
        "{}",
        run.stderr
    );
    let ran = fs::read_to_string(scratch.path().join("claude-ran.log")).unwrap();
    assert!(ran.ends_with("ARG: --effort\nARG: high\n"), "{ran}");

    // Outside a repository the teammate runs in the lead's folder, as Claude Code would run it.
    let elsewhere = tempfile::tempdir().unwrap();
    let (run, _) = launch(&launcher, elsewhere.path(), &home, &bin, &args);
    assert_eq!(run.code, 7);
    assert!(
        run.stderr
            .contains("in the lead's folder (no worktree of its own"),
        "{}",
        run.stderr
    );
    assert!(elsewhere.path().join("made-by-teammate.txt").exists());

    let out = repo.ok(&["claude", "setup", "--undo"]);
    assert!(
        out.contains("teammateMode: put back to unset (was \"tmux\")"),
        "{out}"
    );
    assert!(!repo.join(".claude/settings.local.json").exists());
    assert!(!Path::new(&launcher).exists());
    assert!(!repo.join(".crew/claude-teams-setup.json").exists());
}

#[test]
fn a_version_crew_has_not_recorded_is_refused_naming_it_to_the_lead_too() {
    let repo = Repo::git();
    repo.ok(&["claude", "setup"]);
    let launcher = repo.join(".crew/bin/cc-teammate").display().to_string();
    let args = recorded_args();

    // The `claude` that would run the teammate.
    let scratch = tempfile::tempdir().unwrap();
    let home = claude_home(scratch.path(), "2.1.197");
    let bin = stand_in(scratch.path(), "2.2.0");
    let (run, _) = launch(&launcher, repo.path(), &home, &bin, &args);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("Claude Code 2.2.0"), "{}", run.stderr);
    assert!(!scratch.path().join("claude-ran.log").exists());
    let inbox = lead_inbox(&home);
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0]["from"], "worker1");
    let text = inbox[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("crew did not start teammate worker1: Claude Code 2.2.0"),
        "{text}"
    );
    assert!(text.contains("crew knows 2.1.197"), "{text}");

    // The lead's own version, from its session file.
    let scratch = tempfile::tempdir().unwrap();
    let home = claude_home(scratch.path(), "2.3.1");
    let bin = stand_in(scratch.path(), "2.1.197");
    let (run, _) = launch(&launcher, repo.path(), &home, &bin, &args);
    assert_eq!(run.code, 3);
    assert!(
        run.stderr
            .contains("Claude Code 2.3.1 (the lead's session file)"),
        "{}",
        run.stderr
    );
    assert!(!scratch.path().join("claude-ran.log").exists());

    // The lead exited (its team folder is gone): still refused, and said that nobody was told.
    fs::remove_dir_all(home.join("teams").join(TEAM)).unwrap();
    let (run, _) = launch(&launcher, repo.path(), &home, &bin, &args);
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("has no folder"), "{}", run.stderr);

    // A launch that is not Claude Code's is refused naming the flag.
    let (run, _) = launch(&launcher, repo.path(), &home, &bin, &args[2..]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("without `--agent-id`"),
        "{}",
        run.stderr
    );
}

#[test]
fn setup_outside_a_repository_or_on_broken_settings_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run: Run = Command::new(crate::support::crew_exe())
        .args(["claude", "setup"])
        .current_dir(dir.path())
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("not inside a git repository"),
        "{}",
        run.stderr
    );

    let repo = Repo::git();
    fs::create_dir_all(repo.join(".claude")).unwrap();
    fs::write(repo.join(".claude/settings.local.json"), "{oops").unwrap();
    let run = repo.crew(&["claude", "setup"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("settings.local.json: not JSON"),
        "{}",
        run.stderr
    );
    assert!(!repo.join(".crew/bin/cc-teammate").exists());
    let run = repo.crew(&["claude", "setup", "--undo"]);
    assert!(run.stderr.contains("nothing to undo"), "{}", run.stderr);
}
