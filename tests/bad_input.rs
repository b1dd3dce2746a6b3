//! Invariant 7: bad input gets a clear error naming the file and what is wrong; nothing panics,
//! nothing is lost, and the rest keeps working.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crate::support::Repo;

const TASK_FIXTURES: &[(&str, &str, &str)] = &[
    (
        "malformed",
        "task_1",
        "invalid task JSON: EOF while parsing a value at line 1 column 28",
    ),
    (
        "wrong_type",
        "task_2",
        "invalid task JSON: expected value at line 1 column 44",
    ),
    (
        "missing_subject",
        "task_3",
        "invalid task JSON: missing field `subject` at line 1 column 37",
    ),
    (
        "unknown_status",
        "task_4",
        "invalid task JSON: unknown variant `done`, expected one of `pending`, `in_progress`, `review`, `completed`, `failed` at line 1 column 49",
    ),
    (
        "id_mismatch",
        "task_5",
        "its id field says \"task_1\" but the file is task_5.json",
    ),
    (
        "blockers_not_a_list",
        "task_6",
        "invalid task JSON: invalid type: string \"task_1\", expected a sequence at line 1 column 75",
    ),
    (
        "binary",
        "task_7",
        "invalid task JSON: expected value at line 1 column 1",
    ),
];

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn broken_task_files_are_reported_by_path_and_reason_while_the_rest_works() {
    let repo = Repo::init();
    std::fs::create_dir_all(repo.join(".tasks")).unwrap();
    for (name, id, _) in TASK_FIXTURES {
        std::fs::copy(
            fixture(&format!("tasks/{name}.json")),
            repo.join(&format!(".tasks/{id}.json")),
        )
        .unwrap();
    }
    std::fs::copy(
        fixture("tasks/hand_edited.json"),
        repo.join(".tasks/task_8.json"),
    )
    .unwrap();

    let list = repo.json(&["task", "list", "--json"]);
    let problems: Vec<String> = list["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["error"].as_str().unwrap().to_string())
        .collect();
    for (_, id, reason) in TASK_FIXTURES {
        let want = format!(
            "{}: {reason}",
            repo.join(&format!(".tasks/{id}.json")).display()
        );
        assert!(
            problems.contains(&want),
            "missing {want:?} in {problems:#?}"
        );
    }
    assert_eq!(
        list["tasks"].as_array().unwrap().len(),
        1,
        "the good file still loads"
    );

    let graph = repo.crew(&["task", "graph"]);
    assert_eq!(graph.code, 0);
    assert!(graph.stdout.contains("task_8"));
    assert!(
        graph.stderr.contains("task_1.json: invalid task JSON"),
        "{}",
        graph.stderr
    );

    let show = repo.crew(&["task", "show", "task_4"]);
    assert_eq!(show.code, 1);
    assert!(
        show.stderr
            .contains("task_4.json: invalid task JSON: unknown variant `done`")
    );

    // New ids skip past every file on disk, broken or not.
    assert_eq!(repo.ok(&["task", "add", "next"]).trim(), "task_9");
}

#[test]
fn unknown_fields_survive_a_rewrite() {
    let repo = Repo::init();
    std::fs::create_dir_all(repo.join(".tasks")).unwrap();
    std::fs::copy(
        fixture("tasks/hand_edited.json"),
        repo.join(".tasks/task_8.json"),
    )
    .unwrap();
    repo.ok(&["task", "claim", "task_8", "--as", "alice"]);
    repo.ok(&["task", "done", "task_8", "--as", "alice", "--result", "ok"]);
    let task = repo.json(&["task", "show", "task_8", "--json"]);
    assert_eq!(task["priority"], "high");
    assert_eq!(task["labels"], serde_json::json!(["ui", "urgent"]));
    assert_eq!(task["status"], "completed");
}

const CONFIG_FIXTURES: &[(&str, &str)] = &[
    (
        "syntax",
        "3:15: string values must be quoted, expected literal string",
    ),
    (
        "unknown_field",
        "6:1: unknown field `colour`, expected one of `name`, `role`, `writes`, `plan_mode_required`, `network`, `model`, `budget`",
    ),
    (
        "bad_role",
        "9:8: unknown role \"wizard\"; roles are: explorer, planner, reviewer, implementer",
    ),
    (
        "bad_name",
        "8:8: invalid agent name \"../alice\": it must start with a lowercase letter a-z",
    ),
    ("duplicate_name", "8:8: agent name \"lead\" is used twice"),
    (
        "user_reserved",
        "5:8: \"user\" is reserved for the person at the screen",
    ),
    (
        "team_reserved",
        "5:8: \"team\" is reserved: .crew/memory/team/ holds the whole team's memories",
    ),
    (
        "bad_mode",
        "8:8: unknown permission mode `yolo`; expected read-only, workspace-write, ask, accept-edits, bypass, plan or dont-ask",
    ),
    (
        "plan_alone",
        "8:8: plan mode needs a teammate to plan: the lead already only reads, and approves the teammates' plans",
    ),
    (
        "wrong_type",
        "8:18: invalid type: string \"five\", expected u64",
    ),
    ("missing_lead", "1:1: missing field `lead`"),
    (
        "bad_remote",
        "3:10: remote = \"ext::sh -c touch% /tmp/pwned\" names a git transport helper (`x::`); give a path or an ssh URL",
    ),
    (
        "negative_price",
        "6:82: a price is US dollars per million tokens (0 or more), not -10",
    ),
    (
        "unscrubbed_key",
        "6:71: api_key_env = \"GROQ_CREDENTIAL\" would reach the tools' commands: crew hides \
         only variables with a name containing KEY, TOKEN, SECRET or PASSWORD (any case), or \
         starting with ANTHROPIC_, OPENAI_ or AWS_; name the variable so (e.g. \
         GROQ_CREDENTIAL_KEY)",
    ),
];

#[test]
fn crew_toml_errors_name_file_line_and_column() {
    let repo = Repo::init();
    for (name, want) in CONFIG_FIXTURES {
        std::fs::copy(
            fixture(&format!("config/{name}.toml")),
            repo.join("crew.toml"),
        )
        .unwrap();
        let run = repo.crew(&["task", "list"]);
        assert_eq!(run.code, 1, "{name}");
        let want = format!("crew: {}:{want}", repo.join("crew.toml").display());
        assert_eq!(run.stderr.trim(), want, "{name}");
    }
}

#[test]
fn init_refuses_outside_git_and_over_an_existing_config_changing_nothing() {
    let plain = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(crate::support::crew_exe())
        .arg("init")
        .current_dir(plain.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("is not inside a git repository"));
    assert_eq!(std::fs::read_dir(plain.path()).unwrap().count(), 0);

    let repo = Repo::git();
    std::fs::write(repo.join("crew.toml"), "# mine\n").unwrap();
    let again = repo.crew(&["init"]);
    assert_eq!(again.code, 1);
    assert!(
        again
            .stderr
            .contains("crew.toml already exists; nothing was changed")
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("crew.toml")).unwrap(),
        "# mine\n"
    );
    let exclude = std::fs::read_to_string(repo.join(".git/info/exclude")).unwrap_or_default();
    assert!(!exclude.contains(".tasks"));
}

#[test]
fn init_writes_a_valid_commented_config_and_excludes_runtime_folders_once() {
    let repo = Repo::git();
    repo.ok(&["init", "--team", "web"]);
    let config = std::fs::read_to_string(repo.join("crew.toml")).unwrap();
    assert!(config.contains("name = \"web\""));
    assert!(config.contains("base_branch = \"main\""));
    assert!(
        config.lines().filter(|l| l.starts_with('#')).count() > 5,
        "commented"
    );
    let exclude = std::fs::read_to_string(repo.join(".git/info/exclude")).unwrap();
    for entry in ["/.tasks", "/.mailboxes", "/.worktrees", "/.crew"] {
        assert_eq!(
            exclude.lines().filter(|l| *l == entry).count(),
            1,
            "{entry}"
        );
    }
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    repo.ok(&["task", "add", "x"]);
    repo.ok(&["send", "--from", "lead", "--to", "alice", "hi"]);
    let after = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert_eq!(
        status.stdout, after.stdout,
        "runtime folders stay out of git status"
    );
    let bad = repo.crew(&["init", "--team", "Bad Name"]);
    assert_eq!(bad.code, 1, "crew.toml exists");
}
