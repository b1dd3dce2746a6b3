//! Reviews: the tasks in `review`, what each would bring into the base branch, and the person's
//! answers (merge, send back with a note, discard with a reason). The screen, the CLI and the
//! headless runner all go through here, so a review means the same wherever it is answered.

mod policy;

use std::path::PathBuf;
use std::time::SystemTime;

use serde::Serialize;

use crew_config::TeamConfig;
use crew_git::{Author, GitError, MergeOutcome, TeamRemote, WorktreeDiff, Worktrees};
use crew_protocol::joined;
use crew_store::{
    AgentName, BackendError, Draft, FileStore, MergeQueue, MessageKind, Refusal, Status,
    StoreError, Task, TaskCommits, TaskId, TeamStore, USER, Workspace,
};
pub use policy::ProtectedChange;
use policy::{Governed, protected_changes};

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{id} does not merge into {base}: conflicts in {}; nothing was changed", files.join(", "))]
    Conflicts {
        id: TaskId,
        base: String,
        files: Vec<String>,
    },
    #[error(
        "{id} changes {}, which govern the team: only the person merges that",
        joined(files, ", ")
    )]
    Protected {
        id: TaskId,
        files: Vec<ProtectedChange>,
    },
    #[error("{id} is in review but records no commits (edited by hand?)")]
    NoCommits { id: TaskId },
    /// The start its owner recorded is not in its head's history: `start..head` would show
    /// anything at all, so its diff cannot be trusted.
    #[error(
        "{id} records its commits as starting at {start}, which is not in the history of its \
         head {head}: its diff cannot be trusted; nothing was changed"
    )]
    StartNotInHistory {
        id: TaskId,
        start: String,
        head: String,
    },
    /// The store failed otherwise (the server went away, a file could not be read).
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

impl ReviewError {
    /// The task is not in review, or its commits do not merge: the protocol said no (exit 3).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ReviewError::Conflicts { .. }
                | ReviewError::Protected { .. }
                | ReviewError::StartNotInHistory { .. }
                | ReviewError::Store(StoreError::Refused(_) | StoreError::NoSuchTask(_))
        )
    }
}

/// One task waiting for review, as a person needs to judge it.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    pub id: TaskId,
    pub subject: String,
    pub owner: Option<AgentName>,
    pub branch: String,
    pub head: String,
    /// The teammate's summary of what it did.
    pub summary: String,
    pub files: Vec<String>,
    pub additions: usize,
    pub deletions: usize,
    /// Files the merge would conflict in (empty: it merges cleanly).
    pub conflicts: Vec<String>,
    /// Changes that govern the team (crew's folders, symlinks, gitlinks, git's and the
    /// agents' settings, hooks, CI), each with why: never merged automatically.
    pub protected: Vec<ProtectedChange>,
    /// Seconds since it entered review.
    pub age_secs: u64,
    /// What the work on it used so far.
    pub usage: Option<crew_store::TaskUsage>,
    /// The reviewer agent's verdict on these commits (`carol: pass`), when one reviewed them.
    pub verdict: Option<String>,
    /// The reviewer's report with that verdict.
    pub verdict_report: Option<String>,
    /// Files merging it changes that its own commits do not: earlier commits of its branch
    /// come along (an earlier task still in review, or work recorded as before the task's
    /// start). Merging brings them too.
    pub also_brings: Vec<String>,
    /// Why its commits cannot be shown (the team's remote lacks them or cannot be reached, or
    /// its recorded start is not in its head's history): the task is still listed, so one bad
    /// branch hides no other review.
    pub unavailable: Option<String>,
}

/// Where reviews are answered: the team's store (its files, or PostgreSQL) and the checkout
/// whose base branch takes the merges (the person's). The screen, the CLI and the headless
/// runner of a team on files use the functions below, which answer on `Desk::files`.
pub struct Desk<'a, S> {
    store: S,
    root: PathBuf,
    config: &'a TeamConfig,
}

impl<'a> Desk<'a, FileStore> {
    /// The team in `workspace`: its files, and the repository its worktrees are in (another
    /// folder for a linked workspace).
    pub fn files(workspace: &Workspace, config: &'a TeamConfig) -> Self {
        Desk {
            store: FileStore::new(workspace.clone(), config.roster()),
            root: workspace.repository_root(),
            config,
        }
    }
}

impl<'a, S: TeamStore> Desk<'a, S> {
    /// Reviews of the team in `store`, merged into the checkout at `root`.
    pub fn new(store: S, root: PathBuf, config: &'a TeamConfig) -> Self {
        Desk {
            store,
            root,
            config,
        }
    }

