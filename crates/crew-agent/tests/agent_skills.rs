//! Skills through the loop: a Claude Code skill in `.claude/skills/` is in the static prompt's
//! catalogue (sorted, byte-stable), `skill_load` brings its body and the list of its files, a
//! file on request, and refuses paths that leave the skill's folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_test_support::agent::{Build, Repo, assert_completed, scenario, turn};
use crew_test_support::tools::policy;
use crew_tools::permissions::PermissionMode;
use crew_tools::{Pipeline, SkillCatalogue, ToolRegistry, memory_tools, skill_tools};

fn pipeline() -> Pipeline {
    let mut registry = ToolRegistry::core_tools().unwrap();
    for tool in skill_tools().into_iter().chain(memory_tools()) {
        registry.register(tool).unwrap();
    }
    Pipeline::new(registry, policy(PermissionMode::Ask, &[], &[], &[]))
}

/// A skill as Claude Code writes one: front matter with fields crew does not use, a body,
/// a reference file and a script beside it.
fn claude_skill(repo: &Repo) {
    let dir = repo.root.join(".claude/skills/pdf");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: pdf\ndescription: Extract text and tables from PDF files. Use when the user \
         mentions PDFs.\nallowed-tools: Read, Bash(python:*)\nlicense: Apache-2.0\n---\n\n# PDF\n\n\
         Run `scripts/extract.py FILE`; see reference.md for tables.\n",
    )
    .unwrap();
    std::fs::write(dir.join("reference.md"), "Tables: use pdfplumber.").unwrap();
    std::fs::write(dir.join("scripts/extract.py"), "print('x')").unwrap();
    std::fs::write(repo.root.join(".claude/secret.txt"), "TOP SECRET").unwrap();
}

fn last_result(agent: &crew_agent::Agent) -> (String, bool) {
    let message = agent.history().last().unwrap();
    let history = agent.history();
    let results = history
        .iter()
        .rev()
        .find(|m| !m.tool_results().is_empty())
        .unwrap_or(message)
        .tool_results();
    (results[0].1.to_string(), results[0].2)
}

#[tokio::test]
async fn a_claude_code_skill_is_catalogued_and_loaded_on_demand() {
    let repo = Repo::new();
    claude_skill(&repo);
    let (mut agent, _rx) = Build::new("alice", scenario("agent_memory"))
        .pipeline(pipeline())
        .agent(&repo);
    let prefix = agent.static_prefix().to_string();
    assert!(
        prefix.contains(
            "# Skills\nSkills are instructions for particular jobs. When your work matches one \
             below, call skill_load with its name first and follow what it says.\n- pdf: Extract \
             text and tables from PDF files. Use when the user mentions PDFs.\n\n# Tools"
        ),
        "{prefix}"
    );
    assert!(
        !prefix.contains("pdfplumber"),
        "bodies are not in the prompt"
    );

    let result = turn(&mut agent, "load the pdf skill").await;
    assert_completed(&result);
    assert!(result.permission_denials.is_empty());
    let (content, is_error) = last_result(&agent);
    assert!(!is_error, "{content}");
    assert!(
        content.starts_with("# Skill pdf (from .claude/skills)\n\n# PDF"),
        "{content}"
    );
    assert!(
        content.ends_with(
            "# Files of this skill (load one with skill_load and `file`)\n- reference.md\n- scripts/extract.py"
        ),
        "{content}"
    );

    assert_completed(&turn(&mut agent, "load the pdf reference").await);
    assert_eq!(
        last_result(&agent),
        ("Tables: use pdfplumber.".to_string(), false)
    );

    assert_completed(&turn(&mut agent, "escape the skill").await);
    let (content, is_error) = last_result(&agent);
    assert!(is_error);
    assert!(content.contains("without `..`"), "{content}");
    assert!(!content.contains("TOP SECRET"));

    // The prefix is the same for the next agent: the catalogue is sorted and stable.
    let (again, _rx) = Build::new("alice", scenario("agent_memory"))
        .pipeline(pipeline())
        .agent(&repo);
    assert_eq!(again.static_prefix(), prefix);
    assert_eq!(again.prefix_fingerprint(), agent.prefix_fingerprint());
}

#[tokio::test]
async fn a_link_out_of_the_skill_folder_is_refused() {
    let repo = Repo::new();
    claude_skill(&repo);
    std::os::unix::fs::symlink(
        repo.root.join(".claude/secret.txt"),
        repo.root.join(".claude/skills/pdf/notes.md"),
    )
    .unwrap();
    let folders = SkillCatalogue::folders(&repo.root, None);
    let ctx = crew_tools::ToolContext {
        skills: std::sync::Arc::new(SkillCatalogue::discover(&folders)),
        ..crew_tools::ToolContext::new(&repo.root, repo.root.join(".crew/tool-results"))
    };
    let outcome =
        agent_pipeline_run(&ctx, serde_json::json!({"name": "pdf", "file": "notes.md"})).await;
    assert!(outcome.0, "{}", outcome.1);
    assert!(
        outcome.1.contains("outside the skill's folder"),
        "{}",
        outcome.1
    );
    assert!(!outcome.1.contains("TOP SECRET"));
}

async fn agent_pipeline_run(
    ctx: &crew_tools::ToolContext,
    input: serde_json::Value,
) -> (bool, String) {
    let outcome = pipeline()
        .run(
            crew_tools::ToolCall {
                id: "t".into(),
                name: "skill_load".into(),
                input,
            },
            ctx,
        )
        .await;
    (outcome.output.is_error, outcome.output.content)
}
