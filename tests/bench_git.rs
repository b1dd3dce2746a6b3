//! `crew-bench git` on a tiny repository, so the benchmark cannot rot: it builds the repository,
//! runs every step for crew (and for the git CLI when installed) and prints the report's shape.
//! Numbers are reported by the bench, never asserted here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::Command;

use crate::support::bench_exe;
use serde_json::Value;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(bench_exe())
        .arg("git")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_tiny_run_reports_every_step_for_crew_and_git() {
    let out = bench(&[
        "--files",
        "60",
        "--changed",
        "10",
        "--rounds",
        "2",
        "--node-modules",
        "30",
        "--copy-mb",
        "1",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["files"], 60, "{report}");
    assert_eq!(report["changed"], 10, "{report}");
    let provision = &report["provision"];
    assert_eq!(provision["node_modules_files"], 30, "{report}");
    assert_eq!(provision["copy_bytes"], 1024 * 1024, "{report}");
    assert!(
        provision["link_ms"].is_f64() && provision["copy_ms"].is_f64(),
        "{report}"
    );
    let git_installed = Command::new("git").arg("--version").output().is_ok();
    let sides: &[&str] = if git_installed {
        &["crew", "git"]
    } else {
        assert!(report["git"].is_null(), "{report}");
        &["crew"]
    };
    for side in sides {
        for step in ["worktree_ms", "diff_ms", "merge_ms", "discard_ms"] {
            assert!(
                report[side][step].as_f64().is_some_and(|ms| ms >= 0.0),
                "{side}.{step}: {report}"
            );
        }
    }
}

#[test]
fn more_changes_than_the_rounds_can_share_is_refused_by_name() {
    let out = bench(&["--files", "10", "--changed", "6", "--rounds", "2"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--changed (6) times"), "{err}");
    assert!(err.contains("cannot exceed --files (10)"), "{err}");
}
