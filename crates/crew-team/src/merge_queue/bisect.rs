//! What the merge queue tests next: a pure state machine, knowing nothing of git or processes.
//!
//! The queue tests a prefix of the waiting tasks (at most `batch`) on the base. Green: the
//! prefix lands. Red: the red set is remembered with the base it was red on, and its first half
//! is tested next. Because only prefixes land, after a green half `H` of a red set `R` the tree
//! `base + H + (R − H)` is `R`'s own tree, already known red: no run is needed to know that the
//! rest still holds a culprit, so it is split again at once, and a red set of one task is the
//! culprit without another run. A batch of N with one culprit takes 1 + ⌈log2 N⌉ runs, and the
//! tasks it proves green land as it goes.

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<T> {
    /// Nothing waits.
    Idle,
    /// Build base + these tasks, in order, and run the tests on it.
    Test(Vec<T>),
    /// This task breaks the tests on the base: send it back with the output of the red run.
    Reject { task: T, output: String },
}

/// A set of tasks known red on a base, and what the red run said.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Red<T> {
    base: String,
    tasks: Vec<T>,
    output: String,
}

/// The queue's memory between runs: the batch size and the smallest red set found so far.
#[derive(Debug, Clone)]
pub struct Bisection<T> {
    batch: usize,
    red: Option<Red<T>>,
}

impl<T: Clone + PartialEq> Bisection<T> {
    pub fn new(batch: usize) -> Self {
        Bisection {
            batch: batch.max(1),
            red: None,
        }
    }

    /// Whether a red set is being bisected (its next run is decided, not gathered).
    pub fn bisecting(&self) -> bool {
        self.red.is_some()
    }

    /// The next step for the tasks `waiting` (in queue order) on the base at `base`. What was
    /// known red counts only while the base is the one it was red on and the queue still starts
    /// with the red set (the person may have removed or added a task in between).
    pub fn next(&mut self, waiting: &[T], base: &str) -> Step<T> {
        if let Some(red) = &self.red
            && (red.base != base || !waiting.starts_with(&red.tasks))
        {
            self.red = None;
        }
        match &self.red {
            Some(red) if red.tasks.len() == 1 => Step::Reject {
                task: red.tasks[0].clone(),
                output: red.output.clone(),
            },
            Some(red) => Step::Test(red.tasks[..red.tasks.len() / 2].to_vec()),
            None if waiting.is_empty() => Step::Idle,
            None => Step::Test(waiting[..waiting.len().min(self.batch)].to_vec()),
        }
    }

    /// `tested` was green and landed: the base is `new_base` now. A red set it began is the
    /// rest of that set on the new base, red still.
    pub fn passed(&mut self, tested: &[T], new_base: &str) {
        self.red = self
            .red
            .take()
            .filter(|red| red.tasks.starts_with(tested) && red.tasks.len() > tested.len())
            .map(|red| Red {
                base: new_base.to_string(),
                tasks: red.tasks[tested.len()..].to_vec(),
                output: red.output,
            });
    }

    /// `tested` was red on `base`, saying `output`.
    pub fn failed(&mut self, tested: &[T], base: &str, output: String) {
        self.red = Some(Red {
            base: base.to_string(),
            tasks: tested.to_vec(),
            output,
        });
    }