    fn trees(&self) -> Result<Worktrees, ReviewError> {
        Ok(Worktrees::open(&self.root)?)
    }

    /// Every task in review, oldest id first. One whose commits cannot be had is listed with
    /// why, so one bad branch hides no other review.
    pub async fn list(&self) -> Result<Vec<Review>, ReviewError> {
        let trees = self.trees()?;
        self.store
            .tasks()
            .await
            .map_err(store_error)?
            .iter()
            .filter(|t| t.status == Status::Review)
            .map(|t| match describe(&trees, self.config, t) {
                Err(
                    e @ (ReviewError::Git(GitError::Remote { .. } | GitError::RemoteLacks { .. })
                    | ReviewError::StartNotInHistory { .. }),
                ) => Ok(unavailable(t, e.to_string())),
                described => described,
            })
            .collect()
    }

    /// The task `id` in review.
    pub async fn show(&self, id: TaskId) -> Result<Review, ReviewError> {
        describe(&self.trees()?, self.config, &self.in_review(id).await?)
    }

    /// Only that task's commits, against the merge base.
    pub async fn diff(&self, id: TaskId) -> Result<WorktreeDiff, ReviewError> {
        let task = self.in_review(id).await?;
        let trees = self.trees()?;
        let commits = commits_of(&trees, self.config, &task)?;
        Ok(trees.commits_diff(&commits.start, &commits.head, &self.config.team.base_branch)?)
    }

    /// The person merges the task's commits: the task is `completed` (and so is any earlier
    /// task of the same branch whose commits came along), its dependents unblock, the lead is
    /// told.
    pub async fn merge(&self, id: TaskId, by: &AgentName) -> Result<String, ReviewError> {
        self.merge_said(id, by, false).await
    }

    /// A headless team's `--merge auto` merges for the person, who has not reviewed it: said
    /// so, rather than "by user".
    pub async fn merge_automatically(&self, id: TaskId) -> Result<String, ReviewError> {
        self.merge_said(id, &USER, true).await
    }

    async fn merge_said(
        &self,
        id: TaskId,
        by: &AgentName,
        auto: bool,
    ) -> Result<String, ReviewError> {
        let task = self.in_review(id).await?;
        let commits = commits_of(&self.trees()?, self.config, &task)?;
        let how = if auto {
            self.merge_commits(&task, &commits)?
        } else {
            self.merge_commits_unchecked(&task, &commits)?
        };
        let base = &self.config.team.base_branch;
        let (who, how) = if auto {
            ("automatically".to_string(), format!("{AUTO_MERGE}; {how}"))
        } else {
            (format!("by {by}"), how)
        };
        self.store
            .mark_merged(id, by, &how)
            .await
            .map_err(store_error)?;
        let also = self.mark_came_along(task.id, by).await?;
        let mut text = format!("{} merged into {base} {who} ({how})", task.id);
        if !also.is_empty() {
            text.push_str(&format!("; with it {}", joined(&also, ", ")));
        }
        text.push_str(&self.publish_base());
        self.tell_lead(by, text.clone()).await?;
        Ok(text)
    }

    /// The merge queue moved the base to a tested commit holding `ids`: each is `completed`
    /// (and any earlier task of the same branch that came along), the lead is told; what was
    /// said.
    pub(crate) async fn mark_landed(
        &self,
        ids: &[TaskId],
        how: &str,
    ) -> Result<String, ReviewError> {
        for id in ids {
            self.store
                .mark_merged(*id, &USER, how)
                .await
                .map_err(store_error)?;
        }
        let mut also = Vec::new();
        for id in ids {
            also.extend(self.mark_came_along(*id, &USER).await?);
        }
        let mut text = format!(
            "{} merged into {} ({how})",
            joined(ids, ", "),
            self.config.team.base_branch
        );
        if !also.is_empty() {
            text.push_str(&format!("; with them {}", joined(&also, ", ")));
        }
        text.push_str(&self.publish_base());
        self.tell_lead(&USER, text.clone()).await?;
        Ok(text)
    }

    /// Marks `completed` every task in review whose commits the base branch now holds (they
    /// came along with the merge of `merged`, an earlier task of the same branch); their ids.
    pub(crate) async fn mark_came_along(
        &self,
        merged: TaskId,
        by: &AgentName,
    ) -> Result<Vec<TaskId>, ReviewError> {
        let trees = self.trees()?;
        let mut also = Vec::new();
        for other in self.store.tasks().await.map_err(store_error)? {
            let Some(c) = other
                .commits
                .as_ref()
                .filter(|_| other.status == Status::Review)
            else {
                continue;
            };
            if trees.base_contains(&self.config.team.base_branch, &c.head)? {
                self.store
                    .mark_merged(other.id, by, &format!("came along with {merged}"))
                    .await
                    .map_err(store_error)?;
                also.push(other.id);
            }
        }
        Ok(also)
    }

