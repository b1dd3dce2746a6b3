//! The queue's worker: a thread of the team's process (the daemon, or `crew up --headless`)
//! that takes the approved tasks in order, builds and tests what would land, and lands it, sends
//! the culprit back, or tests again on a base that moved. Each step is decided by
//! [`Bisection`] and recorded in the store before and after it, so a crash at any point leaves
//! the base either before or after a whole landing, and the next start resumes the queue.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use crew_config::TeamConfig;
use crew_git::{Author, GitError, Landing, QueueTree, QueuedHead, Worktrees};
use crew_protocol::joined;
use crew_store::{
    EntryState, FileStore, MergeQueue, QueueEntry, QueueRun, QueueState, RunOutcome, Status,
    StoreError, Task, TaskId, USER, Workspace,
};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use super::QueueFiles;
use super::bisect::{Bisection, Step};
use super::test_run::{TestEnd, TestRun, run_tests};
use crate::review::{self, Desk, ReviewError};
use crate::run::link::{LinkedStore, TeamLink};

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Review(#[from] ReviewError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The running queue; dropping it ends a test in progress (its tasks wait again) and the thread.
pub struct QueueRunner {
    stop: CancellationToken,
    thread: Option<JoinHandle<()>>,
    said: Receiver<String>,
}

/// How long an idle queue waits before it looks again.
const IDLE: Duration = Duration::from_millis(400);
/// How long a batch that is not full waits after an approval for the next one.
const GATHER: Duration = Duration::from_secs(3);

impl QueueRunner {
    /// The queue of the team on files in `workspace`.
    pub fn start(workspace: Workspace, config: Arc<TeamConfig>) -> QueueRunner {
        let store = FileStore::new(workspace.clone(), config.roster());
        QueueRunner::start_on(
            TeamLink::files(store),
            workspace.repository_root(),
            QueueFiles::of(&workspace),
            config,
        )
    }

    /// The queue kept in `files` of the team in `link`'s store, landing in the checkout at
    /// `root`. Only one process runs a queue: when another holds it, this one says so and
    /// does nothing.
    pub fn start_on<S: LinkedStore + Send>(
        link: TeamLink<S>,
        root: PathBuf,
        files: QueueFiles,
        config: Arc<TeamConfig>,
    ) -> QueueRunner {
        let stop = CancellationToken::new();
        let (tell, said) = channel();
        let token = stop.clone();
        let thread = std::thread::Builder::new()
            .name("merge-queue".into())
            .spawn(move || {
                let lock = files.runner_lock();
                let place = Place { link, root, files };
                let ran = crew_store::lock::try_with_lock(&lock, || {
                    run(place, config, &token, tell.clone());
                    Ok(())
                });
                let said = match ran {
                    Ok(Some(())) => return,
                    Ok(None) => "merge queue: another crew process runs it here; approvals wait \
                                 for that one"
                        .to_string(),
                    Err(e) => format!("merge queue: did not start: {e}"),
                };
                tracing::warn!("{said}");
                let _ = tell.send(said);
            });
        let thread = match thread {
            Ok(thread) => Some(thread),
            Err(e) => {
                tracing::error!("the merge queue did not start: {e}");
                None
            }
        };
        QueueRunner { stop, thread, said }
    }

    /// Whether the queue stopped by itself (another process runs it, or it could not start).
    pub fn ended(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// What the queue did since the last call, one line each, for the person.
    pub fn said(&self) -> Vec<String> {
        self.said.try_iter().collect()
    }
}

impl Drop for QueueRunner {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the merge queue's thread panicked");
        }
    }
}

/// Where the queue works: the team's store, the checkout it lands in, its own files.
struct Place<S> {
    link: TeamLink<S>,
    root: PathBuf,
    files: QueueFiles,
}

fn run<S: LinkedStore>(
    place: Place<S>,
    config: Arc<TeamConfig>,
    stop: &CancellationToken,
    tell: Sender<String>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!("the merge queue has no runtime: {e}");
            return;
        }
    };
    // A queue killed mid-test (SIGKILL: no clean-up) left its test running: ended here, so it
    // cannot hold the scratch tree the next run writes.
    let leftovers = crew_tools::orphans::kill_orphans();
    if !leftovers.is_empty() {
        tracing::info!(
            ?leftovers,
            "ended processes a killed team process left running"
        );
    }
    let mut queue = Queue {
        bisection: Bisection::new(config.merge_queue.batch),
        place,
        config,
        tell,
        runtime,
    };
    let mut last_error = String::new();
    while !stop.is_cancelled() {
        let worked = match queue.step(stop) {
            Ok(worked) => worked,
            Err(e) => {
                let text = format!("merge queue: {e}");
                if text != last_error {
                    tracing::warn!("{text}");
                    queue.say(text.clone());
                    last_error = text;
                }
                false
            }
        };
        if !worked {
            queue
                .runtime
                .block_on(async { tokio::time::timeout(IDLE, stop.cancelled()).await.ok() });
        }
    }
}