    /// The culprit went back to its teammate, or a run meant nothing (the base moved, a
    /// conflict, a task removed): start again from the queue as it is.
    pub fn forget(&mut self) {
        self.red = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plays the queue against a test that is red when any `bad` set is wholly in the tree;
    /// returns what landed, what was rejected and how many runs it took.
    fn play(
        tasks: &[u32],
        batch: usize,
        breaks: impl Fn(&[u32]) -> bool,
    ) -> (Vec<u32>, Vec<u32>, usize) {
        let mut waiting = tasks.to_vec();
        let mut landed: Vec<u32> = Vec::new();
        let mut rejected = Vec::new();
        let mut runs = 0;
        let mut queue = Bisection::new(batch);
        for _ in 0..1000 {
            let base = format!("{landed:?}");
            match queue.next(&waiting, &base) {
                Step::Idle => return (landed, rejected, runs),
                Step::Reject { task, output } => {
                    assert!(output.starts_with("red"), "{output}");
                    waiting.retain(|t| *t != task);
                    rejected.push(task);
                    queue.forget();
                }
                Step::Test(set) => {
                    runs += 1;
                    let tree: Vec<u32> = landed.iter().chain(&set).copied().collect();
                    if breaks(&tree) {
                        queue.failed(&set, &base, format!("red {tree:?}"));
                    } else {
                        waiting.drain(..set.len());
                        landed.extend(&set);
                        queue.passed(&set, &format!("{landed:?}"));
                    }
                }
            }
        }
        panic!("the queue did not settle");
    }

    #[test]
    fn two_that_break_together_cost_at_most_one_plus_log2_plus_one_runs() {
        // Each passes alone; 2 and 3 together break the tests.
        let together = |t: &[u32]| t.contains(&2) && t.contains(&3);
        let (landed, rejected, runs) = play(&[1, 2, 3], 3, together);
        assert_eq!((landed, rejected), (vec![1, 2], vec![3]));
        assert!(runs <= 4, "{runs} runs");
        // 1 and 2 together: 2 is the later one, so it is the culprit; 3 still lands.
        let first_two = |t: &[u32]| t.contains(&1) && t.contains(&2);
        let (landed, rejected, runs) = play(&[1, 2, 3], 3, first_two);
        assert_eq!((landed, rejected), (vec![1, 3], vec![2]));
        assert!(runs <= 4, "{runs} runs");
    }

    #[test]
    fn a_green_batch_lands_in_one_run() {
        let (landed, rejected, runs) = play(&[1, 2, 3, 4], 4, |_| false);
        assert_eq!((landed, rejected, runs), (vec![1, 2, 3, 4], vec![], 1));
    }

    #[test]
    fn one_culprit_in_a_batch_of_eight_takes_one_plus_log2_runs() {
        for bad in 1..=8 {
            let (landed, rejected, runs) = play(&[1, 2, 3, 4, 5, 6, 7, 8], 8, |t| t.contains(&bad));
            assert_eq!(rejected, [bad]);
            assert_eq!(landed.len(), 7);
            // Finding it: 1 + 3 runs at most; the tasks after it then need one more.
            assert!(runs <= 1 + 3 + 1, "bad {bad}: {runs} runs");
        }
    }

    #[test]
    fn thirty_two_tasks_two_bad_in_batches_of_eight_take_at_most_twelve_runs() {
        let tasks: Vec<u32> = (1..=32).collect();
        for (a, b) in [(3, 20), (1, 32), (8, 9), (5, 6), (16, 17)] {
            let (landed, rejected, runs) = play(&tasks, 8, |t| t.contains(&a) || t.contains(&b));
            assert_eq!(rejected, [a, b]);
            assert_eq!(landed.len(), 30);
            assert!(runs <= 12, "bad {a} and {b}: {runs} runs");
        }
    }

    #[test]
    fn a_moved_base_or_a_changed_queue_forgets_what_was_red() {
        let mut queue = Bisection::new(4);
        assert_eq!(queue.next(&[1, 2, 3], "b0"), Step::Test(vec![1, 2, 3]));
        queue.failed(&[1, 2, 3], "b0", "red".into());
        assert_eq!(queue.next(&[1, 2, 3], "b0"), Step::Test(vec![1]));
        // The person committed: everything is tested again on the new base.
        assert_eq!(queue.next(&[1, 2, 3], "b1"), Step::Test(vec![1, 2, 3]));
        queue.failed(&[1, 2, 3], "b1", "red".into());
        // Task 1 was removed from the queue.
        assert_eq!(queue.next(&[2, 3], "b1"), Step::Test(vec![2, 3]));
        assert_eq!(queue.next(&[], "b1"), Step::Idle);
    }
}