    /// Back to the same teammate with `note`: it takes the task again, its earlier commits
    /// kept.
    pub async fn send_back(
        &self,
        id: TaskId,
        by: &AgentName,
        note: &str,
    ) -> Result<Task, ReviewError> {
        let task = self
            .store
            .send_back(id, by, note)
            .await
            .map_err(store_error)?;
        self.tell_lead(
            by,
            format!(
                "{} sent back to {} by {by}: {note}",
                task.id,
                task.owner.as_deref().unwrap_or("nobody")
            ),
        )
        .await?;
        Ok(task)
    }

    /// The task's changes are taken back out of its teammate's branch (a revert commit: the
    /// commits stay in history) and the task is `failed` with `reason`.
    pub async fn discard(
        &self,
        id: TaskId,
        by: &AgentName,
        reason: &str,
    ) -> Result<Task, ReviewError> {
        let task = self.in_review(id).await?;
        let trees = self.trees()?;
        let commits = commits_of(&trees, self.config, &task)?;
        // The branch holds the commits; the owner may have changed since they were made.
        let name = commits
            .branch
            .strip_prefix("crew/")
            .unwrap_or(&commits.branch);
        let message = format!("{}: discarded by {by}\n\n{reason}\n", task.id);
        let author = Author::crew(by);
        // A teammate on another host has its branch there, not here: its commits never reached
        // the base, and that host's worker takes them out of its branch.
        let elsewhere = team_remote(self.config, &self.root).is_some()
            && !trees.path_of(name).is_ok_and(|p| p.exists());
        if !elsewhere
            && let MergeOutcome::Conflicts { files } =
                trees.revert_commits(name, &commits.start, &commits.head, &message, &author)?
        {
            return Err(ReviewError::Conflicts {
                id: task.id,
                base: commits.branch,
                files,
            });
        }
        let task = self
            .store
            .discard_review(id, by, reason)
            .await
            .map_err(store_error)?;
        self.tell_lead(by, format!("{} discarded by {by}: {reason}", task.id))
            .await?;
        Ok(task)
    }

    /// An automatic merge (`merge_when_done`, `--merge auto`): refused for changes that govern
    /// the team (`policy`).
    pub(crate) fn merge_commits(
        &self,
        task: &Task,
        commits: &TaskCommits,
    ) -> Result<String, ReviewError> {
        let protected = protected_in_merge(&self.trees()?, self.config, &commits.head)?;
        if !protected.is_empty() {
            return Err(ReviewError::Protected {
                id: task.id,
                files: protected,
            });
        }
        self.merge_commits_unchecked(task, commits)
    }

    fn merge_commits_unchecked(
        &self,
        task: &Task,
        commits: &TaskCommits,
    ) -> Result<String, ReviewError> {
        let trees = self.trees()?;
        let base = &self.config.team.base_branch;
        let owner = task.owner.as_deref().unwrap_or("crew");
        let author = Author::crew(owner);
        let label = format!("{} ({})", task.id, commits.branch);
        match trees.merge_commits(&label, &commits.head, base, &author)? {
            MergeOutcome::Conflicts { files } => Err(ReviewError::Conflicts {
                id: task.id,
                base: base.clone(),
                files,
            }),
            MergeOutcome::FastForward { new_head } => Ok(format!(
                "fast-forward to {}",
                &new_head[..new_head.len().min(10)]
            )),
            MergeOutcome::Merged { commit } => {
                Ok(format!("merge commit {}", &commit[..commit.len().min(10)]))
            }
            MergeOutcome::UpToDate => Ok("already in the base".to_string()),
        }
    }

    /// The person approves the task's diff into `queue`: it merges once the tests pass on
    /// what would land (see `merge_queue`). Changes that govern the team are refused: only the
    /// person's own merge takes those.
    pub async fn approve(
        &self,
        id: TaskId,
        by: &AgentName,
        queue: &MergeQueue,
    ) -> Result<String, ReviewError> {
        let task = self.in_review(id).await?;
        let trees = self.trees()?;
        let commits = commits_of(&trees, self.config, &task)?;
        let files = protected_in_merge(&trees, self.config, &commits.head)?;
        if !files.is_empty() {
            return Err(ReviewError::Protected { id, files });
        }
        queue.approve(id, &commits.head, by)?;
        let place = queue.load()?.active().count();
        let text = format!(
            "{id} approved into the merge queue by {by} (place {place}); it merges into {} once \
             the tests pass",
            self.config.team.base_branch
        );
        self.tell_lead(by, text.clone()).await?;
        Ok(text)
    }

