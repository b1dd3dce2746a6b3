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
        .env("XDG_DATA_HOME", data_home(home))
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

/// Where crew keeps its workspaces for Claude Code teams in these tests (beside the home).
fn data_home(claude_home: &Path) -> PathBuf {
    claude_home.parent().unwrap().join("data")
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
    assert_eq!(
        passed[..args.len()],
        args.iter().map(String::as_str).collect::<Vec<_>>()
    );
    // ... and crew's hook for its tool calls (see the test below), with only the person's own
    // settings besides: none the teammate could write in its worktree to switch the hook off.
    assert_eq!(
        passed[args.len()..args.len() + 3],
        ["--setting-sources", "user", "--settings"]
    );
    assert_eq!(passed.len(), args.len() + 4);

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
    assert!(
        ran.contains(
            "ARG: --effort\nARG: high\nARG: --setting-sources\nARG: user\nARG: --settings\n"
        ),
        "{ran}"
    );

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

/// The hook crew gave the teammate's `claude` (`--settings`), as the stand-in was started.
fn hook_command(ran: &str) -> String {
    let args: Vec<&str> = ran
        .lines()
        .filter_map(|l| l.strip_prefix("ARG: "))
        .collect();
    let at = args.iter().position(|a| *a == "--settings").unwrap();
    let settings: Value = serde_json::from_str(args[at + 1]).unwrap();
    let hook = &settings["hooks"]["PreToolUse"][0];
    assert_eq!(hook["matcher"], "*");
    // The same command is told what each call gave.
    let after = &settings["hooks"]["PostToolUse"][0];
    assert_eq!(after["matcher"], "*");
    assert_eq!(after["hooks"][0]["command"], hook["hooks"][0]["command"]);
    hook["hooks"][0]["command"].as_str().unwrap().to_string()
}

/// One tool call through the hook, as Claude Code runs it (`sh -c`, the call on stdin).
fn call_hook(command: &str, home: &Path, call: Value) -> std::process::Child {
    let input = json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_use_id": "toolu_1",
                       "tool_name": call["tool"], "tool_input": call["input"]});
    run_hook(command, home, &input)
}

/// The hook run on `input`, Claude Code's whole hook input.
fn run_hook(command: &str, home: &Path, input: &Value) -> std::process::Child {
    use std::io::Write;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("CLAUDE_CONFIG_DIR", home)
        .env("XDG_DATA_HOME", data_home(home))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    child
}

/// The hook's `hookSpecificOutput` (`None`: it left the call to Claude Code).
fn hook_output(child: std::process::Child) -> Option<Value> {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    if text.trim().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    let o = v["hookSpecificOutput"].clone();
    assert_eq!(o["hookEventName"], "PreToolUse");
    Some(o)
}

/// The hook's decision and reason (`None`: it left the call to Claude Code).
fn decision(child: std::process::Child) -> Option<(String, String)> {
    hook_output(child).map(|o| {
        (
            o["permissionDecision"].as_str().unwrap().to_string(),
            o["permissionDecisionReason"].as_str().unwrap().to_string(),
        )
    })
}

fn task_file(home: &Path, id: &str) -> PathBuf {
    home.join("tasks").join(TEAM).join(format!("{id}.json"))
}

fn write_task(home: &Path, id: &str, subject: &str) {
    fs::create_dir_all(home.join("tasks").join(TEAM)).unwrap();
    fs::write(
        task_file(home, id),
        json!({"id": id, "subject": subject, "description": "", "status": "in_progress",
               "owner": "worker1", "blocks": [], "blockedBy": []})
        .to_string(),
    )
    .unwrap();
}

fn task_status(home: &Path, id: &str) -> String {
    let v: Value = serde_json::from_slice(&fs::read(task_file(home, id)).unwrap()).unwrap();
    v["status"].as_str().unwrap().to_string()
}

/// worker1 launched through `crew claude setup`'s launcher (the stand-in `claude` has run and
/// ended): the hook crew gave it, and where its worktree and crew's workspace for the team are.
struct Launched {
    repo: Repo,
    _scratch: tempfile::TempDir,
    home: PathBuf,
    command: String,
    worktree: PathBuf,
    mirror: PathBuf,
}

impl Launched {
    fn new() -> Self {
        Self::set_up_with(&[])
    }

