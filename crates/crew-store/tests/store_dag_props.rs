//! Property tests: the DAG queries against a brute-force reference (transitive closure).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_store::dag::{Graph, find_cycle};
use crew_store::{Status, Task, TaskId};
use proptest::prelude::*;

fn task(i: usize, status: Status, owner: bool, blockers: &[usize]) -> Task {
    Task {
        id: TaskId(i as u64 + 1),
        subject: format!("t{i}"),
        description: String::new(),
        status,
        owner: owner.then(|| "alice".parse().unwrap()),
        blocked_by: blockers.iter().map(|&b| TaskId(b as u64 + 1)).collect(),
        created_at: String::new(),
        updated_at: String::new(),
        role: None,
        worktree: None,
        result: None,
        commits: None,
        review: None,
        notes: Vec::new(),
        usage: None,
        extra: Default::default(),
    }
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        Just(Status::Pending),
        Just(Status::InProgress),
        Just(Status::Completed),
        Just(Status::Failed)
    ]
}

/// Up to 10 tasks; `acyclic` only lets a task be blocked by older ones.
fn tasks(acyclic: bool) -> impl Strategy<Value = Vec<Task>> {
    (1usize..10).prop_flat_map(move |n| {
        proptest::collection::vec(
            (
                status(),
                any::<bool>(),
                proptest::collection::vec(0..n, 0..4),
            ),
            n,
        )
        .prop_map(move |specs| {
            specs
                .into_iter()
                .enumerate()
                .map(|(i, (s, owner, blockers))| {
                    let mut b: Vec<usize> = blockers
                        .into_iter()
                        .filter(|&b| !acyclic || b < i)
                        .collect();
                    b.dedup();
                    task(i, s, owner && s != Status::Pending, &b)
                })
                .collect()
        })
    })
}

fn index(id: &TaskId) -> usize {
    usize::try_from(id.0).unwrap() - 1
}

/// closure[a][b]: a is (transitively) blocked by b.
fn closure(tasks: &[Task]) -> Vec<Vec<bool>> {
    let n = tasks.len();
    let mut r = vec![vec![false; n]; n];
    for t in tasks {
        for b in &t.blocked_by {
            r[index(&t.id)][index(b)] = true;
        }
    }
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                if r[i][k] && r[k][j] {
                    r[i][j] = true;
                }
            }
        }
    }
    r
}

proptest! {
    #[test]
    fn claimable_is_pending_unowned_with_every_blocker_completed(ts in tasks(false)) {
        let graph = Graph::new(&ts);
        let got: Vec<TaskId> = graph.claimable().iter().map(|t| t.id).collect();
        let want: Vec<TaskId> = ts
            .iter()
            .filter(|t| t.status == Status::Pending && t.owner.is_none())
            .filter(|t| t.blocked_by.iter().all(|b| ts[index(b)].status == Status::Completed))
            .map(|t| t.id)
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn find_cycle_agrees_with_reachability_and_returns_a_real_cycle(
        ts in tasks(true),
        pick in any::<prop::sample::Index>(),
        new in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let i = pick.index(ts.len());
        let id = ts[i].id;
        let new: Vec<TaskId> = new.iter().map(|x| ts[x.index(ts.len())].id).collect();
        let mut changed = ts.clone();
        changed[i].blocked_by = new.clone();
        let r = closure(&changed);
        let found = find_cycle(&ts, id, &new);
        prop_assert_eq!(found.is_some(), r[i][i]);
        if let Some(cycle) = found {
            prop_assert_eq!(cycle.first(), Some(&id));
            prop_assert_eq!(cycle.last(), Some(&id));
            for pair in cycle.windows(2) {
                prop_assert!(changed[index(&pair[0])].blocked_by.contains(&pair[1]), "{:?} is not an edge", pair);
            }
        }
    }

    #[test]
    fn layers_put_each_task_one_below_its_deepest_blocker(ts in tasks(true)) {
        let layers = Graph::new(&ts).layers();
        prop_assert!(layers.cyclic.is_empty());
        let mut depth = vec![0usize; ts.len()];
        for (i, t) in ts.iter().enumerate() {
            depth[i] = t.blocked_by.iter().map(|b| depth[index(b)] + 1).max().unwrap_or(0);
        }
        for (d, ids) in layers.layers.iter().enumerate() {
            for id in ids {
                prop_assert_eq!(depth[index(id)], d, "{}", id);
            }
        }
        prop_assert_eq!(layers.layers.iter().map(Vec::len).sum::<usize>(), ts.len());
    }

    #[test]
    fn hand_made_cycles_are_set_apart_with_everything_waiting_on_them(ts in tasks(false)) {
        let r = closure(&ts);
        let layers = Graph::new(&ts).layers();
        let n = ts.len();
        let mut want: Vec<TaskId> = (0..n)
            .filter(|&a| (0..n).any(|c| (a == c || r[a][c]) && r[c][c]))
            .map(|a| ts[a].id)
            .collect();
        let mut got = layers.cyclic.clone();
        want.sort();
        got.sort();
        prop_assert_eq!(got, want);
    }
}
