//! Invariant 2: processes killed with SIGKILL at random instants while writing leave every
//! task file and every inbox line parseable, and no task half-written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::bench_exe;
use crew_store::{Entry, Status, Workspace};
use proptest::prelude::RngExt;
use proptest::test_runner::{Config, TestRunner};

#[test]
fn sigkill_at_random_points_leaves_every_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path());
    // Random kill delays from proptest's RNG: reproducible from its seed, no extra crate.
    let mut runner = TestRunner::new(Config::default());
    let rng = runner.rng();
    for round in 0..6 {
        let mut children: Vec<_> = (0..4)
            .map(|k| {
                Command::new(bench_exe())
                    .args(["churn", "--dir"])
                    .arg(dir.path())
                    .args(["--name", &format!("w{k}")])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in &mut children {
            let delay = rng.random_range(20..200);
            std::thread::sleep(Duration::from_millis(delay));
            // Still running means it was killed mid-work, not after an error.
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: churn died on its own"
            );
            child.kill().unwrap();
            child.wait().unwrap();
        }
        check_everything_parses(&workspace);
    }
    let loaded = workspace.tasks().load_all().unwrap();
    assert!(loaded.tasks.len() > 10, "the churn did write tasks");
}

fn check_everything_parses(workspace: &Workspace) {
    let loaded = workspace.tasks().load_all().unwrap();
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    for task in &loaded.tasks {
        if task.status == Status::InProgress {
            assert!(
                task.owner.is_some(),
                "{} in progress without owner",
                task.id
            );
        }
    }
    for (inbox, entry) in workspace.mailboxes().read_all().unwrap() {
        if let Entry::Broken { error, .. } = entry {
            panic!("{inbox}: {error}");
        }
    }
}
