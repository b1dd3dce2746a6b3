//! `crew skills list` (where each skill came from, which wins a clash, broken ones named) and
//! `crew memory list | show` (read-only, stale memories marked), from the person's terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::Command;

use crate::support::{Repo, Run, crew_exe};

fn skill(root: &std::path::Path, folder: &str, text: &str) {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
}

/// crew with the person's configuration folder at `config` (so the user's own skills are known).
fn crew_with_config(repo: &Repo, config: &std::path::Path, args: &[&str]) -> Run {
    Command::new(crew_exe())
        .args(args)
        .current_dir(repo.path())
        .env("XDG_CONFIG_HOME", config)
        .output()
        .unwrap()
        .into()
}

#[test]
fn skills_list_says_where_each_came_from_and_which_wins() {
    let repo = Repo::init();
    let config = tempfile::tempdir().unwrap();
    let root = repo.path();
    skill(
        root,
        ".crew/skills/deploy",
        "---\nname: deploy\ndescription: Deploy with our script\n---\nbody",
    );
    skill(
        root,
        ".claude/skills/deploy",
        "---\nname: deploy\ndescription: Claude's deploy\n---\nbody",
    );
    skill(
        root,
        ".claude/skills/pdf",
        "---\nname: pdf\ndescription: Read PDFs\nallowed-tools: Read\n---\nbody",
    );
    skill(
        config.path(),
        "crew/skills/alpha",
        "---\ndescription: The person's own\n---\nbody",
    );

    let run = crew_with_config(&repo, config.path(), &["skills", "list"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    assert_eq!(
        lines[0],
        format!("{:<24} {:<15} {}", "alpha", "user", "The person's own")
    );
    assert_eq!(
        lines[1],
        format!(
            "{:<24} {:<15} {}",
            "deploy", ".crew/skills", "Deploy with our script"
        )
    );
    assert_eq!(
        lines[2],
        format!("{:<24} {:<15} {}", "pdf", ".claude/skills", "Read PDFs")
    );
    assert!(
        lines[3].starts_with(&format!(
            "{:<24} {:<15} (shadowed: the .crew/skills skill of that name wins)",
            "deploy", ".claude/skills"
        )),
        "{}",
        lines[3]
    );

    let json: serde_json::Value = serde_json::from_str(
        &crew_with_config(&repo, config.path(), &["skills", "list", "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(json["skills"][1]["source"], ".crew/skills");
    assert_eq!(json["shadowed"][0]["shadowed_by"], ".crew/skills");

    // Bad front matter: named by file and field, the rest still listed, exit 3.
    skill(
        root,
        ".claude/skills/broken",
        "---\nname: broken\ndescription: [unclosed\n---\n",
    );
    let run = crew_with_config(&repo, config.path(), &["skills", "list"]);
    assert_eq!(run.code, 3);
    assert!(run.stdout.contains("pdf"));
    assert!(
        run.stderr
            .contains(".claude/skills/broken/SKILL.md: front matter:"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("1 skill folder(s) could not be read"));
}

#[test]
fn memory_list_and_show_are_read_only_views_with_stale_marks() {
    let repo = Repo::init();
    let dir = repo.join(".crew/memory/alice");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("parser.md"),
        "---\nname: parser\ndescription: where the parser lives\ntype: reference\n---\n\nIn `src/parser.rs`.\n",
    )
    .unwrap();
    let out = repo.ok(&["memory", "list", "--agent", "alice"]);
    assert!(out.contains("alice's memory ("), "{out}");
    assert!(
        out.contains("- parser (reference): where the parser lives [STALE: names `src/parser.rs` which no longer exists; verify before use]"),
        "{out}"
    );
    assert!(out.contains("the team's memory (") && out.contains("(none)"));
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/parser.rs"), "").unwrap();
    assert!(
        !repo
            .ok(&["memory", "list", "--agent", "alice"])
            .contains("STALE")
    );
    let shown = repo.ok(&["memory", "show", "parser", "--agent", "alice"]);
    assert!(shown.ends_with("In `src/parser.rs`.\n"), "{shown}");

    let json = repo.json(&["memory", "list", "--agent", "alice", "--json"]);
    assert_eq!(json["memories"][0]["type"], "reference");
    assert_eq!(json["memories"][0]["scope"], "agent");

    let unknown = repo.crew(&["memory", "list", "--agent", "mallory"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("no agent named \"mallory\""),
        "{}",
        unknown.stderr
    );
    let missing = repo.crew(&["memory", "show", "nothing", "--agent", "alice"]);
    assert_eq!(missing.code, 3);
    let escape = repo.crew(&["memory", "show", "../../../etc/passwd", "--agent", "alice"]);
    assert_ne!(escape.code, 0);
    assert!(
        escape.stderr.contains("invalid memory name"),
        "{}",
        escape.stderr
    );
}
