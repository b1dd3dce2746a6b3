//! `crew-bench queue` on a few tasks with no sleep, so the benchmark cannot rot: it builds the
//! repository, runs the queue batched and one at a time, and reports both. The culprit is sent
//! back and the rest merged either way; the figures are reported, never asserted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crate::support::bench_report;

#[test]
fn a_tiny_queue_merges_the_good_tasks_and_sends_the_bad_one_back_both_ways() {
    let report = bench_report(&[
        "queue",
        "--tasks",
        "5",
        "--bad",
        "1",
        "--batch",
        "4",
        "--sleep-ms",
        "0",
        "--json",
    ]);
    for side in ["queue", "oneAtATime"] {
        let r = &report[side];
        let outcome = (r["merged"].as_u64(), r["sentBack"].as_u64());
        assert_eq!(outcome, (Some(4), Some(1)), "{report}");
        assert!(r["testRuns"].as_u64().unwrap() > 0, "{report}");
        assert!(r["wallSecs"].is_number(), "{report}");
    }
    assert_eq!(report["oneAtATime"]["testRuns"], 5, "{report}");
}
