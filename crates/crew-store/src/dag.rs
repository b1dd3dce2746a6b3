//! The `blockedBy` graph as pure queries: what can start, what blocks what, cycles, layers.
//! A task can start when every task in its `blockedBy` is `completed`.

use std::collections::{HashMap, HashSet};

use crate::task::{Status, Task};
use crew_protocol::TaskId;

pub struct Graph<'a> {
    by_id: HashMap<TaskId, &'a Task>,
    ordered: Vec<&'a Task>,
}

/// Tasks grouped by depth: layer 0 has no blockers, layer k waits on something in layer k-1.
#[derive(Debug, Default, PartialEq)]
pub struct Layers {
    pub layers: Vec<Vec<TaskId>>,
    /// Tasks caught in a cycle (only possible through hand edits: writes refuse cycles).
    pub cyclic: Vec<TaskId>,
}

impl<'a> Graph<'a> {
    pub fn new(tasks: &'a [Task]) -> Self {
        let mut ordered: Vec<&Task> = tasks.iter().collect();
        // Ids are numbered in creation order.
        ordered.sort_by_key(|t| t.id);
        let by_id = ordered.iter().map(|t| (t.id, *t)).collect();
        Graph { by_id, ordered }
    }

    pub fn get(&self, id: TaskId) -> Option<&'a Task> {
        self.by_id.get(&id).copied()
    }

    /// Tasks in creation order.
    pub fn tasks(&self) -> &[&'a Task] {
        &self.ordered
    }

    /// Blockers not yet completed; an unknown id blocks forever and is listed as such.
    pub fn open_blockers(&self, task: &Task) -> Vec<TaskId> {
        task.blocked_by
            .iter()
            .copied()
            .filter(|&b| self.get(b).is_none_or(|t| t.status != Status::Completed))
            .collect()
    }

    pub fn is_claimable(&self, task: &Task) -> bool {
        task.status == Status::Pending
            && task.owner.is_none()
            && self.open_blockers(task).is_empty()
    }

    /// Tasks assigned to `name` (pending, owned by it) whose blockers are all done, oldest first.
    pub fn ready_for(&self, name: &str) -> Vec<&'a Task> {
        self.ordered
            .iter()
            .copied()
            .filter(|t| {
                t.status == Status::Pending
                    && t.owner.as_deref() == Some(name)
                    && self.open_blockers(t).is_empty()
            })
            .collect()
    }

    /// Claimable tasks, oldest first.
    pub fn claimable(&self) -> Vec<&'a Task> {
        self.ordered
            .iter()
            .copied()
            .filter(|t| self.is_claimable(t))
            .collect()
    }

    pub fn layers(&self) -> Layers {
        let mut depth: HashMap<TaskId, usize> = HashMap::new();
        // Repeated relaxation in id order; each pass settles at least one more task unless the
        // rest sit on a cycle.
        let mut remaining: Vec<&Task> = self.ordered.clone();
        while !remaining.is_empty() {
            let before = remaining.len();
            remaining.retain(|t| {
                let known: Vec<TaskId> = t
                    .blocked_by
                    .iter()
                    .copied()
                    .filter(|b| self.by_id.contains_key(b))
                    .collect();
                if known.iter().all(|b| depth.contains_key(b)) {
                    let d = known.iter().map(|b| depth[b] + 1).max().unwrap_or(0);
                    depth.insert(t.id, d);
                    false
                } else {
                    true
                }
            });
            if remaining.len() == before {
                break;
            }
        }
        let mut layers: Vec<Vec<TaskId>> = Vec::new();
        for t in &self.ordered {
            if let Some(&d) = depth.get(&t.id) {
                if layers.len() <= d {
                    layers.resize(d + 1, Vec::new());
                }
                layers[d].push(t.id);
            }
        }
        Layers {
            layers,
            cyclic: remaining.iter().map(|t| t.id).collect(),
        }
    }
}

/// Would giving `id` the blockers `new_blockers` close a cycle? Returns the cycle as
/// `id -> ... -> id` (each arrow reads "is blocked by").
pub fn find_cycle(tasks: &[Task], id: TaskId, new_blockers: &[TaskId]) -> Option<Vec<TaskId>> {
    let edges: HashMap<TaskId, &[TaskId]> = tasks
        .iter()
        .map(|t| {
            let blockers = if t.id == id {
                new_blockers
            } else {
                &t.blocked_by[..]
            };
            (t.id, blockers)
        })
        .chain(std::iter::once((id, new_blockers)))
        .collect();
    let mut visited: HashSet<TaskId> = HashSet::new();
    let mut path: Vec<TaskId> = vec![id];
    fn dfs(
        node: TaskId,
        target: TaskId,
        edges: &HashMap<TaskId, &[TaskId]>,
        visited: &mut HashSet<TaskId>,
        path: &mut Vec<TaskId>,
    ) -> bool {
        for &next in edges.get(&node).copied().unwrap_or_default() {
            if next == target {
                path.push(next);
                return true;
            }
            if visited.insert(next) {
                path.push(next);
                if dfs(next, target, edges, visited, path) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    if dfs(id, id, &edges, &mut visited, &mut path) {
        Some(path)
    } else {
        None
    }
}
