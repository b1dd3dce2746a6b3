//! The pipeline end to end: find, schema, validation, hooks, permission, prompter, sandbox,
//! call, post hooks and the result budget.

mod tools_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crew::tools::hooks::{HookEvent, HookSpec, Hooks, StopDecision, StopGuard};
use crew::tools::permissions::{DecidedBy, Decision, PermissionMode};
use crew::tools::{DenyAll, Note, PermissionAnswer, PermissionAsk, Prompter, SandboxMode, sandbox};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tools_support::{Fixture, call, pipeline};

fn hook(event: HookEvent, matcher: Option<&str>, command: String, timeout_secs: u64) -> HookSpec {
    HookSpec {
        event,
        matcher: matcher.map(String::from),
        command,
        timeout_secs,
    }
}

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
async fn a_hook_allow_loses_to_a_deny_rule() {
    let fx = Fixture::new();
    fx.write("keep.txt", "x");
    let allow = fx.hook("allow.sh", r#"echo '{"permissionDecision": "allow"}'"#);
    let hooks = Hooks::new(vec![hook(HookEvent::PreToolUse, Some("bash"), allow, 10)]).unwrap();
    let p = pipeline(PermissionMode::Ask, &[], &["bash(rm:*)"]).with_hooks(hooks);
    let out = p
        .run(
            call("t1", "bash", json!({"command": "rm -f keep.txt"})),
            &fx.ctx,
        )
        .await;
    assert!(out.output.is_error);
    assert_eq!(
        out.decision.unwrap().decided_by,
        DecidedBy::DenyRule("bash(rm:*)".into())
    );
    assert!(fx.ws().join("keep.txt").exists());
    // Without a matching deny rule the hook's allow stands, even with no prompter.
    let out = p
        .run(call("t2", "bash", json!({"command": "echo ok"})), &fx.ctx)
        .await;
    assert_eq!(out.output.content, "ok\n");
    assert_eq!(out.decision.unwrap().decided_by, DecidedBy::Hook);
}

#[tokio::test]
async fn updated_input_reaches_the_tool_and_the_original_is_kept() {
    let fx = Fixture::new();
    let seen = fx.root().join("hook-stdin.json");
    let body = format!(
        "cat > {}\necho '{{\"updatedInput\": {{\"command\": \"echo rewritten\"}}, \"additionalContext\": \"ctx note\"}}'",
        seen.display()
    );
    let rewrite = fx.hook("rewrite.sh", &body);
    let hooks = Hooks::new(vec![hook(
        HookEvent::PreToolUse,
        Some("bash|write"),
        rewrite,
        10,
    )])
    .unwrap();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]).with_hooks(hooks);
    let out = p
        .run(
            call("t1", "bash", json!({"command": "echo original"})),
            &fx.ctx,
        )
        .await;
    assert_eq!(out.output.content, "rewritten\n");
    assert_eq!(out.original_input, json!({"command": "echo original"}));
    assert_eq!(out.effective_input, json!({"command": "echo rewritten"}));
    assert!(out.notes.contains(&Note::AdditionalContext {
        event: HookEvent::PreToolUse,
        text: "ctx note".into()
    }));
    let stdin: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(stdin["hook_event_name"], "PreToolUse");
    assert_eq!(stdin["tool_name"], "bash");
    assert_eq!(stdin["tool_input"], json!({"command": "echo original"}));
    assert_eq!(stdin["cwd"], json!(fx.ws()));
    assert_eq!(stdin["stop_hook_active"], false);
}

#[tokio::test]
async fn a_rewritten_input_is_checked_again() {
    let fx = Fixture::new();
    let escape = fx.hook(
        "escape.sh",
        r#"echo '{"updatedInput": {"path": "../escaped.txt", "content": "x"}}'"#,
    );
    let hooks = Hooks::new(vec![hook(HookEvent::PreToolUse, None, escape, 10)]).unwrap();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]).with_hooks(hooks);
    let out = p
        .run(
            call("t1", "write", json!({"path": "in.txt", "content": "x"})),
            &fx.ctx,
        )
        .await;
    assert!(
        out.output
            .content
            .contains("rewritten by a PreToolUse hook is invalid"),
        "{}",
        out.output.content
    );
    assert!(!fx.root().join("escaped.txt").exists());
}

