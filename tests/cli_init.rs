//! `crew init` finds the agents the person has (fake `claude`/`codex` on a PATH the test
//! controls, keys set or not, a loopback server answering `/v1/models`), and a team without a
//! model, or one that would play the simulator's demo by surprise, is refused by `crew up`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::pty::Screen;
use crate::support::{Repo, Run, crew_exe};

/// A folder of fake CLIs, each printing `version` for `--version`.
fn fake_bin(clis: &[(&str, &str)]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for (name, version) in clis {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// `crew ARGS` in `repo` with PATH = `bin` and the system's folders, the keys given (others
/// unset) and only `ports` asked for a local server.
fn crew_with(repo: &Path, bin: &Path, keys: &[(&str, &str)], ports: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new(crew_exe());
    cmd.args(args)
        .current_dir(repo)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("CREW_LOCAL_MODEL_PORTS", ports);
    for (k, v) in keys {
        cmd.env(k, v);
    }
    cmd.output().unwrap().into()
}

/// The `model = …` lines of crew.toml, in file order.
fn model_lines(repo: &Path) -> Vec<String> {
    std::fs::read_to_string(repo.join("crew.toml"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("model = "))
        .map(str::to_string)
        .collect()
}

/// A loopback OpenAI-compatible server answering `GET /v1/models` with `models`, on a free
/// port, for as many connections as come.
fn models_server(models: &[&str]) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let data: Vec<_> = models
        .iter()
        .map(|m| serde_json::json!({"id": m, "object": "model"}))
        .collect();
    let body = serde_json::json!({"object": "list", "data": data}).to_string();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = String::new();
            let mut byte = [0u8; 1];
            while !head.ends_with("\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(char::from(byte[0]));
            }
            let answer = if head.starts_with("GET /v1/models ") {
                format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_string()
            };
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    port
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn init_picks_claude_code_when_it_runs_and_says_what_it_did_not_find() {
    let repo = Repo::git();
    let bin = fake_bin(&[("claude", "2.1.197 (Claude Code)")]);
    let silent = free_port();
    let run = crew_with(
        repo.path(),
        bin.path(),
        &[],
        &silent.to_string(),
        &["init", "--yes"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("chose: Claude Code 2.1.197 (`claude` on PATH"),
        "{}",
        run.stdout
    );
    for missing in [
        "`codex` on PATH",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        &format!("127.0.0.1:{silent}"),
    ] {
        assert!(
            run.stdout.contains("not found: ") && run.stdout.contains(missing),
            "{missing}: {}",
            run.stdout
        );
    }
    let models = model_lines(repo.path());
    assert_eq!(models.len(), 4, "{models:?}");
    assert!(
        models
            .iter()
            .all(|m| m == "model = { provider = \"claude-code\" }"),
        "{models:?}"
    );
}

#[test]
fn an_unsupported_claude_is_passed_over_and_codex_teammates_get_a_lead_on_the_key() {
    let repo = Repo::git();
    let bin = fake_bin(&[
        ("claude", "1.0.3 (Claude Code)"),
        ("codex", "codex-cli 0.171.0"),
    ]);
    let run = crew_with(
        repo.path(),
        bin.path(),
        &[("ANTHROPIC_API_KEY", "sk-test")],
        "",
        &["init"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("chose: Codex 0.171.0"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("version 1.0.3 is not one crew speaks"),
        "{}",
        run.stdout
    );
    let models = model_lines(repo.path());
    assert_eq!(
        models[0],
        "model = { provider = \"anthropic\", model = \"claude-sonnet-4-5\" }"
    );
    assert!(
        models[1..]
            .iter()
            .all(|m| m == "model = { provider = \"codex\" }"),
        "{models:?}"
    );
    // What it wrote is a team crew accepts.
    let status = crew_with(repo.path(), bin.path(), &[], "", &["status", "--json"]);
    assert_eq!(status.code, 0, "{}", status.stderr);
}

#[test]
fn init_offers_a_local_servers_models_and_takes_a_base_url_non_interactively() {
    let port = models_server(&["qwen2.5-coder:7b", "llama3.2"]);
    let nothing = fake_bin(&[]);
    // Found on a probed port.
    let repo = Repo::git();
    let run = crew_with(
        repo.path(),
        nothing.path(),
        &[],
        &port.to_string(),
        &["init"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let url = format!("http://127.0.0.1:{port}/v1");
    assert!(
        run.stdout.contains(&format!(
            "chose: qwen2.5-coder:7b on an OpenAI-compatible server at {url}"
        )),
        "{}",
        run.stdout
    );
    let want = format!(
        "model = {{ provider = \"openai\", model = \"qwen2.5-coder:7b\", base_url = \"{url}\" }}"
    );
    assert!(
        model_lines(repo.path()).iter().all(|m| *m == want),
        "{:?}",
        model_lines(repo.path())
    );
    // Named on the command line, with a model of its list.
    let repo = Repo::git();
    let run = crew_with(
        repo.path(),
        nothing.path(),
        &[],
        "",
        &[
            "init",
            "--provider",
            "openai",
            "--base-url",
            &format!("{url}/"),
            "--model",
            "llama3.2",
            "--yes",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("as --provider asked"), "{}", run.stdout);
    let want =
        format!("model = {{ provider = \"openai\", model = \"llama3.2\", base_url = \"{url}\" }}");
    assert!(model_lines(repo.path()).iter().all(|m| *m == want));
    // A server that is not there, with no model named: refused, nothing written.
    let repo = Repo::git();
    let gone = free_port();
    let run = crew_with(
        repo.path(),
        nothing.path(),
        &[],
        "",
        &[
            "init",
            "--provider",
            "openai",
            "--base-url",
            &format!("http://127.0.0.1:{gone}/v1"),
            "--yes",
        ],
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("give --model NAME"), "{}", run.stderr);
    assert!(!repo.join("crew.toml").exists());
}

#[test]
fn with_nothing_found_init_says_how_and_up_refuses_with_no_model_configured() {
    let repo = Repo::git();
    let nothing = fake_bin(&[]);
    let run = crew_with(repo.path(), nothing.path(), &[], "", &["init", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("no model found"), "{}", run.stdout);
    assert!(model_lines(repo.path()).is_empty());
    let toml = std::fs::read_to_string(repo.join("crew.toml")).unwrap();
    assert!(
        toml.contains("#   model = { provider = \"claude-code\" }"),
        "{toml}"
    );
    for args in [
        &["up", "--headless"][..],
        &["up", "--headless", "--goal", "Add an option"],
        &["worker", "--name", "alice"],
    ] {
        let up = crew_with(repo.path(), nothing.path(), &[], "", args);
        assert_eq!(up.code, 3, "{args:?}: {}", up.stderr);
        assert!(
            up.stderr.contains("no model configured for")
                && up.stderr.contains("`crew demo` runs the simulator"),
            "{args:?}: {}",
            up.stderr
        );
    }
    assert!(!repo.join(".crew/agents").exists(), "nothing started");
    // A CLI asked for by name and not there: refused, nothing written.
    let repo = Repo::git();
    let run = crew_with(
        repo.path(),
        nothing.path(),
        &[],
        "",
        &["init", "--provider", "claude-code", "--yes"],
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("`claude` is not on PATH"),
        "{}",
        run.stderr
    );
    assert!(!repo.join("crew.toml").exists());
    // A key provider asked for by name is written, and the missing key named.
    let run = crew_with(
        repo.path(),
        nothing.path(),
        &[],
        "",
        &[
            "init",
            "--provider",
            "anthropic",
            "--model",
            "claude-opus-4-8",
            "--yes",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("warning: ANTHROPIC_API_KEY is not set; set it before `crew up`"),
        "{}",
        run.stdout
    );
    let want = "model = { provider = \"anthropic\", model = \"claude-opus-4-8\" }";
    let models = model_lines(repo.path());
    assert!(models.iter().all(|m| m == want), "{models:?}");
}

/// A repository whose team is the simulator's demo (as `crew demo` writes it).
fn demo_team(repo: &Repo) -> PathBuf {
    let text = std::fs::read_to_string(repo.join("crew.toml")).unwrap();
    let text = text.replace(
        "# No model yet; `crew up` refuses until there is one (the choices are under [lead]).",
        "model = { provider = \"scripted\", scenario = \"demo\" }",
    );
    let text = text.replacen(
        "# No model yet; `crew up` refuses until there is one. One of:",
        "model = { provider = \"scripted\", scenario = \"demo\" }\n#",
        1,
    );
    std::fs::write(repo.join("crew.toml"), text).unwrap();
    repo.join("crew.toml")
}

#[test]
fn the_demo_scenario_outside_the_demo_folder_or_with_a_goal_is_refused_and_says_simulator() {
    let repo = Repo::init();
    demo_team(&repo);
    let up = repo.crew(&["up", "--headless", "--goal", "Add an option to Options"]);
    assert_eq!(up.code, 3, "{}", up.stderr);
    assert!(
        up.stderr
            .contains("lead, alice, bob, carol would play crew's calculator demo")
            && up.stderr.contains("is not a folder `crew demo` made")
            && up.stderr.contains("--simulator"),
        "{}",
        up.stderr
    );
    assert!(!repo.join(".crew/agents").exists(), "nothing started");
    let status = repo.ok(&["status"]);
    assert!(
        status.contains("SIMULATOR: lead, alice, bob, carol played by crew's offline simulator"),
        "{status}"
    );
    let json = repo.json(&["status", "--json"]);
    assert_eq!(json["simulator"], true);
    assert_eq!(json["simulated_agents"].as_array().unwrap().len(), 4);
    // In a folder `crew demo` made, a goal of the person's is still refused: the demo ignores it.
    std::fs::create_dir_all(repo.join(".crew")).unwrap();
    std::fs::write(repo.join(".crew/demo-folder"), "").unwrap();
    let up = repo.crew(&["up", "--headless", "--goal", "Add an option to Options"]);
    assert_eq!(up.code, 3, "{}", up.stderr);
    assert!(up.stderr.contains("ignores --goal"), "{}", up.stderr);
    // A real team says nothing of the kind.
    let real = Repo::git();
    let bin = fake_bin(&[("claude", "2.1.197 (Claude Code)")]);
    assert_eq!(
        crew_with(real.path(), bin.path(), &[], "", &["init"]).code,
        0
    );
    let json = real.json(&["status", "--json"]);
    assert_eq!(json["simulator"], false);
    assert!(!real.ok(&["status"]).contains("SIMULATOR"));
}

#[test]
fn unknown_names_get_the_same_exit_code_from_worktree_diff_and_inbox() {
    let repo = Repo::init();
    let diff = repo.crew(&["worktree", "diff", "zed"]);
    let inbox = repo.crew(&["inbox", "zed"]);
    assert_eq!(diff.code, inbox.code, "{} / {}", diff.stderr, inbox.stderr);
    assert_eq!(diff.code, 3);
    assert!(diff.stderr.contains("zed"), "{}", diff.stderr);
}

#[test]
fn on_a_terminal_init_lists_what_it_found_and_takes_the_persons_choice() {
    let repo = Repo::git();
    let bin = fake_bin(&[
        ("claude", "2.1.197 (Claude Code)"),
        ("codex", "codex-cli 0.171.0"),
    ]);
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let mut screen = Screen::start_with_env(
        repo.path(),
        &["init"],
        &[
            ("PATH", Path::new(&path)),
            ("CREW_LOCAL_MODEL_PORTS", Path::new("")),
        ],
        160,
        30,
    );
    screen.wait_for("choice [1]:");
    let list = screen.text();
    assert!(
        list.contains("1) Claude Code 2.1.197") && list.contains("2) Codex 0.171.0"),
        "{list}"
    );
    screen.keys("7\r");
    screen.wait_for("a number from 1 to");
    screen.keys("2\r");
    screen.wait_exit();
    let said = screen.text();
    assert!(
        said.contains("chose: Codex 0.171.0") && said.contains("(your choice)"),
        "{said}"
    );
    let models = model_lines(repo.path());
    assert_eq!(
        models[0], "model = { provider = \"claude-code\" }",
        "the lead"
    );
    assert!(
        models[1..]
            .iter()
            .all(|m| m == "model = { provider = \"codex\" }"),
        "{models:?}"
    );
}