    /// After `crew claude setup ARGS`.
    fn set_up_with(args: &[&str]) -> Self {
        let repo = Repo::git();
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "init"]);
        let mut setup = vec!["claude", "setup"];
        setup.extend_from_slice(args);
        repo.ok(&setup);
        let launcher = settings(&repo)["env"]["CLAUDE_CODE_TEAMMATE_COMMAND"]
            .as_str()
            .unwrap()
            .to_string();
        let scratch = tempfile::tempdir().unwrap();
        let home = claude_home(scratch.path(), "2.1.197");
        write_task(&home, "1", "Make the file");
        let bin = stand_in(scratch.path(), "2.1.197");
        let (run, _) = launch(&launcher, repo.path(), &home, &bin, &recorded_args());
        assert_eq!(run.code, 7, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("its tool calls go through crew's permissions"),
            "{}",
            run.stderr
        );
        let command =
            hook_command(&fs::read_to_string(scratch.path().join("claude-ran.log")).unwrap());
        let worktree = repo.join(".worktrees/worker1");
        let mirror = data_home(&home).join("crew/claude-code").join(TEAM);
        Launched {
            repo,
            _scratch: scratch,
            home,
            command,
            worktree,
            mirror,
        }
    }

    /// `crew -C <crew's workspace for the team> ARGS`.
    fn mirror_crew(&self, args: &[&str]) -> Run {
        let mut all = vec!["-C", self.mirror.to_str().unwrap()];
        all.extend_from_slice(args);
        self.repo.crew(&all)
    }
}

