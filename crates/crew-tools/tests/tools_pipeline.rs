//! The pipeline end to end: find, schema, validation, permission, prompter, sandbox, call
//! and the result budget (hooks are in tools_hooks.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crew_test_support::tools::{Fixture, call, pipeline};
use crew_tools::permissions::{DecidedBy, Decision, PermissionMode};
use crew_tools::{DenyAll, Note, PermissionAnswer, PermissionAsk, Prompter};
use futures::future::BoxFuture;
use serde_json::json;

#[tokio::test]
async fn schema_errors_name_the_field_and_stop_the_call() {
    let fx = Fixture::new();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]);
    let out = p.run(call("t1", "read", json!({"path": 5})), &fx.ctx).await;
    assert!(out.output.is_error);
    assert!(
        out.output.content.contains("field `path`"),
        "{}",
        out.output.content
    );
    assert_eq!(
        out.decision, None,
        "no permission step after a schema error"
    );
    let missing = p
        .run(call("t2", "write", json!({"path": "x"})), &fx.ctx)
        .await;
    assert!(
        missing.output.content.contains("\"content\""),
        "{}",
        missing.output.content
    );
    assert!(!fx.ws().join("x").exists());
}

#[tokio::test]
async fn unknown_tools_and_validation_refusals_are_error_results() {
    let fx = Fixture::new();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]);
    let out = p.run(call("t1", "deploy", json!({})), &fx.ctx).await;
    assert!(out.output.is_error);
    assert!(out.output.content.contains("unknown tool `deploy`"));
    assert!(
        out.output
            .content
            .contains("read, write, edit, glob, grep, bash")
    );
    let out = p
        .run(call("t2", "bash", json!({"command": "  "})), &fx.ctx)
        .await;
    assert!(
        out.output
            .content
            .contains("`bash` refused the input: command is empty"),
        "{}",
        out.output.content
    );
    let out = p
        .run(
            call("t3", "write", json!({"path": "../x", "content": ""})),
            &fx.ctx,
        )
        .await;
    assert!(
        out.output.content.contains("outside the workspace"),
        "{}",
        out.output.content
    );
}

#[tokio::test]
async fn deny_rules_and_missing_prompters_deny() {
    let fx = Fixture::new();
    let p = pipeline(PermissionMode::Ask, &[], &["write(secrets/**)"]);
    let out = p
        .run(
            call("t1", "write", json!({"path": "secrets/a", "content": "x"})),
            &fx.ctx,
        )
        .await;
    assert!(
        out.output
            .content
            .starts_with("permission denied: denied by rule `write(secrets/**)`")
    );
    assert_eq!(
        out.decision.unwrap().decided_by,
        DecidedBy::DenyRule("write(secrets/**)".into())
    );
    // Ask mode with nobody to ask: denied, never allowed by accident.
    let out = p
        .run(
            call("t2", "write", json!({"path": "a", "content": "x"})),
            &fx.ctx,
        )
        .await;
    assert!(out.output.is_error);
    assert_eq!(out.decision.unwrap().decided_by, DecidedBy::NoPrompter);
    assert!(!fx.ws().join("a").exists());
    let p = pipeline(PermissionMode::Ask, &[], &[]).with_prompter(Arc::new(DenyAll));
    let out = p
        .run(
            call("t3", "write", json!({"path": "a", "content": "x"})),
            &fx.ctx,
        )
        .await;
    assert!(matches!(out.decision.unwrap().decision, Decision::Deny(_)));
    assert!(!fx.ws().join("a").exists());
}

struct Scripted {
    asks: AtomicUsize,
    answer: PermissionAnswer,
}