    /// The task `id`, whatever its state.
    pub async fn task(&self, id: TaskId) -> Result<Task, ReviewError> {
        self.store.task(id).await.map_err(store_error)
    }

    /// The checkout whose base branch takes the merges.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    async fn in_review(&self, id: TaskId) -> Result<Task, ReviewError> {
        let task = self.store.task(id).await.map_err(store_error)?;
        if task.status != Status::Review {
            return Err(StoreError::from(Refusal::NotInReview {
                id: task.id,
                status: task.status.to_string(),
            })
            .into());
        }
        Ok(task)
    }

    /// After the person's merge: the base branch goes to the team's remote, so every host's
    /// next task starts from merged code. What went wrong, as a clause to add to what is said
    /// (the merge itself stands: it is in this checkout).
    fn publish_base(&self) -> String {
        let Some(remote) = team_remote(self.config, &self.root) else {
            return String::new();
        };
        let base = &self.config.team.base_branch;
        match remote.push_base(&self.root, base) {
            Ok(()) => String::new(),
            Err(e) => {
                tracing::warn!("the merged base was not pushed: {e}");
                format!("; {base} not pushed to the team's remote: {e}")
            }
        }
    }

    async fn tell_lead(&self, by: &AgentName, text: String) -> Result<(), ReviewError> {
        self.store
            .send(Draft {
                kind: MessageKind::StatusUpdate,
                text: Some(text),
                ..Draft::new(by.clone(), self.config.lead_name().clone())
            })
            .await
            .map(|_| ())
            .map_err(store_error)
    }
}

/// A store's error as a review's: its refusals and missing tasks as the file store words them
/// (a refusal is exit 3 wherever the team is kept), anything else as it is.
fn store_error<E: BackendError>(e: E) -> ReviewError {
    let (refusal, missing) = (e.refusal().cloned(), e.no_such_task());
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
    match (boxed.downcast::<StoreError>(), refusal, missing) {
        (Ok(files), _, _) => ReviewError::Store(*files),
        (Err(_), Some(refusal), _) => ReviewError::Store(StoreError::Refused(refusal)),
        (Err(_), None, Some(id)) => ReviewError::Store(StoreError::NoSuchTask(id)),
        (Err(other), None, None) => ReviewError::Backend(other),
    }
}

/// A file store's operations are ready at once: no runtime is needed to wait for them.
fn now<T>(f: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(f)
}

/// Every task in review, oldest id first.
pub fn list(workspace: &Workspace, config: &TeamConfig) -> Result<Vec<Review>, ReviewError> {
    now(Desk::files(workspace, config).list())
}

/// A task in review whose commits are not here to describe, and why.
fn unavailable(task: &Task, why: String) -> Review {
    let commits = task.commits.as_deref();
    Review {
        id: task.id,
        subject: task.subject.clone(),
        owner: task.owner.clone(),
        branch: commits.map(|c| c.branch.clone()).unwrap_or_default(),
        head: commits.map(|c| c.head.clone()).unwrap_or_default(),
        summary: task.result.clone().unwrap_or_default(),
        files: Vec::new(),
        additions: 0,
        deletions: 0,
        conflicts: Vec::new(),
        protected: Vec::new(),
        also_brings: Vec::new(),
        age_secs: age_of(task),
        usage: task.usage,
        verdict: None,
        verdict_report: None,
        unavailable: Some(why),
    }
}

/// Seconds since the task last changed (it entered review).
fn age_of(task: &Task) -> u64 {
    humantime::parse_rfc3339_weak(&task.updated_at)
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .map_or(0, |d| d.as_secs())
}

/// The task `id` in review.
pub fn show(workspace: &Workspace, config: &TeamConfig, id: TaskId) -> Result<Review, ReviewError> {
    now(Desk::files(workspace, config).show(id))
}

/// Only that task's commits, against the merge base.
pub fn diff(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
) -> Result<WorktreeDiff, ReviewError> {
    now(Desk::files(workspace, config).diff(id))
}

/// The person merges the task's commits (see [`Desk::merge`]).
pub fn merge(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
) -> Result<String, ReviewError> {
    now(Desk::files(workspace, config).merge(id, by))
}

const AUTO_MERGE: &str = "--merge auto, not reviewed by the person";

/// A headless team's `--merge auto` (see [`Desk::merge_automatically`]).
pub fn merge_automatically(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
) -> Result<String, ReviewError> {
    now(Desk::files(workspace, config).merge_automatically(id))
}

