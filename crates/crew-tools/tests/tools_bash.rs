//! The bash tool: output, exit codes, timeout killing the process group, cancellation,
//! the scrubbed environment, the output cap, concurrency safety decided by the input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_test_support::tools::{Fixture, process_alive};
use crew_test_support::wait::{BUDGET, eventually_async};
use crew_tools::builtin::BashTool;
use crew_tools::{ToolError, ToolJson};
use serde_json::json;

#[tokio::test]
async fn runs_in_the_workspace_and_reports_exit_codes() {
    let fx = Fixture::new();
    let out = BashTool::default()
        .call_json(&json!({"command": "pwd; echo err >&2"}), fx.ctx.clone())
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(out.content, format!("{}\nerr\n", fx.ws().display()));
    let failed = BashTool::default()
        .call_json(&json!({"command": "echo nope; exit 3"}), fx.ctx.clone())
        .await
        .unwrap();
    assert!(failed.is_error);
    assert!(
        failed.content.ends_with("[exit code 3]"),
        "{}",
        failed.content
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let fx = Fixture::new();
    let pid_file = fx.ws().join("child.pid");
    let input = json!({"command": sleeper(&pid_file), "timeout_ms": 500});
    let out = BashTool::default()
        .call_json(&input, fx.ctx.clone())
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.content.contains("timed out after 500 ms"),
        "{}",
        out.content
    );
    assert_sleeper_dies(&pid_file).await;
}

#[tokio::test]
async fn cancellation_kills_the_process_group() {
    let fx = Fixture::new();
    let pid_file = fx.ws().join("child.pid");
    let (input, ctx) = (json!({"command": sleeper(&pid_file)}), fx.ctx.clone());
    let running = tokio::spawn(async move { BashTool::default().call_json(&input, ctx).await });
    let started = || std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'));
    assert!(eventually_async(BUDGET, started).await);
    fx.ctx.cancel.cancel();
    let result = running.await.unwrap();
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert_sleeper_dies(&pid_file).await;
}

/// A command line whose shell leaves a background sleeper (its pid in `pid_file`) and waits.
fn sleeper(pid_file: &std::path::Path) -> String {
    format!(
        "sleep 300 >/dev/null 2>&1 & echo $! > {}; wait",
        pid_file.display()
    )
}

/// Waits for the sleeper's pid file, then for the sleeper to be gone.
async fn assert_sleeper_dies(pid_file: &std::path::Path) {
    let written = || std::fs::read_to_string(pid_file).is_ok_and(|s| s.ends_with('\n'));
    assert!(eventually_async(BUDGET, written).await, "no pid file");
    let pid: i32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        eventually_async(BUDGET, || !process_alive(pid)).await,
        "sleep {pid} survived"
    );
}

#[tokio::test]
async fn secrets_never_reach_the_command() {
    let mut fx = Fixture::new();
    fx.ctx
        .env
        .push(("CREW_TEST_API_KEY".into(), "sk-leak".into()));
    fx.ctx
        .env
        .push(("ANTHROPIC_BASE_URL".into(), "http://leak".into()));
    fx.ctx.env.push(("CREW_TEST_VISIBLE".into(), "fine".into()));
    // Named by no credential rule, yet not on the allow-list: it stays out too.
    fx.ctx.env.push(("GH_PAT".into(), "ghp_leak".into()));
    fx.ctx.sandbox.env = vec!["CREW_TEST_VISIBLE".into()];
    let out = BashTool::default()
        .call_json(&json!({"command": "env"}), fx.ctx.clone())
        .await
        .unwrap();
    assert!(
        out.content.contains("CREW_TEST_VISIBLE=fine"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("sk-leak"));
    assert!(!out.content.contains("ghp_leak"), "{}", out.content);
    assert!(!out.content.contains("CREW_TEST_API_KEY"));
    assert!(!out.content.contains("ANTHROPIC_BASE_URL"));
}

#[tokio::test]
async fn output_is_capped() {
    let fx = Fixture::new();
    let out = BashTool::with_output_cap(1000)
        .call_json(
            &json!({"command": "head -c 5000 /dev/zero | tr '\\0' a"}),
            fx.ctx.clone(),
        )
        .await
        .unwrap();
    assert!(out.content.starts_with(&"a".repeat(1000)));
    assert!(
        out.content.contains("[output capped: 4000 bytes dropped]"),
        "{}",
        &out.content[1000..]
    );
}

#[test]
fn concurrency_safety_is_decided_by_the_input() {
    let bash = BashTool::default();
    let safe = |command: &str| bash.is_concurrency_safe_json(&json!({"command": command}));
    for command in [
        "ls -la",
        "cat a | grep x | wc -l",
        "git status && git diff",
        "find . -name '*.rs'",
        "git log --oneline -n 5 -- src",
    ] {
        assert!(safe(command), "{command} should be safe");
    }
    for command in [
        "rm -rf build",
        "ls && rm x",
        "ls > listing.txt",
        "git commit -m x",
        "find . -delete",
        "echo $(rm x)",
        // A substitution's output becomes arguments no check sees (`git diff $(cat f)` with
        // `--output=x` in f), so even a read-only one inside makes the line unsafe.
        "echo \"$(pwd)\"",
        "git diff --output=x",
        "find . -fprint0 x",
        "sh -c 'rm x'",
        "echo 'unterminated",
        "",
    ] {
        assert!(!safe(command), "{command} should be unsafe");
    }
    assert!(
        !bash.is_concurrency_safe_json(&json!({"cmd": "ls"})),
        "missing field counts as unsafe"
    );
}

#[tokio::test]
async fn a_process_that_escapes_the_group_does_not_hang_the_call() {
    let fx = Fixture::new();
    let pid_file = fx.ws().join("escaped.pid");
    // The shell exits only once the sleeper runs in its own session, holding stdout open.
    let f = pid_file.display();
    let command = format!(
        "setsid sh -c 'echo $$ > {f}; exec sleep 300' & while [ ! -s {f} ]; do sleep 0.01; done; echo done"
    );
    // Bounded by the test, not by bash's own 300 s default: a regression fails, not hangs.
    let input = json!({"command": command});
    let call = BashTool::default().call_json(&input, fx.ctx.clone());
    let out = tokio::time::timeout(BUDGET, call)
        .await
        .expect("the call waited for a process outside its group")
        .unwrap();
    assert_eq!(out.content, "done\n");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: sending a signal to the sleeper this test started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}
