//! Reviews: the tasks in `review`, what each would bring into the base branch, and the person's
//! answers (merge, send back with a note, discard with a reason). The screen, the CLI and the
//! headless runner all go through here, so a review means the same wherever it is answered.

mod policy;

use std::time::SystemTime;

use serde::Serialize;

use crew_config::TeamConfig;
use crew_git::{Author, GitError, MergeOutcome, TeamRemote, WorktreeDiff, Worktrees};
use crew_protocol::joined;
use crew_store::{
    AgentName, Draft, MessageKind, Refusal, Status, StoreError, Task, TaskCommits, TaskId, USER,
    Workspace,
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
}

impl ReviewError {
    /// The task is not in review, or its commits do not merge: the protocol said no (exit 3).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ReviewError::Conflicts { .. }
                | ReviewError::Protected { .. }
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
    /// Why its commits cannot be shown (the team's remote lacks them or cannot be reached):
    /// the task is still listed, so one bad branch hides no other review.
    pub unavailable: Option<String>,
}

/// Every task in review, oldest id first.
pub fn list(workspace: &Workspace, config: &TeamConfig) -> Result<Vec<Review>, ReviewError> {
    let trees = worktrees(workspace)?;
    workspace
        .tasks()
        .load_all()?
        .tasks
        .iter()
        .filter(|t| t.status == Status::Review)
        .map(|t| match describe(&trees, config, t) {
            Err(ReviewError::Git(e @ (GitError::Remote { .. } | GitError::RemoteLacks { .. }))) => {
                Ok(unavailable(t, e.to_string()))
            }
            described => described,
        })
        .collect()
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
    let trees = worktrees(workspace)?;
    describe(&trees, config, &in_review(workspace, id)?)
}

/// Only that task's commits, against the merge base.
pub fn diff(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
) -> Result<WorktreeDiff, ReviewError> {
    let task = in_review(workspace, id)?;
    let trees = worktrees(workspace)?;
    let commits = commits_of(&trees, config, &task)?;
    Ok(trees.commits_diff(&commits.start, &commits.head, &config.team.base_branch)?)
}

/// The person merges the task's commits: the task is `completed` (and so is any earlier task
/// of the same branch whose commits came along), its dependents unblock, the lead is told.
pub fn merge(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
) -> Result<String, ReviewError> {
    merge_said(workspace, config, id, by, false)
}

const AUTO_MERGE: &str = "--merge auto, not reviewed by the person";

/// A headless team's `--merge auto` merges for the person, who has not reviewed it: said so,
/// rather than "by user".
pub fn merge_automatically(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
) -> Result<String, ReviewError> {
    merge_said(workspace, config, id, &USER, true)
}

fn merge_said(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
    auto: bool,
) -> Result<String, ReviewError> {
    let task = in_review(workspace, id)?;
    let commits = commits_of(&worktrees(workspace)?, config, &task)?;
    let how = if auto {
        merge_commits(workspace, config, &task, &commits)?
    } else {
        merge_commits_unchecked(workspace, config, &task, &commits)?
    };
    let base = &config.team.base_branch;
    let (who, how) = if auto {
        ("automatically".to_string(), format!("{AUTO_MERGE}; {how}"))
    } else {
        (format!("by {by}"), how)
    };
    workspace.tasks().mark_merged(id, by, &how)?;
    let also = mark_came_along(workspace, config, task.id, by)?;
    let mut text = format!("{} merged into {base} {who} ({how})", task.id);
    if !also.is_empty() {
        text.push_str(&format!("; with it {}", joined(&also, ", ")));
    }
    text.push_str(&publish_base(workspace, config));
    tell_lead(workspace, config, by, text.clone())?;
    Ok(text)
}

