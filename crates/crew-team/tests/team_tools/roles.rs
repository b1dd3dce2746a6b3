//! Each role's toolset, and the read-only bash the non-writing roles get.

use crew_team::tools::roles::toolset;
use crew_tools::{ToolJson, ToolRegistry};
use serde_json::json;

use super::support::{Team, run};

const TEAMMATE_TOOLS: [&str; 12] = [
    "todo_write",
    "todo_read",
    "memory_write",
    "memory_read",
    "memory_forget",
    "skill_load",
    "task_list",
    "task_get",
    "task_update",
    "claim_task",
    "send_message",
    "request_plan_approval",
];

fn tools_of(team: &Team, role: &str, writes: bool, plan_approved: bool) -> ToolRegistry {
    toolset(role, writes, plan_approved, team.env("alice"), &[]).unwrap()
}

fn names(registry: &ToolRegistry) -> Vec<String> {
    registry.names().into_iter().map(String::from).collect()
}

fn with_team_tools(files: &[&str]) -> Vec<String> {
    files
        .iter()
        .chain(TEAMMATE_TOOLS.iter())
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn each_role_gets_exactly_its_tools_in_a_stable_order() {
    let team = Team::new();
    assert_eq!(
        names(&tools_of(&team, "lead", true, true)),
        [
            "read",
            "glob",
            "grep",
            "todo_write",
            "todo_read",
            "memory_write",
            "memory_read",
            "memory_forget",
            "skill_load",
            "task_create",
            "task_list",
            "task_get",
            "task_update",
            "send_message",
            "request_shutdown",
            "review_plan",
        ]
    );
    let read_only = with_team_tools(&["read", "glob", "grep", "bash"]);
    for role in ["explorer", "planner", "reviewer"] {
        assert_eq!(
            names(&tools_of(&team, role, false, true)),
            read_only,
            "{role}"
        );
        assert_eq!(
            names(&tools_of(&team, role, true, true)),
            read_only,
            "{role}: the role decides, not the writes flag"
        );
    }
    assert_eq!(
        names(&tools_of(&team, "implementer", true, true)),
        with_team_tools(&["read", "write", "edit", "glob", "grep", "bash"])
    );
    assert_eq!(
        names(&tools_of(&team, "implementer", false, true)),
        read_only,
        "an implementer that may not write"
    );
    assert_eq!(
        names(&tools_of(&team, "wizard", true, true)),
        read_only,
        "an unknown role gets the least"
    );
    let same_again = tools_of(&team, "implementer", true, true).definitions();
    assert_eq!(
        same_again,
        tools_of(&team, "implementer", true, true).definitions()
    );
}

#[test]
fn no_role_can_start_agents() {
    let team = Team::new();
    for role in ["lead", "explorer", "planner", "reviewer", "implementer"] {
        let names = names(&tools_of(&team, role, true, true));
        assert!(
            !names
                .iter()
                .any(|n| n.contains("spawn") || n.contains("agent") || n.contains("start")),
            "{role}: {names:?}"
        );
    }
}

#[tokio::test]
async fn a_plan_mode_implementer_writes_only_after_approval() {
    let team = Team::new();
    let ctx = team.ctx();
    let planning = tools_of(&team, "implementer", true, false);
    assert!(planning.get("write").is_none());
    assert!(planning.get("edit").is_none());
    assert!(planning.get("request_plan_approval").is_some());
    let bash = planning.get("bash").unwrap();
    let write = json!({"command": "echo hi > f.txt"});
    assert!(run(bash.as_ref(), write.clone(), &ctx).await.is_error);
    assert!(!team.dir.path().join("f.txt").exists());

    let approved = tools_of(&team, "implementer", true, true);
    assert!(approved.get("write").is_some());
    assert!(approved.get("edit").is_some());
    let bash = approved.get("bash").unwrap();
    let out = run(bash.as_ref(), write, &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(team.dir.path().join("f.txt").exists());
}

#[tokio::test]
async fn a_reviewers_bash_runs_only_reading_commands_and_the_test_command() {
    let team = Team::new();
    let ctx = team.ctx();
    let extra = vec!["cargo test".to_string()];
    let registry = toolset("reviewer", false, true, team.env("bob"), &extra).unwrap();
    let bash = registry.get("bash").unwrap();
    let refused = [
        (
            "rm -rf x",
            "read-only bash: `rm -rf x` is not a read-only command",
        ),
        (
            "echo hi > f",
            "read-only bash: `echo`: `> f` writes to a file",
        ),
        (
            "cargo build && rm x",
            "read-only bash: `cargo build` is not a read-only command",
        ),
        (
            "git diff | sh -c 'rm -rf /'",
            "read-only bash: `rm -rf /` is not a read-only command",
        ),
        (
            "ls $(rm -rf x)",
            "read-only bash: `rm -rf x` is not a read-only command",
        ),
        ("ls | tee f", "read-only bash: `tee`: `tee f` writes a file"),
        (
            "cargo test; git push",
            "read-only bash: `git push` is not a read-only command",
        ),
    ];
    for (command, reason) in refused {
        let out = run(bash.as_ref(), json!({"command": command}), &ctx).await;
        assert!(out.is_error, "{command}");
        assert_eq!(out.content, reason, "{command}");
        let direct = bash
            .call_json(&json!({"command": command}), ctx.clone())
            .await;
        assert!(direct.is_err(), "the call itself refuses too: {command}");
    }
    for command in [
        "ls",
        "git diff",
        "git diff --stat HEAD~1 | head -5",
        "cargo test",
        "cargo test --lib team 2>&1",
    ] {
        assert_eq!(
            bash.validate_json(&json!({"command": command}), &ctx),
            Ok(()),
            "{command}"
        );
    }
    std::fs::write(team.dir.path().join("seen.txt"), "x").unwrap();
    let listed = run(bash.as_ref(), json!({"command": "ls"}), &ctx).await;
    assert!(!listed.is_error, "{}", listed.content);
    assert!(listed.content.contains("seen.txt"), "{}", listed.content);

    let without_extra = tools_of(&team, "reviewer", false, true);
    let plain = without_extra.get("bash").unwrap();
    assert_eq!(
        plain.validate_json(&json!({"command": "cargo test"}), &ctx),
        Err("read-only bash: `cargo test` is not a read-only command".to_string())
    );
}

#[tokio::test]
async fn through_the_pipeline_a_refusal_reaches_the_model_with_the_stores_words() {
    use crew_tools::permissions::{BypassSwitches, RuleSet};
    use crew_tools::{PermissionMode, PermissionPolicy, Pipeline, ToolCall};

    let team = Team::new();
    let ctx = team.ctx();
    let rules = RuleSet {
        allow: vec!["claim_task".into(), "task_create".into()],
        ..RuleSet::default()
    };
    let policy =
        || PermissionPolicy::new(PermissionMode::Ask, &rules, BypassSwitches::default()).unwrap();
    let lead = Pipeline::new(
        toolset("lead", false, true, team.env("lead"), &[]).unwrap(),
        policy(),
    );
    let call = |name: &str, input| ToolCall {
        id: "call_1".into(),
        name: name.into(),
        input,
    };
    let created = lead
        .run(call("task_create", json!({"subject": "a"})), &ctx)
        .await;
    assert!(!created.output.is_error, "{}", created.output.content);
    let claim = call("claim_task", json!({"id": "task_1"}));
    assert!(
        lead.run(claim.clone(), &ctx)
            .await
            .output
            .content
            .contains("unknown tool `claim_task`"),
        "the lead has no claim_task"
    );
    let alice = Pipeline::new(
        toolset("implementer", true, true, team.env("alice"), &[]).unwrap(),
        policy(),
    );
    let bob = Pipeline::new(
        toolset("reviewer", false, true, team.env("bob"), &[]).unwrap(),
        policy(),
    );
    assert!(!alice.run(claim.clone(), &ctx).await.output.is_error);
    let refused = bob.run(claim, &ctx).await.output;
    assert!(refused.is_error);
    assert_eq!(refused.content, "task_1 is already claimed by alice");
}
