//! A Claude Code teammate's task under crew's review: when the teammate marks its task
//! completed, crew commits what it left in its worktree and holds the task in review in crew's
//! workspace for the team (the `Mirror`'s, linked to the person's repository); Claude Code's
//! task stays `in_progress` until the person merges it, and only then is it `completed` and
//! the lead told. A send-back reaches the teammate's inbox as a message with the note.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crew_git::{Author, Worktrees};
use crew_store::atomic::write_atomic;
use crew_store::task::now_rfc3339;
use crew_store::{Status, Task, TaskCommits, Workspace};

use super::files::{self, TaskFile};
use super::{AttachError, inbox_write, locked_file};

/// Who sends crew's word into Claude Code's inboxes.
pub(crate) const CREW_SENDER: &str = "crew";

/// In a held task's `extra`: its end (merged, or discarded) was told to Claude Code.
const TOLD_END: &str = "claude_told_end";
/// In a held task's `extra`: how many of its notes the teammate was sent.
const TOLD_NOTES: &str = "claude_told_notes";

/// What became of a teammate's "completed".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandIn {
    /// In crew's review as crew's task `task`: the text says so to the teammate (as the
    /// tool's refusal).
    InReview {
        task: crew_store::TaskId,
        text: String,
    },
    /// The task changed nothing: completed as Claude Code would have it.
    NothingToReview,
    /// Not this teammate's task (or not a task crew knows): Claude Code decides.
    NotHeld,
}

/// One teammate of team `team`, working in worktree `name` of `trees`, whose reviews are held
/// in `workspace` (see the module documentation).
pub struct HeldTeammate<'a> {
    pub home: &'a Path,
    pub team: &'a str,
    /// Its Claude Code name.
    pub teammate: &'a str,
    pub workspace: &'a Workspace,
    pub trees: &'a Worktrees,
    pub base_branch: &'a str,
}

impl HeldTeammate<'_> {
    fn task_file(&self, id: &str) -> PathBuf {
        task_file(self.home, self.team, id)
    }

    /// The teammate marks Claude Code task `id` completed.
    pub fn hand_in(&self, id: &str) -> Result<HandIn, AttachError> {
        let path = self.task_file(id);
        let Some(task) = read_task(&path)? else {
            return Ok(HandIn::NotHeld);
        };
        if task.owner.as_deref() != Some(self.teammate) {
            return Ok(HandIn::NotHeld);
        }
        let Some(mut held) = files::to_crew_task(&task, &files::crew_name) else {
            return Ok(HandIn::NotHeld);
        };
        let name = files::crew_name(self.teammate);
        let message = format!(
            "{}: {}\n\nwork of Claude Code teammate {} (task #{id} of team {})",
            held.id, task.subject, self.teammate, self.team
        );
        let head = self
            .trees
            .commit_work(name.as_str(), &message, &Author::crew(name.as_str()))?;
        let earlier = self.held(held.id)?;
        // After a send-back the review shows the task's commits from its first hand-in on.
        let start = match earlier.as_ref().and_then(|t| t.commits.as_deref()) {
            Some(commits) => commits.start.clone(),
            None => self.trees.fork_point(&head, self.base_branch)?,
        };
        if start == head {
            return Ok(HandIn::NothingToReview);
        }
        let branch = format!("crew/{name}");
        held.status = Status::Review;
        held.owner = Some(name);
        held.commits = Some(Box::new(TaskCommits {
            branch: branch.clone(),
            start,
            head: head.clone(),
        }));
        held.result = Some(format!(
            "Claude Code teammate {} marked task #{id} completed",
            self.teammate
        ));
        let now = now_rfc3339();
        held.created_at = earlier
            .as_ref()
            .map_or_else(|| now.clone(), |t| t.created_at.clone());
        held.updated_at = now;
        if let Some(earlier) = earlier {
            held.notes = earlier.notes;
            if let Some(told) = earlier.extra.get(TOLD_NOTES) {
                held.extra.insert(TOLD_NOTES.into(), told.clone());
            }
        }
        keep(self.workspace, &held)?;
        Ok(HandIn::InReview {
            task: held.id,
            text: format!(
                "crew holds task #{id} for the person's review: your work is commit {} on \
                 branch {branch}. It becomes completed when the person merges it; do not mark \
                 it completed again. Tell the lead it is in review.",
                &head[..head.len().min(12)]
            ),
        })
    }

    /// The task crew holds for Claude Code task `id`, if any.
    fn held(&self, id: crew_store::TaskId) -> Result<Option<Task>, AttachError> {
        read_held(self.workspace, id)
    }
}

/// Held task `id` needs no word to Claude Code of its end: it was merged at once, and the
/// teammate's own "completed" stands.
pub(crate) fn mark_told_end(
    workspace: &Workspace,
    id: crew_store::TaskId,
) -> Result<(), AttachError> {
    let Some(mut task) = read_held(workspace, id)? else {
        return Ok(());
    };
    task.extra.insert(TOLD_END.into(), json!(true));
    keep(workspace, &task)
}

