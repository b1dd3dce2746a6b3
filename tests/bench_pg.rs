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
