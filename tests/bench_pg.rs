//! `crew-bench claims|mailbox|wake --store postgres://…` against a throwaway server: each race
//! ends with nothing doubled or lost. Numbers are reported by the bench, never asserted here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::Command;

use crate::support::bench_exe;
use serde_json::Value;

fn bench(args: &[&str]) -> Value {
    let out = Command::new(bench_exe()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_postgres_benches_claim_deliver_and_wake_with_nothing_doubled_or_lost() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let claims = bench(&[
        "claims", "--store", &url, "--procs", "3", "--tasks", "60", "--json",
    ]);
    assert_eq!(
        (
            &claims["store"],
            &claims["claimed"],
            &claims["double_claims"]
        ),
        (&Value::from("postgres"), &Value::from(60), &Value::from(0)),
        "{claims}"
    );
    let mailbox = bench(&[
        "mailbox",
        "--store",
        &url,
        "--procs",
        "3",
        "--messages",
        "90",
        "--json",
    ]);
    assert_eq!(
        (
            &mailbox["received"],
            &mailbox["lost"],
            &mailbox["duplicated"]
        ),
        (&Value::from(90), &Value::from(0), &Value::from(0)),
        "{mailbox}"
    );
    let wake = bench(&[
        "wake",
        "--store",
        &url,
        "--teammates",
        "3",
        "--rounds",
        "5",
        "--json",
    ]);
    assert_eq!(wake["rounds"], 5, "{wake}");
}

/// The chaos the issue names, on four "host" processes sharing one store: one host SIGKILLed
/// mid-task, the server restarted at that moment, another host cut off (SIGSTOP, so no
/// heartbeat) until its leases lapsed, then back, stale. The remaining hosts finish every task;
/// nothing is completed twice, no message lost, and the cut-off host's late completions are
/// refused.
#[test]
fn a_team_across_four_hosts_finishes_through_a_killed_host_a_cut_off_one_and_a_server_restart() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let mut child = Command::new(bench_exe())
        .args(["hosts", "--store", &url, "--hosts", "4", "--workers", "8"])
        // Work long enough that the lead's loop, slow on a busy machine, sees the run at a
        // quarter done and acts there, not only once every task is finished.
        .args(["--tasks", "400", "--lease-ms", "1500", "--work-ms", "100"])
        .args(["--kill-host", "1", "--freeze-host", "2", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let said = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut said = String::new();
            for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
                let line = line.unwrap();
                if line.contains("killed (SIGKILL)") {
                    cluster.restart();
                    said.push_str("[server restarted]\n");
                }
                said.push_str(&line);
                said.push('\n');
            }
            said
        });
        watcher.join().unwrap()
    });
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{said}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("{said}{report}");
    assert!(
        said.contains("[server restarted]") && said.contains("cut off (SIGSTOP)"),
        "{said}"
    );
    assert_eq!(
        (
            &report["completed"],
            &report["double_completions"],
            &report["lost_messages"]
        ),
        (&Value::from(400), &Value::from(0), &Value::from(0)),
        "{report}"
    );
    // The killed host's claims and the cut-off host's went back to the queue by lease.
    assert!(report["lease_takeovers"].as_u64().unwrap() >= 1, "{report}");
    // Every host did work before its chaos; the killed one says nothing after.
    let per_host = report["completed_per_host"].as_object().unwrap();
    assert_eq!(per_host.len(), 4, "{report}");
}