/// The person approves the task's diff into the merge queue (see [`Desk::approve`]).
pub fn approve(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
) -> Result<String, ReviewError> {
    now(Desk::files(workspace, config).approve(id, by, &workspace.merge_queue()))
}

/// The changes that govern the team (`policy`) among what merging `head` brings in (the
/// whole branch: earlier tasks' unmerged commits count too).
pub(crate) fn protected_in_merge(
    trees: &Worktrees,
    config: &TeamConfig,
    head: &str,
) -> Result<Vec<ProtectedChange>, ReviewError> {
    let merged = trees.merge_diff(head, &config.team.base_branch)?;
    Ok(protected_changes(&merged.files, &governed(trees, config)?))
}

/// See [`Desk::mark_came_along`].
pub(crate) fn mark_came_along(
    workspace: &Workspace,
    config: &TeamConfig,
    merged: TaskId,
    by: &AgentName,
) -> Result<Vec<TaskId>, ReviewError> {
    now(Desk::files(workspace, config).mark_came_along(merged, by))
}

/// Back to the same teammate with `note` (see [`Desk::send_back`]).
pub fn send_back(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
    note: &str,
) -> Result<Task, ReviewError> {
    now(Desk::files(workspace, config).send_back(id, by, note))
}

/// Taken back out and failed (see [`Desk::discard`]).
pub fn discard(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
    reason: &str,
) -> Result<Task, ReviewError> {
    now(Desk::files(workspace, config).discard(id, by, reason))
}

/// See [`Desk::merge_commits`].
pub(crate) fn merge_commits(
    workspace: &Workspace,
    config: &TeamConfig,
    task: &Task,
    commits: &TaskCommits,
) -> Result<String, ReviewError> {
    Desk::files(workspace, config).merge_commits(task, commits)
}

fn describe(trees: &Worktrees, config: &TeamConfig, task: &Task) -> Result<Review, ReviewError> {
    let commits = commits_of(trees, config, task)?;
    let base = &config.team.base_branch;
    let diff = trees.commits_diff(&commits.start, &commits.head, base)?;
    let files: Vec<String> = diff.files.iter().map(|f| f.path.clone()).collect();
    let protected = protected_changes(&diff.files, &governed(trees, config)?);
    let also_brings = trees
        .merge_diff(&commits.head, base)?
        .files
        .into_iter()
        .map(|f| f.path)
        .filter(|p| !files.contains(p))
        .collect();
    // A verdict on older commits (before a send-back) says nothing about these.
    let current = task.review.as_ref().filter(|v| v.head == commits.head);
    let age_secs = age_of(task);
    Ok(Review {
        id: task.id,
        subject: task.subject.clone(),
        owner: task.owner.clone(),
        branch: commits.branch.clone(),
        head: commits.head.clone(),
        summary: task.result.clone().unwrap_or_default(),
        protected,
        conflicts: trees.merge_conflicts(&commits.head, base)?,
        additions: diff.totals.additions,
        deletions: diff.totals.deletions,
        files,
        age_secs,
        usage: task.usage,
        verdict: current.as_ref().map(|v| format!("{}: {}", v.by, v.verdict)),
        verdict_report: current.map(|v| v.report.clone()),
        also_brings,
        unavailable: None,
    })
}

/// What the merge policy needs besides the change itself.
fn governed<'a>(trees: &Worktrees, config: &'a TeamConfig) -> Result<Governed<'a>, ReviewError> {
    Ok(Governed {
        config,
        hooks_path: trees.hooks_path()?,
    })
}

/// The task's recorded commits, fetched from the team's remote when this checkout lacks them
/// (a teammate on another host made them).
fn commits_of(
    trees: &Worktrees,
    config: &TeamConfig,
    task: &Task,
) -> Result<TaskCommits, ReviewError> {
    let commits = task
        .commits
        .as_deref()
        .cloned()
        .ok_or(ReviewError::NoCommits { id: task.id })?;
    if let Some(remote) = team_remote(config, trees.root()) {
        remote.fetch_task(trees, &commits.branch, &task.id.to_string(), &commits.head)?;
    }
    // On PostgreSQL its owner records the start itself, with its own role.
    if !trees.has_in_history(&commits.head, &commits.start)? {
        return Err(ReviewError::StartNotInHistory {
            id: task.id,
            start: commits.start,
            head: commits.head,
        });
    }
    Ok(commits)
}

/// `[team] remote`, for the checkout at `root`.
pub(crate) fn team_remote(config: &TeamConfig, root: &std::path::Path) -> Option<TeamRemote> {
    let url = config.team.remote.as_ref()?;
    Some(TeamRemote::new(url.get_ref(), root))
}
