//! `crew-bench team` with real `crew worker` processes: every task gets done and the team shuts
//! down through the protocol. Numbers are reported by the bench, never asserted here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::Command;

use crate::support::bench_exe;
use serde_json::Value;

#[test]
fn two_workers_complete_every_task_and_stop_cleanly() {
    let out = Command::new(bench_exe())
        .args([
            "team",
            "--teammates",
            "2",
            "--tasks",
            "10",
            "--idle-secs",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["teammates"], 2, "{report}");
    assert_eq!(report["tasks"], 10, "{report}");
    assert_eq!(report["completed"], 10, "{report}");
    // Every worker answered its shutdown request; none had to be killed.
    assert_eq!(
        report["killed_at_shutdown"],
        Value::Array(vec![]),
        "{report}"
    );
    for key in [
        "seconds",
        "tasks_per_sec",
        "idle_cpu_percent_of_one_core",
        "idle_window_secs",
    ] {
        assert!(report[key].is_number(), "{key} missing: {report}");
    }
    for key in ["p50", "p99"] {
        assert!(
            report["claim_latency_ms"][key].is_number(),
            "claim_latency_ms.{key} missing: {report}"
        );
    }
}

#[test]
fn the_wake_bench_reports_every_round_and_the_idle_cpu() {
    let out = Command::new(bench_exe())
        .args([
            "wake",
            "--teammates",
            "2",
            "--rounds",
            "3",
            "--idle-secs",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rounds"], 3, "{report}");
    for key in ["p50_ms", "p99_ms", "max_ms", "idle_cpu_percent"] {
        assert!(report[key].is_number(), "{key} missing: {report}");
    }
}