/// `tasks/<team>/<id>.json` under Claude Code's folder.
fn task_file(home: &Path, team: &str, id: &str) -> PathBuf {
    home.join("tasks").join(team).join(format!("{id}.json"))
}

fn read_task(path: &Path) -> Result<Option<TaskFile>, AttachError> {
    match fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(AttachError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The ids of the tasks crew holds for review in `workspace` (those with commits).
pub(crate) fn held_ids(
    workspace: &Workspace,
) -> Result<std::collections::HashSet<crew_store::TaskId>, AttachError> {
    Ok(workspace
        .tasks()
        .load_all()?
        .tasks
        .into_iter()
        .filter(|t| t.commits.is_some())
        .map(|t| t.id)
        .collect())
}

/// crew's task `id` in `workspace` when crew holds it (it has commits), else `None`.
fn read_held(workspace: &Workspace, id: crew_store::TaskId) -> Result<Option<Task>, AttachError> {
    let path = workspace.tasks_dir().join(format!("{id}.json"));
    match fs::read(&path) {
        Ok(bytes) => Ok(serde_json::from_slice::<Task>(&bytes)
            .ok()
            .filter(|t| t.commits.is_some())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(AttachError::Io { path, source }),
    }
}

/// Writes held task `task` back into `workspace`.
pub(crate) fn keep(workspace: &Workspace, task: &Task) -> Result<(), AttachError> {
    let dir = workspace.tasks_dir();
    let path = dir.join(format!("{}.json", task.id));
    let io = |source| AttachError::Io {
        path: path.clone(),
        source,
    };
    fs::create_dir_all(&dir).map_err(io)?;
    let bytes = serde_json::to_vec_pretty(task)
        .map_err(std::io::Error::from)
        .map_err(io)?;
    write_atomic(&path, &bytes).map_err(io)
}

/// What the person did to held task `task` since the last look, told to Claude Code: merged
/// → its task file `completed` and the lead told; sent back → the note to the teammate. The
/// task as it is to be kept (marked as told), or `None` when nothing was to be told.
pub(crate) fn tell_outcome(
    home: &Path,
    team: &str,
    lead: &str,
    task: &Task,
    base_branch: &str,
) -> Result<Option<Task>, AttachError> {
    let claude_id = task
        .extra
        .get("claude_id")
        .and_then(Value::as_str)
        .map_or_else(|| task.id.0.to_string(), str::to_string);
    let teammate = task
        .owner
        .as_ref()
        .map(|o| o.to_string())
        .unwrap_or_default();
    let inboxes = home.join("teams").join(team).join("inboxes");
    let mut told = task.clone();
    match task.status {
        _ if task.extra.get(TOLD_END) == Some(&json!(true)) => return Ok(None),
        Status::Completed => {
            locked_file::update(&task_file(home, team, &claude_id), |old| {
                let mut file: Value = match old {
                    Some(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
                    None => return Err(std::io::Error::other("the task file is gone")),
                };
                file["status"] = json!("completed");
                serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)
            })?;
            if inboxes.is_dir() {
                inbox_write::append(
                    &inboxes.join(format!("{lead}.json")),
                    CREW_SENDER,
                    &format!(
                        "task #{claude_id} ({}) by {teammate} was reviewed and merged into \
                         {base_branch} by the person: it is completed",
                        task.subject
                    ),
                )?;
            }
            told.extra.insert(TOLD_END.into(), json!(true));
        }
        // Discarded: Claude Code has no failed task; the lead hears why it stays unfinished.
        Status::Failed => {
            if inboxes.is_dir() {
                inbox_write::append(
                    &inboxes.join(format!("{lead}.json")),
                    CREW_SENDER,
                    &format!(
                        "task #{claude_id} ({}) by {teammate} was not merged: {}",
                        task.subject,
                        task.result.as_deref().unwrap_or("discarded by the person")
                    ),
                )?;
            }
            told.extra.insert(TOLD_END.into(), json!(true));
        }
        Status::Pending | Status::InProgress => {
            let already = task
                .extra
                .get(TOLD_NOTES)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
            let new = task.notes.get(already..).unwrap_or_default();
            if new.is_empty() || !inboxes.is_dir() {
                return Ok(None);
            }
            inbox_write::append(
                &inboxes.join(format!("{teammate}.json")),
                CREW_SENDER,
                &format!(
                    "task #{claude_id} ({}) came back from review: {}. Continue it in your \
                     worktree and mark it completed again when it is done.",
                    task.subject,
                    new.join("; ")
                ),
            )?;
            told.extra
                .insert(TOLD_NOTES.into(), json!(task.notes.len()));
        }
        _ => return Ok(None),
    }
    Ok(Some(told))
}