#[test]
fn a_teammates_tool_calls_meet_crews_permissions_and_its_completed_task_waits_for_the_merge() {
    let launched = Launched::new();
    let Launched {
        repo,
        home,
        command,
        worktree,
        mirror,
        ..
    } = &launched;
    let mirror_crew = |args: &[&str]| launched.mirror_crew(args);

    // Reading and editing in its own worktree: allowed by crew (accept-edits), no prompt.
    let inside = worktree.join("made-by-teammate.txt");
    let read = json!({"tool": "Read", "input": {"file_path": inside}});
    assert_eq!(decision(call_hook(command, home, read)).unwrap().0, "allow");
    let write = json!({"tool": "Write", "input": {"file_path": inside, "content": "x\n"}});
    assert_eq!(
        decision(call_hook(command, home, write)).unwrap().0,
        "allow"
    );
    // The team protocol's own tools are Claude Code's business.
    let list = json!({"tool": "TaskList", "input": {}});
    assert_eq!(decision(call_hook(command, home, list)), None);

    // A command waits for the person in crew's store (the approvals pane), with its purpose.
    let bash = json!({"tool": "Bash", "input": {"command": "make check", "description": "Run the checks"}});
    let waiting = call_hook(command, home, bash.clone());
    let request = wait_for_request(&mirror_crew);
    assert_eq!(request["from"], "worker1");
    assert_eq!(request["request"]["purpose"], "Run the checks");
    let id = request["request_id"].as_str().unwrap().to_string();
    let out = mirror_crew(&["respond", &id, "--as", "user", "approve"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(decision(waiting).unwrap().0, "allow");
    // Denied by the person: the reason goes back to the model.
    let waiting = call_hook(command, home, bash);
    let request = wait_for_request(&mirror_crew);
    let id = request["request_id"].as_str().unwrap().to_string();
    mirror_crew(&[
        "respond", &id, "--as", "user", "reject", "--note", "not now",
    ]);
    let (denied, reason) = decision(waiting).unwrap();
    assert_eq!(denied, "deny");
    assert!(reason.contains("not now"), "{reason}");
    // What an allowed call gave (the PostToolUse hook) is recorded, never answered.
    let gave = json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_use_id": "toolu_9",
                      "tool_name": "Bash", "tool_input": {"command": "make check"},
                      "tool_response": {"stdout": "all checks pass", "stderr": "", "interrupted": false}});
    assert_eq!(hook_output(run_hook(command, home, &gave)), None);
    // The teammate's pane on crew's screen: each call, the person's answers and what it gave.
    let transcript = mirror.join(".crew/transcripts/worker1/claude-code.jsonl");
    let replay = repo.crew(&["replay", transcript.to_str().unwrap()]);
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    for seen in [
        "made-by-teammate.txt",
        "TaskList",
        "make check",
        "not now",
        "all checks pass",
    ] {
        assert!(replay.stdout.contains(seen), "{seen}: {}", replay.stdout);
    }

    // "Completed" goes to crew's review: Claude Code's task stays in progress meanwhile.
    let done = json!({"tool": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}});
    let (refused, reason) = decision(call_hook(command, home, done)).unwrap();
    assert_eq!(refused, "deny");
    assert!(
        reason.contains("crew holds task #1 for the person's review"),
        "{reason}"
    );
    assert_eq!(task_status(home, "1"), "in_progress");
    let reviews = mirror_crew(&["review", "list", "--json"]);
    let reviews: Value = serde_json::from_str(&reviews.stdout).unwrap();
    assert_eq!(
        reviews["reviews"][0]["files"],
        json!(["made-by-teammate.txt"])
    );
    // The screen's mirror keeps crew's hold while Claude Code's copy says in progress.
    let sync = || {
        let mut m = crew_team::claude_team::Mirror::open(home, TEAM, mirror).unwrap();
        m.sync().unwrap();
    };
    sync();
    let out = mirror_crew(&["review", "merge", "1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(git(repo, &["show", "main:made-by-teammate.txt"]), "made\n");
    // Merged: only now is Claude Code's task completed, and the lead told, once.
    sync();
    sync();
    assert_eq!(task_status(home, "1"), "completed");
    let merged: Vec<Value> = lead_inbox(home)
        .into_iter()
        .filter(|m| m["from"] == "crew")
        .collect();
    assert_eq!(merged.len(), 1, "{merged:?}");
    assert!(
        merged[0]["text"]
            .as_str()
            .unwrap()
            .contains("was reviewed and merged into main by the person"),
        "{merged:?}"
    );

    // A send-back reaches the teammate's own inbox with the note; its next "completed" is
    // reviewed again.
    write_task(home, "2", "Add a second file");
    fs::write(worktree.join("second.txt"), "2\n").unwrap();
    let done = json!({"tool": "TaskUpdate", "input": {"taskId": "2", "status": "completed"}});
    assert_eq!(
        decision(call_hook(command, home, done.clone())).unwrap().0,
        "deny"
    );
    let out = mirror_crew(&["review", "send-back", "2", "--note", "name it 2.txt"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    sync();
    let inbox: Vec<Value> = serde_json::from_slice(
        &fs::read(home.join("teams").join(TEAM).join("inboxes/worker1.json")).unwrap(),
    )
    .unwrap();
    assert!(
        inbox[0]["text"].as_str().unwrap().contains("name it 2.txt"),
        "{inbox:?}"
    );
    git_cli(Path::new("git"), worktree, &["mv", "second.txt", "2.txt"]);
    assert_eq!(decision(call_hook(command, home, done)).unwrap().0, "deny");
    let out = mirror_crew(&["review", "diff", "2", "--json"]);
    assert!(out.stdout.contains("2.txt"), "{}", out.stdout);
    assert_eq!(task_status(home, "2"), "in_progress");
}

#[test]
fn a_teammates_bash_runs_in_crews_sandbox_writing_only_in_its_worktree() {
    let launched = Launched::new();
    let (home, worktree) = (&launched.home, &launched.worktree);
    // The teammate's private temporary folder lives while its `claude` does; the stand-in has
    // ended, so it is made again, as it is while a real teammate runs.
    let temp = launched
        .command
        .split(" --tmp ")
        .nth(1)
        .expect("the hook is given the teammate's temporary folder")
        .trim_matches('\'');
    fs::create_dir_all(temp).unwrap();
    let outside = launched.repo.join("escaped.txt");
    let script = format!(
        "echo in > inside.txt; echo out > {}; touch \"$TMPDIR/scratch\"; echo \"key=[$ANTHROPIC_API_KEY]\"; echo ran",
        outside.display()
    );
    let bash =
        json!({"tool": "Bash", "input": {"command": script, "description": "Try to escape"}});
    let waiting = call_hook(&launched.command, home, bash);
    // The person is shown the command as the teammate wrote it.
    let request = wait_for_request(&|args| launched.mirror_crew(args));
    assert_eq!(request["request"]["input"]["command"], script);
    let id = request["request_id"].as_str().unwrap().to_string();
    let out = launched.mirror_crew(&["respond", &id, "--as", "user", "approve"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let answer = hook_output(waiting).unwrap();
    assert_eq!(answer["permissionDecision"], "allow");
    assert!(
        answer["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("crew's sandbox"),
        "{answer}"
    );
    let wrapped = answer["updatedInput"]["command"].as_str().unwrap();
    assert!(wrapped.contains("sandbox-exec"), "{wrapped}");
    assert_eq!(answer["updatedInput"]["description"], "Try to escape");

    // Run as Claude Code's Bash runs it: in the teammate's folder, through a shell.
    let ran = Command::new("bash")
        .arg("-c")
        .arg(wrapped)
        .env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .current_dir(worktree)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(said.contains("ran"), "{said}");
    // Only the allow-listed variables reach it: not the CLI's credentials.
    assert!(said.contains("key=[]"), "{said}");
    assert_eq!(
        fs::read_to_string(worktree.join("inside.txt"))
            .ok()
            .as_deref(),
        Some("in\n"),
        "{wrapped}\n{said}"
    );
    assert!(Path::new(temp).join("scratch").exists(), "{said}");
    assert!(
        !outside.exists(),
        "a write outside the worktree got through: {said}"
    );

    // With `sandbox = "off"` in the repository's crew.toml the command runs as written.
    fs::write(
        launched.repo.join("crew.toml"),
        "[team]\nname = \"t\"\n[lead]\nname = \"lead\"\n\
         model = { provider = \"scripted\", scenario = \"demo\" }\n\
         [permissions]\nmode = \"accept-edits\"\nallow = [\"bash\"]\nsandbox = \"off\"\n",
    )
    .unwrap();
    let bash = json!({"tool": "Bash", "input": {"command": "echo hi"}});
    let answer = hook_output(call_hook(&launched.command, home, bash)).unwrap();
    assert_eq!(answer["permissionDecision"], "allow", "{answer}");
    assert_eq!(answer.get("updatedInput"), None, "{answer}");
}

#[test]
fn with_merge_auto_a_completed_task_merges_at_once_unless_it_changes_what_governs_the_team() {
    let launched = Launched::set_up_with(&["--merge", "auto"]);
    let (repo, home, command) = (&launched.repo, &launched.home, &launched.command);
    assert!(command.contains("--merge-when-done"), "{command}");
    // The merge queue runs in `crew up`'s daemon, which a Claude Code team does not have.
    let queue = repo.crew(&["claude", "setup", "--merge", "queue"]);
    assert_ne!(queue.code, 0);
    assert!(
        queue.stderr.contains("--merge queue needs"),
        "{}",
        queue.stderr
    );
    fs::write(launched.worktree.join("made-by-teammate.txt"), "made\n").unwrap();
    // Merged at once: Claude Code's own "completed" goes through, and crew says nothing more.
    let done = json!({"tool": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}});
    assert_eq!(decision(call_hook(command, home, done)), None);
    assert_eq!(git(repo, &["show", "main:made-by-teammate.txt"]), "made\n");
    let reviews = launched.mirror_crew(&["review", "list", "--json"]);
    assert!(!reviews.stdout.contains("task_1"), "{}", reviews.stdout);
    let mut mirror = crew_team::claude_team::Mirror::open(home, TEAM, &launched.mirror).unwrap();
    mirror.sync().unwrap();
    assert!(
        lead_inbox(home).iter().all(|m| m["from"] != "crew"),
        "{:?}",
        lead_inbox(home)
    );

    // A change to crew.toml never merges by itself: it waits for the person, and the teammate
    // is told why.
    write_task(home, "2", "Change the team");
    fs::write(
        launched.worktree.join("crew.toml"),
        "[team]\nname = \"x\"\n",
    )
    .unwrap();
    let done = json!({"tool": "TaskUpdate", "input": {"taskId": "2", "status": "completed"}});
    let (refused, reason) = decision(call_hook(command, home, done)).unwrap();
    assert_eq!(refused, "deny");
    assert!(reason.contains("not merged automatically"), "{reason}");
    assert_eq!(task_status(home, "2"), "in_progress");
    let reviews = launched.mirror_crew(&["review", "list", "--json"]);
    assert!(reviews.stdout.contains("crew.toml"), "{}", reviews.stdout);
}

/// The permission request waiting in crew's workspace for the team.
fn wait_for_request(crew: &dyn Fn(&[&str]) -> crate::support::Run) -> Value {
    for _ in 0..100 {
        let out = crew(&["requests", "--json"]);
        if let Ok(all) = serde_json::from_str::<Value>(&out.stdout) {
            let pending = all["requests"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|r| r["state"] == "pending")
                .cloned();
            if let Some(request) = pending {
                return request;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("no permission request came");
}
