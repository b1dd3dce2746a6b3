//! Issue 9's bash bypasses, end to end: a scripted teammate in a real `crew worker` runs them
//! under the rules `crew init` ships while nobody answers (every ask expires into a denial,
//! as with `--approve deny`). No marker file appears, `victim/` survives, and the requests
//! and the task result say why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_config::init_template;

/// The `[permissions]` lines of the template, comments dropped.
fn template_permissions() -> String {
    let template = init_template("test", "main", &Default::default());
    template
        .lines()
        .skip_while(|l| *l != "[permissions]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_issues_bypasses_fail_under_the_template_rules() {
    let permissions = template_permissions();
    assert!(permissions.contains("bash(git diff:*)"), "{permissions}");
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        &permissions,
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 1",
    );
    let team = Team::new(
        &toml,
        "test_bash_bypass.toml",
        &[("victim/keep.txt", "keep me\n")],
    );
    let mut alice = team.worker("alice");
    team.repo.ok(&["task", "add", "try every bypass"]);

    let done = team.wait_task("task_1", "completed", Duration::from_secs(120));
    let result = done["result"].as_str().unwrap().to_string();
    let worktree = team.repo.join(".worktrees/alice");
    for marker in [
        "marker_redirect",
        "marker_output",
        "marker_extdiff",
        "marker_envdiff",
        "marker_fsmonitor",
        "marker_param",
        "marker_arith",
        "marker_pager",
        "marker_c",
    ] {
        assert!(
            !worktree.join(marker).exists(),
            "{marker} was created: {result}"
        );
    }
    assert!(
        worktree.join("victim/keep.txt").exists(),
        "victim/ was deleted: {result}"
    );
    // The allowed form still ran: the rules are in force, not merely broken.
    assert!(result.contains("On branch"), "{result}");
    // The deny rule names itself and the command it caught, nested or respelled.
    for caught in ["`rm -rf victim`", "`rm -fr victim`", "`rm -r -f victim`"] {
        assert!(
            result.contains(&format!("denied by rule `bash(rm -rf:*)` ({caught})")),
            "{caught}: {result}"
        );
    }
    // Every other bypass asked, saying why, and the unanswered ask was a denial.
    let asked: Vec<String> = team
        .requests()
        .iter()
        .filter(|r| r["type"] == "permission_request")
        .map(|r| {
            assert_eq!(r["state"], "expired", "{r}");
            r["text"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    for why in [
        "`> marker_redirect` writes to a file",
        "`git diff` with `--output=marker_output` writes its output to a file",
        "`GIT_EXTERNAL_DIFF=…` before the command changes how it runs",
        "`env GIT_EXTERNAL_DIFF=…` changes how the command runs",
        "`GIT_CONFIG_COUNT=…` before the command changes how it runs",
        "`${X:-$(touch marker_param)}` runs a command inside the line",
        "could not parse the command",
        "`-c` before the subcommand",
    ] {
        assert!(
            asked.iter().any(|text| text.contains(why)),
            "no request says `{why}`: {asked:#?}"
        );
    }
    assert_eq!(asked.len(), 8, "{asked:#?}");
    assert!(result.matches("denied").count() >= 11, "{result}");

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}