#[tokio::test]
async fn broken_hooks_are_skipped_and_exit_2_blocks() {
    let fx = Fixture::new();
    let slow = fx.hook("slow.sh", "sleep 30");
    let failing = fx.hook("fail.sh", "echo '{\"decision\": \"block\"}'; exit 1");
    let garbage = fx.hook("garbage.sh", "echo 'not json'");
    let hooks = Hooks::new(vec![
        hook(HookEvent::PreToolUse, None, slow, 1),
        hook(HookEvent::PreToolUse, None, failing, 10),
        hook(HookEvent::PreToolUse, None, garbage, 10),
    ])
    .unwrap();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]).with_hooks(hooks);
    let out = p
        .run(call("t1", "bash", json!({"command": "echo ran"})), &fx.ctx)
        .await;
    assert_eq!(out.output.content, "ran\n");
    assert!(!out.output.is_error);

    let block = fx.hook("block.sh", "echo 'no bash on fridays' >&2; exit 2");
    let hooks = Hooks::new(vec![hook(HookEvent::PreToolUse, Some("bash"), block, 10)]).unwrap();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]).with_hooks(hooks);
    let out = p
        .run(
            call("t2", "bash", json!({"command": "touch made"})),
            &fx.ctx,
        )
        .await;
    assert_eq!(
        out.output.content,
        "blocked by PreToolUse hook: no bash on fridays"
    );
    assert!(!fx.ws().join("made").exists());
    // The matcher is a full-name regex: `bash` does not match `read`.
    fx.write("r.txt", "r");
    let out = p
        .run(call("t3", "read", json!({"path": "r.txt"})), &fx.ctx)
        .await;
    assert!(!out.output.is_error);
}

#[tokio::test]
async fn post_hooks_see_failures_and_add_notes() {
    let fx = Fixture::new();
    let seen = fx.root().join("post.json");
    let body = format!(
        "cat > {}\necho '{{\"decision\": \"block\", \"reason\": \"fix the build\", \"systemMessage\": \"build broke\"}}'",
        seen.display()
    );
    let post = fx.hook("post.sh", &body);
    let hooks = Hooks::new(vec![hook(HookEvent::PostToolUseFailure, None, post, 10)]).unwrap();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]).with_hooks(hooks);
    let ok = p
        .run(call("t1", "bash", json!({"command": "true"})), &fx.ctx)
        .await;
    assert!(
        ok.notes.is_empty(),
        "PostToolUseFailure must not run on success"
    );
    let failed = p
        .run(call("t2", "bash", json!({"command": "exit 1"})), &fx.ctx)
        .await;
    assert!(failed.notes.contains(&Note::HookFeedback {
        event: HookEvent::PostToolUseFailure,
        text: "fix the build".into()
    }));
    assert!(failed.notes.contains(&Note::SystemMessage {
        event: HookEvent::PostToolUseFailure,
        text: "build broke".into()
    }));
    let stdin: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(stdin["tool_response"]["is_error"], true);
}

#[tokio::test]
async fn stop_hooks_cannot_loop() {
    let fx = Fixture::new();
    let log = fx.root().join("stop.log");
    let body = format!(
        "cat >> {}\necho >> {}\necho '{{\"decision\": \"block\", \"reason\": \"tests are red\"}}'",
        log.display(),
        log.display()
    );
    let stop = fx.hook("stop.sh", &body);
    let hooks = Hooks::new(vec![hook(HookEvent::Stop, None, stop, 10)]).unwrap();
    let mut guard = StopGuard::new();
    let first = hooks.run_stop(&mut guard, fx.ws(), &fx.ctx.cancel).await;
    assert_eq!(
        first,
        StopDecision::Continue {
            reason: "tests are red".into(),
            notes: vec![]
        }
    );
    let second = hooks.run_stop(&mut guard, fx.ws(), &fx.ctx.cancel).await;
    assert!(
        matches!(second, StopDecision::Stop { ref notes } if matches!(notes.as_slice(), [Note::Warning { .. }])),
        "{second:?}"
    );
    let runs: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["stop_hook_active"], false);
    assert_eq!(runs[1]["stop_hook_active"], true);
    assert_eq!(runs[1]["hook_event_name"], "Stop");
    // A new turn gets a new guard, and with it one more forced continuation.
    let third = hooks
        .run_stop(&mut StopGuard::new(), fx.ws(), &fx.ctx.cancel)
        .await;
    assert!(matches!(third, StopDecision::Continue { .. }));
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
async fn sandbox_runs_commands_in_namespaces_or_says_why_not() {
    let mut fx = Fixture::new();
    fx.ctx.sandbox = SandboxMode::Namespaces;
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]);
    let out = p
        .run(call("t1", "bash", json!({"command": "id -u"})), &fx.ctx)
        .await;
    if sandbox::namespaces_available() {
        // Inside the user namespace we are mapped to root.
        assert_eq!(out.output.content, "0\n");
        assert!(out.notes.is_empty());
    } else {
        assert!(!out.output.is_error);
        assert!(
            matches!(out.notes.as_slice(), [Note::Warning { .. }]),
            "{:?}",
            out.notes
        );
    }
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
