//! A writing teammate's task on its branch `crew/<name>`, whatever runs the work (crew's agent
//! loop or a coding-agent CLI): brought up to date before, committed after, sent to review.

use std::path::Path;

use crew_config::TeamConfig;
use crew_git::{Author, MergeOutcome, Worktrees};

use crate::review;
use crate::run::link::{LinkedStore, TeamLink};
use crate::work::{Job, JobOutcome};
use crew_protocol::joined;
use crew_store::{AgentName, Draft, MessageKind, Task, TaskCommits, TaskId};

/// Teammate `name`'s branch in the repository at `root` (the person's checkout, or a joined
/// host's clone), its tasks in the store `link` reaches.
pub(crate) struct TaskBranch<'a, S: LinkedStore> {
    pub link: &'a TeamLink<S>,
    pub root: &'a Path,
    pub config: &'a TeamConfig,
    pub name: &'a AgentName,
}

impl<S: LinkedStore> TaskBranch<'_, S> {
    fn read(&self, id: TaskId) -> Result<Task, String> {
        self.link
            .call(|store| async move { store.task(id).await })
            .map_err(|e| e.to_string())
    }

    fn author(&self) -> Author {
        Author::crew(self.name)
    }

    /// After a job: the task it worked on (its own, or the one the person interrupted, which
    /// their message continues) is kept when this job was interrupted too, and otherwise
    /// committed when the agent writes.
    /// Returns the task to keep for the person's next message (none when nothing was cut).
    pub(crate) fn settle(
        &self,
        job: &Job,
        interrupted: Option<Task>,
        writes: bool,
        outcome: &mut JobOutcome,
    ) -> Option<Task> {
        let worked_on = match job {
            Job::Task(task) => Some(task.clone()),
            Job::Message(_) => interrupted.and_then(|t| self.still_mine(t)),
        };
        if outcome.interrupted {
            return worked_on;
        }
        if let (Some(task), true) = (worked_on, writes) {
            self.commit(&task, outcome);
        }
        None
    }

    /// `task` as it is now, if it is still in progress under this teammate (the person may
    /// have released or reassigned it after the interrupt).
    fn still_mine(&self, task: Task) -> Option<Task> {
        let now = self.read(task.id).ok()?;
        (now.status == crew_store::Status::InProgress && now.owner.as_ref() == Some(self.name))
            .then_some(now)
    }

    /// Before a writer's task: its worktree is brought up to date with the base branch (so it
    /// starts from merged code), and where the task's commits start is recorded. A conflict
    /// (or local changes in the way) changes nothing, and the task is not started.
    pub(crate) fn prepare(&self, task: &Task) -> Result<(), String> {
        let base = &self.config.team.base_branch;
        let branch = format!("crew/{}", self.name);
        let trees = Worktrees::open(self.root).map_err(|e| e.to_string())?;
        let not_started = |why: String| {
            format!(
                "not started: bringing {branch} up to date with {base} {why}; nothing was \
                 changed. Resolve it in .worktrees/{}, then hand the task out again",
                self.name
            )
        };
        // A joined host's base is its clone's: first brought to what the person pushed.
        if self.link.store().files().is_none()
            && let Some(remote) = review::team_remote(self.config, self.root)
            && let Err(e) = remote.update_base(self.root, base)
        {
            return Err(not_started(format!("from the team's remote failed: {e}")));
        }
        self.take_out_discarded(&trees)
            .map_err(|why| not_started(format!("failed: {why}")))?;
        match trees.bring_up_to_date(self.name, base, &self.author()) {
            Ok(MergeOutcome::Conflicts { files }) => {
                return Err(not_started(format!("conflicts in {}", files.join(", "))));
            }
            Err(e) => return Err(not_started(format!("failed: {e}"))),
            Ok(_) => {}
        }
        let head = trees.head_of(self.name).map_err(|e| e.to_string())?;
        self.continue_earlier_work(&trees, task)
            .map_err(|why| format!("not started: {why}; nothing was recorded"))?;
        let id = task.id;
        self.link
            .call(|store| async move { store.record_start(id, &branch, &head).await })
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// On a joined host, work of this teammate's that the person discarded is taken back out of
    /// its branch here (the person's side could not: the branch is on this host), once: each
    /// revert is remembered in this clone's `.crew/discarded/<task>`. On files the person's
    /// discard reverts it at once.
    fn take_out_discarded(&self, trees: &Worktrees) -> Result<(), String> {
        if self.link.store().files().is_some() {
            return Ok(());
        }
        let mine = format!("crew/{}", self.name);
        let tasks = self
            .link
            .call(|store| async move { store.tasks().await })
            .map_err(|e| e.to_string())?;
        let done = self.root.join(".crew/discarded");
        for task in tasks
            .iter()
            .filter(|t| crew_store::review::was_discarded(t))
        {
            let Some(commits) = task
                .commits
                .as_deref()
                .filter(|c| c.branch == mine && c.head != c.start)
            else {
                continue;
            };
            let mark = done.join(task.id.to_string());
            if mark.exists() || !trees.holds(self.name, &commits.head).unwrap_or(false) {
                continue;
            }
            let message = format!(
                "{}: discarded ({})\n",
                task.id,
                task.result.as_deref().unwrap_or_default()
            );
            match trees.revert_commits(
                self.name,
                &commits.start,
                &commits.head,
                &message,
                &self.author(),
            ) {
                Ok(MergeOutcome::Conflicts { files }) => {
                    return Err(format!(
                        "taking discarded {} out of {mine} conflicts in {}",
                        task.id,
                        files.join(", ")
                    ));
                }
                Err(e) => return Err(format!("taking discarded {} out of {mine}: {e}", task.id)),
                Ok(_) => {}
            }
            std::fs::create_dir_all(&done)
                .and_then(|()| std::fs::write(&mark, &commits.head))
                .map_err(|e| format!("{}: {e}", mark.display()))?;
        }
        Ok(())
    }

    /// A task that changed hands (its teammate's host went silent, the person reassigned it)
    /// continues from the commits its earlier owner made for it: fetched from the team's remote
    /// when they are not here, merged into this teammate's branch. Its start stays before them,
    /// so the review shows them as the task's.
    fn continue_earlier_work(&self, trees: &Worktrees, task: &Task) -> Result<(), String> {
        let mine = format!("crew/{}", self.name);
        let Some(earlier) = task
            .commits
            .as_deref()
            .filter(|c| c.branch != mine && c.head != c.start)
        else {
            return Ok(());
        };
        // Work that cannot be had (never pushed from a host that is gone) is not waited for:
        // the task starts afresh, and the log says what was left behind.
        if let Some(remote) = review::team_remote(self.config, self.root)
            && let Err(e) =
                remote.fetch_task(trees, &earlier.branch, &task.id.to_string(), &earlier.head)
        {
            tracing::warn!(
                "{}: {} starts afresh: {}'s earlier work is not to be had: {e}",
                self.name,
                task.id,
                earlier.branch
            );
            return Ok(());
        }
        match trees.take_over(self.name, &earlier.head, &earlier.branch, &self.author()) {
            Ok(MergeOutcome::Conflicts { files }) => Err(format!(
                "{}'s earlier work conflicts with {mine} in {}",
                earlier.branch,
                files.join(", ")
            )),
            Err(e) => Err(format!("{}'s earlier work: {e}", earlier.branch)),
            Ok(_) => Ok(()),
        }
    }

    /// After a writer's task: everything it changed becomes the task's commit
    /// (`task_N: <subject>`, the summary as its body, the teammate as author). Commits that are
    /// not in the base branch yet go to review, or are merged at once with `merge_when_done`.
    fn commit(&self, task: &Task, outcome: &mut JobOutcome) {
        let committed = self.try_commit(task, outcome.success, &outcome.summary);
        match committed {
            Ok(commits) => {
                if let Some(c) = &commits {
                    self.push(task, c, outcome);
                }
                outcome.commits = commits;
            }
            Err(e) => {
                outcome.success = false;
                outcome.summary = format!("{}\n[work not committed: {e}]", outcome.summary);
            }
        }
        if self.config.worktree.merge_when_done && outcome.success {
            self.merge_at_once(task, outcome);
        }
    }

    fn try_commit(
        &self,
        task: &Task,
        success: bool,
        summary: &str,
    ) -> Result<Option<TaskCommits>, String> {
        let trees = Worktrees::open(self.root)
            .map_err(|e| e.to_string())?
            .with_max_task_bytes(self.config.limits.max_task_bytes);
        let unfinished = if success { "" } else { " (unfinished)" };
        // A round after a send-back says so, so the branch's history tells the rounds apart.
        let round = match crew_store::review::review_notes(task).last() {
            Some(note) if task.commits.is_some() => {
                format!(
                    " (sent back by {})",
                    note.lines().next().unwrap_or_default()
                )
            }
            _ => String::new(),
        };
        let message = format!(
            "{}: {}{round}{unfinished}\n\n{summary}\n",
            task.id, task.subject
        );
        let head = trees
            .commit_work(self.name, &message, &self.author())
            .map_err(|e| e.to_string())?;
        let recorded = self.read(task.id)?.commits;
        // Only commits on this teammate's branch are the task's: one the task went to meanwhile
        // (a lease that lapsed, a reassignment) records its own branch, which this head must not
        // be pushed to or reported as.
        let mine = format!("crew/{}", self.name);
        // On PostgreSQL only the person's merge completes a writing teammate's task, even one
        // that changed nothing (its host's word that nothing changed is not trusted): it goes
        // to review empty. On files the worker completes it.
        let empty_goes_to_review = self.link.store().files().is_none();
        Ok(recorded
            .filter(|c| c.branch == mine && (c.start != head || empty_goes_to_review))
            .map(|c| TaskCommits { head, ..*c }))
    }

    /// With `[team] remote`: the task's commits go there as `crew/<name>/task_N` each time they
    /// are committed (finished or not), so the person can review them from another host and
    /// whoever takes the task over continues from them. A failed push is said in the summary:
    /// the commits stay on this host's branch.
    fn push(&self, task: &Task, commits: &TaskCommits, outcome: &mut JobOutcome) {
        let root = self.root;
        let Some(remote) = review::team_remote(self.config, root) else {
            return;
        };
        if let Err(e) = remote.push_task(root, &commits.branch, &task.id.to_string(), &commits.head)
        {
            tracing::warn!("{}: {} not pushed: {e}", self.name, task.id);
            outcome.summary = format!(
                "{}\n[committed on {} but not pushed to the team's remote: {e}]",
                outcome.summary, commits.branch
            );
        }
    }

    /// `merge_when_done`: the task's commits go into the base branch now, unless they change
    /// what governs the team (crew.toml, .crew/, hook scripts, CI files): those always wait for
    /// the person. A conflict also leaves the task in review, where the person sees it.
    fn merge_at_once(&self, task: &Task, outcome: &mut JobOutcome) {
        let Some(commits) = outcome.commits.clone() else {
            return;
        };
        let base = &self.config.team.base_branch;
        // The base branch is the person's checkout's: a host that joined the team from another
        // machine has only its clone, so what it finishes waits for review there.
        let Some(workspace) = self.link.store().files() else {
            outcome.summary = format!(
                "{}\n[{} waits for review: merge_when_done merges in the person's checkout, \
                 not on a joined host]",
                outcome.summary, task.id
            );
            return;
        };
        let note = match review::merge_commits(workspace, self.config, task, &commits) {
            Ok(how) => {
                outcome.commits = None;
                let mut note =
                    format!("merged {} ({}) into {base}: {how}", task.id, commits.branch);
                match review::mark_came_along(workspace, self.config, task.id, self.name) {
                    Ok(also) if !also.is_empty() => {
                        note.push_str(&format!("; with it {}", joined(&also, ", ")));
                    }
                    Ok(_) => {}
                    Err(e) => note.push_str(&format!("; earlier tasks not marked merged: {e}")),
                }
                note
            }
            Err(e) => format!(
                "{} not merged automatically: {e}; it waits for review",
                task.id
            ),
        };
        outcome.summary = format!("{}\n[{note}]", outcome.summary);
    }

    /// `review_by`: a review job is sent to the reviewer when a task enters review.
    pub(crate) fn ask_for_review(&self, task: &Task) {
        let Some(by) = &self.config.worktree.review_by else {
            return;
        };
        let mut extra = serde_json::Map::new();
        extra.insert("task".into(), task.id.to_string().into());
        let draft = Draft {
            kind: MessageKind::ReviewRequest,
            text: Some(format!("Please review {}: {}", task.id, task.subject)),
            extra,
            ..Draft::new(self.name.clone(), by.get_ref().clone())
        };
        let sent = self
            .link
            .call(|store| async move { store.send(draft).await });
        if let Err(e) = sent {
            tracing::warn!(
                "{}: review request for {} not sent: {e}",
                self.name,
                task.id
            );
        }
    }
}