/// The person approves the task's diff into the merge queue: it merges once the tests pass on
/// what would land (see `merge_queue`). Changes that govern the team are refused: only the
/// person's own merge takes those.
pub fn approve(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
) -> Result<String, ReviewError> {
    let task = in_review(workspace, id)?;
    let trees = worktrees(workspace)?;
    let commits = commits_of(&trees, config, &task)?;
    let files = protected_in_merge(&trees, config, &commits.head)?;
    if !files.is_empty() {
        return Err(ReviewError::Protected { id, files });
    }
    let queue = workspace.merge_queue();
    queue.approve(id, &commits.head, by)?;
    let place = queue.load()?.active().count();
    let text = format!(
        "{id} approved into the merge queue by {by} (place {place}); it merges into {} once the \
         tests pass",
        config.team.base_branch
    );
    tell_lead(workspace, config, by, text.clone())?;
    Ok(text)
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

/// The merge queue moved the base to a tested commit holding `ids`: each is `completed` (and
/// any earlier task of the same branch that came along), the lead is told; what was said.
pub(crate) fn mark_landed(
    workspace: &Workspace,
    config: &TeamConfig,
    ids: &[TaskId],
    how: &str,
) -> Result<String, ReviewError> {
    for id in ids {
        workspace.tasks().mark_merged(*id, &USER, how)?;
    }
    let mut also = Vec::new();
    for id in ids {
        also.extend(mark_came_along(workspace, config, *id, &USER)?);
    }
    let mut text = format!(
        "{} merged into {} ({how})",
        joined(ids, ", "),
        config.team.base_branch
    );
    if !also.is_empty() {
        text.push_str(&format!("; with them {}", joined(&also, ", ")));
    }
    text.push_str(&publish_base(workspace, config));
    tell_lead(workspace, config, &USER, text.clone())?;
    Ok(text)
}

/// Marks `completed` every task in review whose commits the base branch now holds (they came
/// along with the merge of `merged`, an earlier task of the same branch); their ids.
pub(crate) fn mark_came_along(
    workspace: &Workspace,
    config: &TeamConfig,
    merged: TaskId,
    by: &AgentName,
) -> Result<Vec<TaskId>, ReviewError> {
    let trees = worktrees(workspace)?;
    let mut also = Vec::new();
    for other in workspace.tasks().load_all()?.tasks {
        let Some(c) = other
            .commits
            .as_ref()
            .filter(|_| other.status == Status::Review)
        else {
            continue;
        };
        if trees.base_contains(&config.team.base_branch, &c.head)? {
            workspace
                .tasks()
                .mark_merged(other.id, by, &format!("came along with {merged}"))?;
            also.push(other.id);
        }
    }
    Ok(also)
}

/// Back to the same teammate with `note`: it takes the task again, its earlier commits kept.
pub fn send_back(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
    note: &str,
) -> Result<Task, ReviewError> {
    let task = workspace.tasks().send_back(id, by, note)?;
    tell_lead(
        workspace,
        config,
        by,
        format!(
            "{} sent back to {} by {by}: {note}",
            task.id,
            task.owner.as_deref().unwrap_or("nobody")
        ),
    )?;
    Ok(task)
}

/// The task's changes are taken back out of its teammate's branch (a revert commit: the
/// commits stay in history) and the task is `failed` with `reason`.
pub fn discard(
    workspace: &Workspace,
    config: &TeamConfig,
    id: TaskId,
    by: &AgentName,
    reason: &str,
) -> Result<Task, ReviewError> {
    let task = in_review(workspace, id)?;
    let commits = commits_of(&worktrees(workspace)?, config, &task)?;
    // The branch holds the commits; the owner may have changed since they were made.
    let name = commits
        .branch
        .strip_prefix("crew/")
        .unwrap_or(&commits.branch);
    let trees = worktrees(workspace)?;
    let message = format!("{}: discarded by {by}\n\n{reason}\n", task.id);
    let author = Author::crew(by);
    if let MergeOutcome::Conflicts { files } =
        trees.revert_commits(name, &commits.start, &commits.head, &message, &author)?
    {
        return Err(ReviewError::Conflicts {
            id: task.id,
            base: commits.branch,
            files,
        });
    }
    let task = workspace.tasks().discard_review(id, by, reason)?;
    tell_lead(
        workspace,
        config,
        by,
        format!("{} discarded by {by}: {reason}", task.id),
    )?;
    Ok(task)
}

/// An automatic merge (`merge_when_done`, `--merge auto`): refused for changes that govern the
/// team (`policy`).
pub(crate) fn merge_commits(
    workspace: &Workspace,
    config: &TeamConfig,
    task: &Task,
    commits: &TaskCommits,
) -> Result<String, ReviewError> {
    let trees = worktrees(workspace)?;
    let protected = protected_in_merge(&trees, config, &commits.head)?;
    if !protected.is_empty() {
        return Err(ReviewError::Protected {
            id: task.id,
            files: protected,
        });
    }
    merge_commits_unchecked(workspace, config, task, commits)
}

fn merge_commits_unchecked(
    workspace: &Workspace,
    config: &TeamConfig,
    task: &Task,
    commits: &TaskCommits,
) -> Result<String, ReviewError> {
    let trees = worktrees(workspace)?;
    let base = &config.team.base_branch;
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

fn describe(trees: &Worktrees, config: &TeamConfig, task: &Task) -> Result<Review, ReviewError> {
    let commits = commits_of(trees, config, task)?;
    let base = &config.team.base_branch;
    let diff = trees.commits_diff(&commits.start, &commits.head, base)?;
    let files: Vec<String> = diff.files.iter().map(|f| f.path.clone()).collect();
    let protected = protected_changes(&diff.files, &governed(trees, config)?);
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

/// The repository the team's worktrees are in (another folder for a linked workspace).
fn worktrees(workspace: &Workspace) -> Result<Worktrees, ReviewError> {
    Ok(Worktrees::open(&workspace.repository_root())?)
}

fn in_review(workspace: &Workspace, id: TaskId) -> Result<Task, ReviewError> {
    let task = workspace.tasks().read(id)?;
    if task.status != Status::Review {
        return Err(StoreError::from(Refusal::NotInReview {
            id: task.id,
            status: task.status.to_string(),
        })
        .into());
    }
    Ok(task)
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
        remote.fetch_task(
            trees.root(),
            &commits.branch,
            &task.id.to_string(),
            &commits.head,
        )?;
    }
    Ok(commits)
}

/// `[team] remote`, for the checkout at `root`.
pub(crate) fn team_remote(config: &TeamConfig, root: &std::path::Path) -> Option<TeamRemote> {
    let url = config.team.remote.as_ref()?;
    Some(TeamRemote::new(url.get_ref(), root))
}

/// After the person's merge: the base branch goes to the team's remote, so every host's next
/// task starts from merged code. What went wrong, as a clause to add to what is said (the merge
/// itself stands: it is in this checkout).
fn publish_base(workspace: &Workspace, config: &TeamConfig) -> String {
    let root = workspace.repository_root();
    let Some(remote) = team_remote(config, &root) else {
        return String::new();
    };
    match remote.push_base(&root, &config.team.base_branch) {
        Ok(()) => String::new(),
        Err(e) => {
            tracing::warn!("the merged base was not pushed: {e}");
            format!(
                "; {} not pushed to the team's remote: {e}",
                config.team.base_branch
            )
        }
    }
}

fn tell_lead(
    workspace: &Workspace,
    config: &TeamConfig,
    by: &AgentName,
    text: String,
) -> Result<(), StoreError> {
    workspace
        .mailboxes()
        .send(
            &config.roster(),
            Draft {
                kind: MessageKind::StatusUpdate,
                text: Some(text),
                ..Draft::new(by.clone(), config.lead_name().clone())
            },
        )
        .map(|_| ())
}