impl Prompter for Scripted {
    fn ask(&self, req: PermissionAsk) -> BoxFuture<'static, PermissionAnswer> {
        assert_eq!(req.tool, "bash");
        self.asks.fetch_add(1, Ordering::SeqCst);
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn allow_always_answers_are_remembered() {
    let fx = Fixture::new();
    let prompter = Arc::new(Scripted {
        asks: AtomicUsize::new(0),
        answer: PermissionAnswer::AllowAlways("bash(echo:*)".into()),
    });
    let p = pipeline(PermissionMode::Ask, &[], &[]).with_prompter(prompter.clone());
    let first = p
        .run(call("t1", "bash", json!({"command": "echo one"})), &fx.ctx)
        .await;
    assert_eq!(first.output.content, "one\n");
    assert_eq!(first.decision.unwrap().decided_by, DecidedBy::Prompter);
    let second = p
        .run(call("t2", "bash", json!({"command": "echo two"})), &fx.ctx)
        .await;
    assert_eq!(second.output.content, "two\n");
    assert_eq!(
        second.decision.unwrap().decided_by,
        DecidedBy::AllowRule("bash(echo:*)".into())
    );
    assert_eq!(prompter.asks.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn huge_output_is_spilled_and_reading_it_back_is_not() {
    let fx = Fixture::new();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]);
    let ten_mb = json!({"command": "head -c 10000000 /dev/zero | tr '\\0' 'x'"});
    let out = p.run(call("toolu_big", "bash", ten_mb), &fx.ctx).await;
    let spilled = out.spilled.clone().expect("10 MB must spill");
    assert_eq!(spilled, fx.root().join(".crew/tool-results/toolu_big.txt"));
    assert_eq!(std::fs::metadata(&spilled).unwrap().len(), 10_000_000);
    assert!(out.output.content.len() < 5_000, "preview only");
    assert!(out.output.content.starts_with("xxxx"));
    assert!(out.output.content.contains(&spilled.display().to_string()));
    assert!(out.output.content.contains("10000000 bytes"));

    let back = p
        .run(
            call(
                "toolu_back",
                "read",
                json!({"path": spilled.to_str().unwrap(), "limit": 5}),
            ),
            &fx.ctx,
        )
        .await;
    assert!(!back.output.is_error, "{}", back.output.content);
    assert_eq!(back.spilled, None);
    assert!(back.output.content.starts_with("     1\txxx"));
    assert!(!fx.root().join(".crew/tool-results/toolu_back.txt").exists());
}

#[tokio::test]
async fn without_a_working_sandbox_no_rule_or_mode_runs_a_command_unasked() {
    // The only test of this binary that probes: the helper is missing, so the sandbox is
    // unavailable for this whole process.
    let mut fx = Fixture::new();
    fx.ctx.sandbox = crew_tools::Sandbox {
        helper: fx.root().join("no-such-crew"),
        ..crew_tools::Sandbox::new(crew_tools::SandboxMode::Auto, false, true)
    };
    let p = pipeline(PermissionMode::WorkspaceWrite, &["bash(touch made)"], &[]);
    let denied = p
        .run(
            call("t1", "bash", json!({"command": "touch made"})),
            &fx.ctx,
        )
        .await;
    assert!(denied.output.is_error);
    let text = &denied.output.content;
    assert!(text.contains("the sandbox is unavailable here"), "{text}");
    assert!(text.contains("no one is there to ask"), "{text}");
    assert!(!fx.ws().join("made").exists());

    let prompter = Arc::new(Scripted {
        asks: AtomicUsize::new(0),
        answer: PermissionAnswer::Allow,
    });
    let p = pipeline(PermissionMode::WorkspaceWrite, &["bash(touch made)"], &[])
        .with_prompter(prompter.clone());
    let approved = p
        .run(
            call("t2", "bash", json!({"command": "touch made"})),
            &fx.ctx,
        )
        .await;
    assert!(!approved.output.is_error, "{}", approved.output.content);
    assert!(fx.ws().join("made").exists());
    assert_eq!(
        prompter.asks.load(Ordering::SeqCst),
        1,
        "the person was asked"
    );
    match approved.notes.as_slice() {
        [Note::Warning { text }] => assert!(text.contains("sandbox unavailable"), "{text}"),
        notes => panic!("expected one warning, got {notes:?}"),
    }

    // Under dont-ask that ask is a denial, and the prompter is never asked.
    let p = pipeline(PermissionMode::DontAsk, &["bash(touch again)"], &[])
        .with_prompter(prompter.clone());
    let refused = p
        .run(
            call("t3", "bash", json!({"command": "touch again"})),
            &fx.ctx,
        )
        .await;
    assert!(refused.output.is_error);
    let text = &refused.output.content;
    assert!(
        text.contains("dont-ask mode denies what would ask"),
        "{text}"
    );
    assert!(text.contains("the sandbox is unavailable here"), "{text}");
    assert!(!fx.ws().join("again").exists());
    assert_eq!(prompter.asks.load(Ordering::SeqCst), 1, "not asked again");
}

#[tokio::test]
async fn a_cancelled_context_runs_nothing() {
    let fx = Fixture::new();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]);
    fx.ctx.cancel.cancel();
    let out = p
        .run(
            call("t1", "bash", json!({"command": "touch made"})),
            &fx.ctx,
        )
        .await;
    assert!(out.output.is_error);
    assert!(out.output.content.contains("cancelled"));
    assert!(!fx.ws().join("made").exists());
}
