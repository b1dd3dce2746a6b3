//! Everything crew runs for an agent, or on files an agent wrote, is confined (issue 21, part
//! A). Hostile teammates (real `crew worker` processes playing test_exec_attack.toml, or
//! test_attack.toml, which runs its task's description as a shell script) turn a hook, crew's
//! own git, the write tool's links, the sandbox's sockets, descriptors, environment and limits,
//! and plan mode's read-only commands against the person. Each attempt must fail, and the task's
//! result or the transcript must say why. Before these fixes every one of them succeeded (the
//! issue lists what each did); the comments say what each one showed then.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::crew_exe;
use crate::support::team::{Team, crew_toml, git};
use crew_test_support::wait::{BUDGET, eventually};

const WORKER: &str =
    "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 2";

/// The task's result once it is done (completed, failed or waiting for review).
fn finished(team: &Team, id: &str) -> (String, String) {
    eventually(&format!("{id} to finish"), BUDGET, || {
        let task = team.task(id);
        let status = task["status"].as_str()?.to_string();
        ["completed", "failed", "review"]
            .contains(&status.as_str())
            .then(|| (status, task["result"].as_str().unwrap_or("").to_string()))
    })
}

/// Every string in `name`'s transcripts, one per line.
fn transcript(team: &Team, name: &str) -> String {
    fn strings(value: &Value, out: &mut String) {
        match value {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut text = String::new();
    for event in team.transcript_events(name) {
        strings(&event, &mut text);
    }
    text
}

fn stop(team: &Team, mut worker: crate::support::team::Bg) {
    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    worker.wait(std::time::Duration::from_secs(20));
}

/// Before: the rewritten script ran unconfined in the worktree, created `pwned-by-hook` in the
/// person's checkout, appended a `from: user` line to the lead's inbox, and its allow approved
/// the bash call, which wrote `bash-ran.txt`.
#[test]
fn the_init_templates_check_command_hook_cannot_be_turned_against_the_person() {
    let mut toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"accept-edits\"",
        WORKER,
    );
    toml.push_str(
        "\n[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"bash\"\ncommand = \"./scripts/check-command.sh\"\ntimeout_secs = 20\n",
    );
    let team = Team::new(
        &toml,
        "test_exec_attack.toml",
        &[("scripts/check-command.sh", "#!/bin/sh\nexit 0\n")],
    );
    let script = team.repo.join("scripts/check-command.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(team.repo.path(), &["add", "-A"]);
    git(team.repo.path(), &["commit", "-q", "-m", "executable hook"]);
    std::fs::create_dir_all(team.repo.join(".mailboxes")).unwrap();

    let alice = team.worker("alice");
    team.repo.ok(&["task", "add", "hook-attack"]);
    let (_, result) = finished(&team, "task_1");
    let said = transcript(&team, "alice");

    // The script ran (confined): its message is there, its allow was ignored, saying why.
    assert!(said.contains("the hook ran"), "{said}");
    assert!(said.contains("answered allow; ignored"), "{said}");
    // So the call was the mode's to decide: accept-edits asks, nobody answered, it was denied.
    assert!(result.contains("permission denied"), "{result}");
    let wt = team.repo.join(".worktrees/alice");
    assert!(!wt.join("bash-ran.txt").exists(), "the bash call ran");
    // Nothing the script tried outside its sandbox happened, nor in the worktree.
    assert!(!team.repo.join("pwned-by-hook").exists());
    assert!(
        !wt.join("hook-wrote.txt").exists(),
        "the worktree was writable"
    );
    let inbox =
        std::fs::read_to_string(team.repo.join(".mailboxes/lead.jsonl")).unwrap_or_default();
    assert!(!inbox.contains("hook says approved"), "{inbox}");
    stop(&team, alice);
}

fn shell_team(permissions: &str, teammate: &str, limits: &str) -> Team {
    let mut toml = crew_toml(
        "",
        &[("alice", "implementer", teammate)],
        permissions,
        WORKER,
    );
    toml.push_str(limits);
    Team::new(&toml, "test_attack.toml", &[])
}

/// Before: the task's commit took the nested repositories in as gitlinks (checked against the
/// old binary), after which git's next look at them (crew's `git add -A` on merge, the
/// person's `git status`) ran their `core.fsmonitor` unconfined, as the run showed.
#[test]
fn an_embedded_repository_is_refused_and_its_config_never_runs() {
    let team = shell_team("mode = \"workspace-write\"", "writes = true", "");
    // A real nested repository (so git would commit it as a gitlink), dirty, whose config
    // names an fsmonitor; from .worktrees/alice/sub the repository's root is ../../..: the file
    // exists only if some git ran it. Then the variant: a `.git` file naming a git folder.
    let script = "git init -q sub && echo x > sub/file.txt && git -C sub add file.txt \
        && git -C sub -c user.name=a -c user.email=a@b.invalid commit -qm x \
        && git -C sub config core.fsmonitor 'touch ../../../fsmonitor-ran; false' \
        && echo dirty >> sub/file.txt \
        && mkdir -p other && cp -r sub/.git evil && printf 'gitdir: ../evil\\n' > other/.git \
        && echo planted";
    let alice = team.worker("alice");
    team.repo
        .ok(&["task", "add", "git-attack", "--desc", script]);
    let (_, result) = finished(&team, "task_1");
    assert!(result.contains("planted"), "{result}");
    assert!(
        result.contains("is a git repository of its own"),
        "the reason: {result}"
    );
    // The person merging the worktree meets the same refusal; nothing ran either way.
    let merge = team.repo.crew(&["worktree", "merge", "alice"]);
    assert_ne!(merge.code, 0, "{}", merge.stdout);
    assert!(
        merge.stderr.contains("is a git repository of its own"),
        "{}",
        merge.stderr
    );
    team.repo.ok(&["worktree", "diff", "alice"]);
    assert!(!team.repo.join("fsmonitor-ran").exists(), "fsmonitor ran");
    stop(&team, alice);
}

/// Before: nothing was limited: 1,505 processes, 2 GiB, a 300 MB commit into the objects.
#[test]
fn limits_bound_processes_file_size_and_what_a_task_may_commit() {
    let team = shell_team(
        "mode = \"workspace-write\"",
        "writes = true",
        "\n[limits]\nmax_processes = 40\nmax_file_bytes = 2000000\nmax_task_bytes = 500000\n",
    );
    let script = "(head -c 3000000 /dev/zero > huge.bin) 2>&1; ls -l huge.bin | awk '{print \"huge:\", $5}'; \
        echo \"nproc $(ulimit -u)\"; \
        python3 -c 'import os, time; [os.fork() or (time.sleep(3), os._exit(0)) for _ in range(80)]' 2>&1 | tail -1; \
        head -c 900000 /dev/urandom > big.bin; echo big";
    let alice = team.worker("alice");
    team.repo
        .ok(&["task", "add", "limits-attack", "--desc", script]);
    let (_, result) = finished(&team, "task_1");
    assert!(
        result.contains("huge: 2000000"),
        "the file stopped at the limit: {result}"
    );
    assert!(result.contains("nproc 40"), "{result}");
    // SAFETY: geteuid only reads. The kernel does not hold root to RLIMIT_NPROC.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            result.contains("Resource temporarily unavailable"),
            "fork was refused: {result}"
        );
    }
    assert!(
        result.contains("more than [limits] max_task_bytes = 500000"),
        "{result}"
    );
    // The refusal came before staging: the base repository holds none of it.
    let objects = Command::new("git")
        .args(["count-objects", "-v"])
        .current_dir(team.repo.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&objects.stdout);
    let size_kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("size: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(size_kib < 400, "{text}");
    stop(&team, alice);
}

/// Before: with `network = true` there was no seccomp, so Unix sockets (tmux, the daemon's
/// socket, abstract ones) were open; fd 7 of `crew up` was writable; the host's SysV IPC was
/// visible; GH_PAT, DATABASE_URL and SENTRY_DSN reached the commands.
#[test]
fn with_network_no_unix_socket_no_inherited_descriptor_no_host_ipc_and_no_stray_secret() {
    let team = shell_team(
        "mode = \"workspace-write\"\nenv = [\"CREW_TEST_WANTED\"]",
        "writes = true\nnetwork = true",
        "",
    );
    let outside = team.repo.join("outside-fd.txt");
    std::fs::write(&outside, "").unwrap();
    let ipc_here = std::fs::read_link("/proc/self/ns/ipc").unwrap();
    let script = "python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1; \
        python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0crew\")' 2>&1 | tail -1; \
        python3 -c 'import socket; socket.socket(socket.AF_INET)' && echo inet-ok; \
        (echo pwned >&7) 2>&1 | sed 's/^/fd7: /'; \
        echo \"ipc $(readlink /proc/self/ns/ipc)\"; \
        echo \"env [$GH_PAT][$DATABASE_URL][$SENTRY_DSN][$CREW_TEST_WANTED]\"";
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(&outside)
        .unwrap();
    let log = std::fs::File::create(team.repo.join(".crew/test-alice.log")).unwrap();
    let mut child = Command::new(crew_exe());
    child
        .args(["worker", "--name", "alice"])
        .current_dir(team.repo.path())
        .envs([
            ("GH_PAT", "ghp_canary"),
            ("DATABASE_URL", "postgres://u:canary@db/x"),
            ("SENTRY_DSN", "https://canary@sentry.invalid/1"),
            ("CREW_TEST_WANTED", "wanted"),
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let raw = std::os::fd::AsRawFd::as_raw_fd(&file);
    // SAFETY: dup2 in the child before exec, on a descriptor this test owns: the worker
    // inherits it as fd 7, as a descriptor left open by whoever started crew.
    unsafe {
        child.pre_exec(move || {
            if libc::dup2(raw, 7) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut worker = child.spawn().unwrap();
    team.repo
        .ok(&["task", "add", "socket-attack", "--desc", script]);
    let (_, result) = finished(&team, "task_1");
    assert_eq!(
        result.matches("Operation not permitted").count(),
        2,
        "both Unix sockets were refused: {result}"
    );
    assert!(
        result.contains("inet-ok"),
        "Internet sockets are allowed: {result}"
    );
    assert!(result.contains("fd7: "), "{result}");
    assert!(result.contains("Bad file descriptor"), "{result}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "");
    assert!(
        !result.contains(&format!("ipc {}", ipc_here.display())),
        "{result}"
    );
    assert!(result.contains("ipc ipc:["), "{result}");
    assert!(result.contains("env [][][][wanted]"), "{result}");
    assert!(!result.contains("canary"), "{result}");
    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    let _ = worker.wait();
}

/// Before: the write tool resolved `..` after the link as text and wrote
/// `.tasks/task_77.json` in the store, outside the worktree.
#[test]
fn the_write_tool_cannot_follow_links_out_of_the_worktree() {
    let team = Team::new(
        &crew_toml(
            "",
            &[("alice", "implementer", "writes = true")],
            "mode = \"workspace-write\"",
            WORKER,
        ),
        "test_exec_attack.toml",
        &[],
    );
    std::fs::create_dir_all(team.repo.join(".tasks")).unwrap();
    let alice = team.worker("alice");
    team.repo.ok(&["task", "add", "link-attack"]);
    let (_, result) = finished(&team, "task_1");
    let said = transcript(&team, "alice");
    assert!(said.contains("linked"), "{said}");
    assert!(!team.repo.join(".tasks/task_77.json").exists(), "{said}");
    assert!(
        !team.repo.join(".crew/agents/task_77.json").exists(),
        "{said}"
    );
    assert!(
        said.contains("resolves outside the workspace"),
        "the kernel's refusal: {said}\n{result}"
    );
    assert!(said.contains("leaves the workspace"), "{said}");
    stop(&team, alice);
}

/// Before: in plan mode `sed -l 9 '1e touch f'` ran a command and `uniq - out` wrote a file,
/// read-only commands running in a writable sandbox.
#[test]
fn commands_granted_as_read_only_cannot_write() {
    let team = Team::new(
        &crew_toml(
            "",
            &[(
                "alice",
                "implementer",
                "writes = true\nplan_mode_required = true",
            )],
            "mode = \"workspace-write\"",
            WORKER,
        ),
        "test_exec_attack.toml",
        &[],
    );
    let alice = team.worker("alice");
    team.repo.ok(&["task", "add", "plan-attack"]);
    let (_, result) = finished(&team, "task_1");
    let said = transcript(&team, "alice");
    let wt = team.repo.join(".worktrees/alice");
    assert!(!wt.join("sed-wrote").exists(), "{said}");
    assert!(!wt.join("uniq-wrote").exists(), "{said}");
    assert!(!team.repo.join("sed-wrote").exists(), "{said}");
    assert!(!team.repo.join("uniq-wrote").exists(), "{said}");
    // Each ran and was refused its write by the sandbox (or, once the read-only list knows
    // better, refused as not read-only).
    assert!(
        said.matches("Permission denied").count() + said.matches("read-only bash:").count() >= 2,
        "{said}\n{result}"
    );
    stop(&team, alice);
}

/// A hostile teammate's command reads the person's keys and tokens in HOME (an ssh key, cloud
/// and registry credentials, the CLI agents' logins) to carry them off in its result, its
/// commits or over the network: each is an empty file or folder to it. What crew.toml's
/// `readable_secrets` names stays readable; crew's own store credentials never are.
#[test]
fn a_teammates_commands_cannot_read_the_persons_keys_and_tokens() {
    let secret = "persons-secret-51c7";
    let home = tempfile::tempdir().unwrap();
    let files = [
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".netrc",
        ".git-credentials",
        ".config/gh/hosts.yml",
        ".docker/config.json",
        ".claude/.credentials.json",
        ".codex/auth.json",
        ".kube/config",
        ".pgpass",
    ];
    for file in files.iter().chain([&".config/hub"]) {
        let path = home.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{file}: {secret}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"ask\"\nallow = [\"bash\"]\nreadable_secrets = [\"~/.config/hub\", \"~/.pgpass\"]",
        WORKER,
    );
    let team = Team::new(&toml, "test_attack.toml", &[]);
    let mut script = String::new();
    for file in files.iter().chain([&".config/hub"]) {
        script.push_str(&format!("cat ~/{file} 2>&1; "));
    }
    // Variants: through a link made in the worktree, a hard link, and the real path behind HOME.
    script.push_str(
        "ln -s ~/.aws/credentials soft 2>&1; cat soft 2>&1; ln ~/.netrc hard 2>&1; cat hard 2>&1; \
         cat \"$(readlink -f ~)/.git-credentials\" 2>&1; ls -a ~/.ssh; echo looked",
    );
    team.repo.ok(&["task", "add", "attack", "--desc", &script]);
    let home_dir = home.path().to_str().unwrap();
    let _alice = team.spawn_with_env(
        "alice",
        &["worker", "--name", "alice"],
        &[("HOME", home_dir)],
    );
    let (_, result) = finished(&team, "task_1");
    assert!(result.contains("looked"), "it ran: {result}");
    for file in files {
        assert!(
            !result.contains(&format!("{file}: {secret}")),
            "{file} was read: {result}"
        );
    }
    assert!(
        result.contains(&format!(".config/hub: {secret}")),
        "what readable_secrets names is read: {result}"
    );
}

/// `readable_secrets` takes paths from HOME or absolute ones; anything else is refused naming
/// the entry, with its place in crew.toml.
#[test]
fn a_readable_secret_that_is_not_a_path_is_refused_naming_it() {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "")],
        "mode = \"ask\"\nreadable_secrets = [\".ssh\"]",
        WORKER,
    );
    let team = Team::new(&toml, "test_attack.toml", &[]);
    let run = team.repo.crew(&["status"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr.contains("crew.toml:")
            && run
                .stderr
                .contains("readable_secrets: \".ssh\" is not a path from your home"),
        "{}",
        run.stderr
    );
}