struct Queue<S> {
    place: Place<S>,
    config: Arc<TeamConfig>,
    bisection: Bisection<TaskId>,
    tell: Sender<String>,
    runtime: Runtime,
}

impl<S: LinkedStore> Queue<S> {
    fn say(&self, text: String) {
        // The receiver goes only with the team: nobody is left to tell.
        let _ = self.tell.send(text);
    }

    fn base_branch(&self) -> &str {
        &self.config.team.base_branch
    }

    fn desk(&self) -> Desk<'_, S> {
        Desk::new(
            self.place.link.store().clone(),
            self.place.root.clone(),
            &self.config,
        )
    }

    fn queue(&self) -> MergeQueue {
        self.place.files.queue()
    }

    fn task(&self, id: TaskId) -> Result<Task, ReviewError> {
        let desk = self.desk();
        self.place.link.block_on(desk.task(id))
    }

    fn trees(&self) -> Result<Worktrees, QueueError> {
        Ok(Worktrees::open(&self.place.root)?)
    }

    /// The tasks `ids` landed: completed, the lead told; what was said.
    fn mark_landed(&self, ids: &[TaskId], how: &str) -> Result<String, QueueError> {
        let desk = self.desk();
        Ok(self.place.link.block_on(desk.mark_landed(ids, how))?)
    }

    /// One step; `false` when there was nothing to do.
    fn step(&mut self, stop: &CancellationToken) -> Result<bool, QueueError> {
        let trees = self.trees()?;
        let state = self.reconcile(&trees)?;
        if state.paused {
            return Ok(false);
        }
        let waiting: Vec<TaskId> = state.active().map(|e| e.id).collect();
        if self.gathering(&state) {
            return Ok(false);
        }
        let base = trees.base_head(self.base_branch())?;
        match self.bisection.next(&waiting, &base) {
            Step::Idle => Ok(false),
            Step::Reject { task, output } => {
                self.bisection.forget();
                self.reject(task, &output)?;
                Ok(true)
            }
            Step::Test(set) => {
                let entries: Vec<QueueEntry> = set
                    .iter()
                    .filter_map(|id| state.entry(*id).cloned())
                    .collect();
                self.test(&trees, &entries, stop)?;
                Ok(true)
            }
        }
    }

    /// A batch not yet full whose last task was approved moments ago waits for `GATHER`: a
    /// person approving reviews one key at a time gets them tested together, not one by one.
    fn gathering(&self, state: &QueueState) -> bool {
        let batch = self.config.merge_queue.batch;
        let waiting: Vec<&QueueEntry> = state
            .active()
            .filter(|e| e.state == EntryState::Waiting)
            .collect();
        if batch < 2 || waiting.is_empty() || waiting.len() >= batch || self.bisection.bisecting() {
            return false;
        }
        waiting.iter().any(|e| {
            humantime::parse_rfc3339_weak(&e.approved_at)
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age < GATHER)
        })
    }

    /// Brings the queue in line with the tasks: entries whose task left review (sent back,
    /// discarded, merged by hand) leave the queue; a task whose commits the base already holds
    /// (crew stopped between moving the base and marking it) is marked merged now; entries a
    /// crash left testing wait again.
    fn reconcile(&self, trees: &Worktrees) -> Result<QueueState, QueueError> {
        let store = self.queue();
        let mut landed = Vec::new();
        let state = store.update(|state| {
            let mut gone = Vec::new();
            for entry in state.entries.iter_mut().filter(|e| e.state.is_active()) {
                let task = match self.task(entry.id) {
                    Ok(task) => task,
                    Err(ReviewError::Store(StoreError::NoSuchTask(_))) => {
                        gone.push(entry.id);
                        continue;
                    }
                    Err(ReviewError::Store(e)) => return Err(e),
                    Err(e) => return Err(StoreError::Backend(Box::new(e))),
                };
                let head = task.commits.as_ref().map(|c| c.head.as_str());
                if task.status == Status::Completed {
                    entry.state = EntryState::Merged;
                    entry.note = Some("merged outside the queue".into());
                } else if task.status != Status::Review || head != Some(entry.head.as_str()) {
                    gone.push(entry.id);
                } else if trees
                    .base_contains(self.base_branch(), &entry.head)
                    .unwrap_or(false)
                {
                    landed.push(entry.id);
                } else {
                    entry.state = EntryState::Waiting;
                }
            }
            state.entries.retain(|e| !gone.contains(&e.id));
            Ok(state.clone())
        })?;
        if landed.is_empty() {
            return Ok(state);
        }
        let text = self.mark_landed(&landed, "merge queue: landed before crew stopped")?;
        self.say(text);
        Ok(store.update(|state| {
            state.set_state(
                &landed,
                EntryState::Merged,
                Some("landed before crew stopped"),
            );
            Ok(state.clone())
        })?)
    }

    fn set_state(
        &self,
        ids: &[TaskId],
        state: EntryState,
        note: Option<&str>,
    ) -> Result<(), QueueError> {
        Ok(self.queue().update(|s| {
            s.set_state(ids, state, note);
            Ok(())
        })?)
    }

    /// Sends `task` back to its teammate with `note`; its entry failed.
    fn send_back(&self, task: TaskId, why: &str, note: &str) -> Result<(), QueueError> {
        let desk = self.desk();
        match self.place.link.block_on(desk.send_back(task, &USER, note)) {
            Ok(_) | Err(ReviewError::Store(StoreError::Refused(_))) => {}
            Err(e) => return Err(e.into()),
        }
        self.set_state(&[task], EntryState::Failed, Some(why))?;
        self.say(format!(
            "merge queue: {task} {why}; sent back to its teammate"
        ));
        Ok(())
    }

    /// The culprit of a red run: back to its teammate with the failing output.
    fn reject(&self, task: TaskId, output: &str) -> Result<(), QueueError> {
        let note = format!(
            "the merge queue's tests (`{}`) fail with it merged into {}:\n{output}",
            self.config.team.test_command.as_deref().unwrap_or(""),
            self.base_branch()
        );
        self.send_back(task, "breaks the tests", &note)
    }

    fn test(
        &mut self,
        trees: &Worktrees,
        entries: &[QueueEntry],
        stop: &CancellationToken,
    ) -> Result<(), QueueError> {
        let base_branch = self.base_branch().to_string();
        let ids: Vec<TaskId> = entries.iter().map(|e| e.id).collect();
        let mut heads = Vec::new();
        for entry in entries {
            let files = review::protected_in_merge(trees, &self.config, &entry.head)?;
            if !files.is_empty() {
                self.bisection.forget();
                let why = format!(
                    "changes {}, which govern the team: only the person merges that (M in the \
                     review queue, or `crew review merge {}`)",
                    joined(&files, ", "),
                    entry.id
                );
                self.set_state(&[entry.id], EntryState::Failed, Some(&why))?;
                self.say(format!("merge queue: {} {why}", entry.id));
                return Ok(());
            }
            let task = self.task(entry.id)?;
            let owner = task.owner.as_deref().unwrap_or("crew");
            let branch = task.commits.as_ref().map_or("", |c| c.branch.as_str());
            heads.push(QueuedHead {
                label: format!("{} ({branch})", entry.id),
                head: entry.head.clone(),
                author: Author::crew(owner),
            });
        }
        self.set_state(&ids, EntryState::Testing, None)?;
        let (base, commit) = match trees.build_queue_tree(&base_branch, &heads)? {
            QueueTree::Conflict { index, files } => {
                self.bisection.forget();
                let after = if index == 0 {
                    String::new()
                } else {
                    format!(" after {}", joined(&ids[..index], ", "))
                };
                let why = format!("conflicts in {}", files.join(", "));
                let note = format!(
                    "the merge queue could not merge it into {base_branch}{after}: {why}; \
                     bring your branch up to date with {base_branch} and resolve them"
                );
                self.set_state(&ids, EntryState::Waiting, None)?;
                return self.send_back(ids[index], &why, &note);
            }
            QueueTree::Built { base, commit } => (base, commit),
        };
        let dir = self.place.files.tree();
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(QueueError::Io { path: dir, source }),
        }
        trees.export_commit(&commit, &dir)?;
        self.say(format!(
            "merge queue: testing {} on {base_branch} at {}",
            joined(&ids, ", "),
            short(&base)
        ));
        let root = self.place.root.clone();
        let moved = {
            let (branch, base) = (base_branch.clone(), base.clone());
            move || {
                Worktrees::open(&root)
                    .and_then(|t| t.base_head(&branch))
                    .is_ok_and(|now| now != base)
            }
        };
        let started_at = crew_store::task::now_rfc3339();
        let ran = run_tests(
            &self.runtime,
            &self.config,
            &dir,
            &self.place.files.output_log(),
            moved,
            stop,
        );
        let record = |outcome| QueueRun {
            tasks: ids.clone(),
            base: base.clone(),
            started_at: started_at.clone(),
            millis: ran.millis,
            outcome,
        };
        // The person may have removed a task, merged it or sent it back during the run: what
        // ran is not what they want.
        let queued = self.queue().load()?;
        let mut changed = false;
        for entry in entries {
            let task = self.task(entry.id)?;
            let head = task.commits.as_ref().map(|c| c.head.as_str());
            changed |= task.status != Status::Review
                || head != Some(entry.head.as_str())
                || !queued.entry(entry.id).is_some_and(|e| e.state.is_active());
        }
        if changed {
            self.bisection.forget();
            self.record(record(RunOutcome::Interrupted))?;
        } else {
            let outcome = self.judge(&ran, &ids, &base, &commit, &record)?;
            if outcome != RunOutcome::Passed {
                self.record(record(outcome))?;
            }
        }
        self.queue().update(|s| {
            // Whatever did not land or fail waits again.
            let testing: Vec<TaskId> = ids
                .iter()
                .copied()
                .filter(|id| {
                    s.entry(*id).is_some_and(|e| {
                        matches!(e.state, EntryState::Testing | EntryState::Passed)
                    })
                })
                .collect();
            s.set_state(&testing, EntryState::Waiting, None);
            Ok(())
        })?;
        Ok(())
    }

    fn record(&self, run: QueueRun) -> Result<(), QueueError> {
        Ok(self.queue().update(|s| {
            s.record_run(run);
            Ok(())
        })?)
    }

    /// What a finished run means for the queue, carried out: land, remember red, or start over.
    /// A green run is recorded here (`record` makes its record), before its tasks are marked.
    fn judge(
        &mut self,
        ran: &TestRun,
        ids: &[TaskId],
        base: &str,
        commit: &str,
        record: &dyn Fn(RunOutcome) -> QueueRun,
    ) -> Result<RunOutcome, QueueError> {
        let base_branch = self.base_branch().to_string();
        let secs = ran.millis as f64 / 1000.0;
        match &ran.end {
            TestEnd::Stopped => Ok(RunOutcome::Interrupted),
            TestEnd::BaseMoved => {
                self.bisection.forget();
                self.say(format!(
                    "merge queue: {base_branch} moved during the test of {}: testing again on \
                     the new {base_branch}",
                    joined(ids, ", ")
                ));
                Ok(RunOutcome::BaseMoved)
            }
            TestEnd::NotRun(why) => {
                self.bisection.forget();
                self.set_state(ids, EntryState::Failed, Some(why))?;
                self.say(format!(
                    "merge queue: {} not tested: {why} (`crew queue retry ID` once fixed)",
                    joined(ids, ", ")
                ));
                Ok(RunOutcome::NotRun)
            }
            TestEnd::Failed => {
                self.bisection.failed(ids, base, ran.output.clone());
                self.say(format!(
                    "merge queue: the tests fail with {} ({secs:.1} s){}",
                    joined(ids, ", "),
                    if ids.len() > 1 { "; bisecting" } else { "" }
                ));
                Ok(RunOutcome::Failed)
            }
            TestEnd::Passed => {
                self.set_state(ids, EntryState::Passed, None)?;
                let message = format!(
                    "crew: merge queue lands {} into {base_branch}",
                    joined(ids, ", ")
                );
                let trees = self.trees()?;
                match trees.land(&base_branch, base, commit, &message) {
                    Ok(Landing::BaseMoved { .. }) => {
                        self.bisection.forget();
                        self.say(format!(
                            "merge queue: {base_branch} moved before {} could land: testing \
                             again on the new {base_branch}",
                            joined(ids, ", ")
                        ));
                        Ok(RunOutcome::BaseMoved)
                    }
                    Ok(Landing::Landed) => {
                        let with = if ids.len() > 1 {
                            format!("tested together with {}", joined(ids, ", "))
                        } else {
                            "tested".to_string()
                        };
                        let how = format!(
                            "merge queue: {with} on {base_branch} at {} in {secs:.1} s; {base_branch} at {}",
                            short(base),
                            short(commit)
                        );
                        self.bisection.passed(ids, commit);
                        self.record(record(RunOutcome::Passed))?;
                        let text = self.mark_landed(ids, &how)?;
                        self.set_state(ids, EntryState::Merged, Some(&how))?;
                        self.say(text);
                        Ok(RunOutcome::Passed)
                    }
                    Err(e) => {
                        // Local changes in a checkout of the base, say: nothing moved.
                        self.bisection.forget();
                        let why = format!("passed but did not land: {e}");
                        self.set_state(ids, EntryState::Failed, Some(&why))?;
                        self.say(format!("merge queue: {} {why}", joined(ids, ", ")));
                        self.record(record(RunOutcome::Passed))?;
                        Ok(RunOutcome::Passed)
                    }
                }
            }
        }
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}
