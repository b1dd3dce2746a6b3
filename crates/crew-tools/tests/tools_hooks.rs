//! Hooks through the pipeline: permission decisions against deny rules, rewritten input,
//! broken hooks skipped, exit code 2, post-tool notes, and the Stop-hook loop guard.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_test_support::tools::{Fixture, call, pipeline};
use crew_tools::Note;
use crew_tools::hooks::{HookEvent, HookSpec, Hooks, StopDecision, StopGuard};
use crew_tools::permissions::{DecidedBy, PermissionMode};
use serde_json::{Value, json};

fn hook(event: HookEvent, matcher: Option<&str>, command: String, timeout_secs: u64) -> HookSpec {
    HookSpec {
        event,
        matcher: matcher.map(String::from),
        command,
        timeout_secs,
    }
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
        matches!(second, StopDecision::Stop { ref notes, halt: None } if matches!(notes.as_slice(), [Note::Warning { .. }])),
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

/// Notification hooks run when the agent is about to wait for a person, with the type (also
/// what matchers see) and a message; with no one to ask, no notification is sent.
#[tokio::test]
async fn a_notification_hook_runs_before_a_permission_request() {
    let fx = Fixture::new();
    let seen = fx.root().join("notification.json");
    let notify = fx.hook("notify.sh", &format!("cat > {}", seen.display()));
    let hooks = Hooks::new(vec![hook(
        HookEvent::Notification,
        Some("permission_prompt"),
        notify,
        10,
    )])
    .unwrap();
    let quiet = pipeline(PermissionMode::Ask, &[], &[]).with_hooks(hooks.clone());
    quiet
        .run(call("t1", "bash", json!({"command": "touch x"})), &fx.ctx)
        .await;
    assert!(!seen.exists(), "nobody to ask, nobody to notify");
    let p = pipeline(PermissionMode::Ask, &[], &[])
        .with_hooks(hooks)
        .with_prompter(std::sync::Arc::new(crew_tools::prompter::DenyAll));
    let out = p
        .run(call("t2", "bash", json!({"command": "touch x"})), &fx.ctx)
        .await;
    assert!(out.output.is_error);
    let stdin: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(stdin["hook_event_name"], "Notification");
    assert_eq!(stdin["notification_type"], "permission_prompt");
    assert_eq!(stdin["tool_name"], "bash");
    assert!(
        stdin["message"]
            .as_str()
            .unwrap()
            .starts_with("permission needed to use bash"),
        "{stdin}"
    );
}

/// `continue: false` around a tool call: from PreToolUse the call does not run, from
/// PostToolUse it has run; either way the outcome carries the hook's `stopReason`.
/// `suppressOutput` keeps a `systemMessage` out of the notes.
#[tokio::test]
async fn continue_false_halts_and_suppress_output_hides_the_message() {
    let fx = Fixture::new();
    let halt = fx.hook(
        "halt.sh",
        r#"echo '{"continue": false, "stopReason": "budget day", "systemMessage": "hidden", "suppressOutput": true}'"#,
    );
    let hooks = Hooks::new(vec![hook(HookEvent::PreToolUse, None, halt.clone(), 10)]).unwrap();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]).with_hooks(hooks);
    let out = p
        .run(call("t1", "bash", json!({"command": "touch pre"})), &fx.ctx)
        .await;
    assert_eq!(out.halt.as_deref(), Some("budget day"));
    assert!(out.output.is_error);
    assert!(!fx.ws().join("pre").exists());
    assert!(out.notes.is_empty(), "{:?}", out.notes);

    let hooks = Hooks::new(vec![hook(HookEvent::PostToolUse, None, halt, 10)]).unwrap();
    let p = pipeline(PermissionMode::WorkspaceWrite, &[], &[]).with_hooks(hooks);
    let out = p
        .run(
            call("t2", "bash", json!({"command": "touch post"})),
            &fx.ctx,
        )
        .await;
    assert_eq!(out.halt.as_deref(), Some("budget day"));
    assert!(!out.output.is_error);
    assert!(fx.ws().join("post").exists());
}

/// On Stop, `continue: false` wins over a block: the agent stops, for the hook's reason.
#[tokio::test]
async fn a_stop_hook_halt_beats_its_block() {
    let fx = Fixture::new();
    let stop = fx.hook(
        "stop.sh",
        r#"echo '{"hookSpecificOutput": {"decision": "block", "reason": "more", "continue": false, "stopReason": "enough"}}'"#,
    );
    let hooks = Hooks::new(vec![hook(HookEvent::Stop, None, stop, 10)]).unwrap();
    let decision = hooks
        .run_stop(&mut StopGuard::new(), fx.ws(), &fx.ctx.cancel)
        .await;
    assert_eq!(
        decision,
        StopDecision::Stop {
            notes: vec![],
            halt: Some("enough".into())
        }
    );
}

#[tokio::test]
async fn a_hooks_allow_counts_only_where_the_agent_cannot_write_its_script() {
    let fx = Fixture::new();
    let allow = fx.hook("allow.sh", r#"echo '{"permissionDecision": "allow"}'"#);
    let spec = || hook(HookEvent::PreToolUse, Some("bash"), allow.clone(), 10);
    let input = json!({"command": "echo ok"});
    // A writing agent's hook (sandbox off here, so it runs): its allow is ignored, saying why.
    let writer = Hooks::new(vec![spec()])
        .unwrap()
        .confined(&crew_tools::Sandbox::off());
    let pre = writer
        .pre_tool_use("bash", &input, fx.ws(), &fx.ctx.cancel)
        .await;
    assert!(pre.permission.is_none());
    assert!(
        pre.notes.iter().any(
            |n| matches!(n, Note::Warning { text } if text.contains("answered allow; ignored"))
        ),
        "{:?}",
        pre.notes
    );
    // An agent that does not write its workspace: the allow stands.
    let reader = Hooks::new(vec![spec()])
        .unwrap()
        .confined(&crew_tools::Sandbox {
            workspace_writable: false,
            ..crew_tools::Sandbox::off()
        });
    let pre = reader
        .pre_tool_use("bash", &input, fx.ws(), &fx.ctx.cancel)
        .await;
    assert_eq!(
        pre.permission,
        Some(crew_tools::permissions::HookPermission::Allow)
    );
}

#[tokio::test]
async fn without_a_sandbox_a_writers_hook_does_not_run_and_blocks_its_call() {
    let fx = Fixture::new();
    let marker = fx.root().join("hook-ran");
    let mark = fx.hook("mark.sh", &format!("touch {}", marker.display()));
    // The helper is missing, so the sandbox is unavailable (tools_pipeline probes the same way).
    let sandbox = crew_tools::Sandbox {
        helper: fx.root().join("no-such-crew"),
        ..crew_tools::Sandbox::new(crew_tools::SandboxMode::Auto, false, true)
    };
    let hooks = Hooks::new(vec![hook(HookEvent::PreToolUse, Some("bash"), mark, 10)])
        .unwrap()
        .confined(&sandbox);
    let pre = hooks
        .pre_tool_use("bash", &json!({"command": "true"}), fx.ws(), &fx.ctx.cancel)
        .await;
    let block = pre.block.unwrap();
    assert!(block.contains("the sandbox is unavailable"), "{block}");
    assert!(!marker.exists(), "the hook ran unconfined");
}
