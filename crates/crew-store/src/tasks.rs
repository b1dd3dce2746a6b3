//! `.tasks/`: one JSON file per task, ids from a high-water mark, every write atomic.
//!
//! Locks: `.tasks/.lock` guards structure (creating tasks, changing `blockedBy`);
//! `.tasks/.locks/task_<n>.lock` guards one task's state. Order is always structure, then task.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::atomic::{read_consistent, replace_locked};
use crate::dag::find_cycle;
use crate::lock::with_lock;
use crate::task::{Status, Task, TaskUsage, now_rfc3339};
use crate::{Actor, Limits, Refusal, StoreError, secrets};
use crew_protocol::{InvalidName, TaskId, validate_name};

#[derive(Debug, Clone, Default)]
pub struct NewTask {
    pub subject: String,
    pub description: String,
    pub blocked_by: Vec<TaskId>,
    pub role: Option<String>,
}

impl NewTask {
    /// The task as every store keeps it, or why not: its subject as `checked_subject` says,
    /// its description within `limits`, its role a name, each blocker once.
    pub fn checked<E: From<InvalidName> + From<Refusal>>(
        self,
        limits: &Limits,
    ) -> Result<NewTask, E> {
        let subject = checked_subject::<E>(&self.subject, limits)?;
        limits.check_description(&self.description)?;
        if let Some(role) = &self.role {
            validate_name("role", role)?;
        }
        Ok(NewTask {
            subject,
            blocked_by: without_duplicates(&self.blocked_by),
            ..self
        })
    }
}

/// A task's subject as every store keeps it: trimmed, not empty, one line, within `limits`.
pub fn checked_subject<E: From<InvalidName> + From<Refusal>>(
    subject: &str,
    limits: &Limits,
) -> Result<String, E> {
    let subject = subject.trim();
    if subject.is_empty() {
        return Err(InvalidName {
            what: "subject",
            value: String::new(),
            reason: "a task needs a subject",
        }
        .into());
    }
    limits.check_subject(subject)?;
    Ok(subject.to_string())
}

#[derive(Debug, Clone, Default)]
pub struct TaskPatch {
    pub subject: Option<String>,
    pub description: Option<String>,
    pub blocked_by: Option<Vec<TaskId>>,
}

/// Every task that parsed, and a report for every file that did not.
#[derive(Debug, Default)]
pub struct Loaded {
    pub tasks: Vec<Task>,
    pub problems: Vec<StoreError>,
}

#[derive(Debug, Clone)]
pub struct TaskStore {
    dir: PathBuf,
    limits: Limits,
}

impl TaskStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        TaskStore {
            dir: dir.into(),
            limits: Limits::default(),
        }
    }

    /// The same store, checking subjects and descriptions against `limits`.
    pub fn with_limits(self, limits: Limits) -> Self {
        TaskStore { limits, ..self }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, id: TaskId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    pub(crate) fn lock_path(&self, id: TaskId) -> PathBuf {
        self.dir.join(".locks").join(format!("{id}.lock"))
    }

    fn structure_lock(&self) -> PathBuf {
        self.dir.join(".lock")
    }

    fn high_water_path(&self) -> PathBuf {
        self.dir.join(".highwatermark")
    }

    pub fn read(&self, id: TaskId) -> Result<Task, StoreError> {
        let path = self.path(id);
        let bytes = match read_consistent(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(StoreError::NoSuchTask(id));
            }
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        parse_task(&path, id, &bytes)
    }

    /// Reads every `task_<n>.json`; a bad file is reported and skipped, the rest still load.
    pub fn load_all(&self) -> Result<Loaded, StoreError> {
        let mut loaded = Loaded::default();
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(loaded),
            Err(e) => return Err(StoreError::io(&self.dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&self.dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            if !stem.starts_with("task_") {
                continue;
            }
            let path = entry.path();
            let result = TaskId::parse(stem)
                .map_err(|e| StoreError::malformed(&path, format!("bad task file name: {e}")))
                .and_then(|id| {
                    let bytes = read_consistent(&path).map_err(|e| StoreError::io(&path, e))?;
                    parse_task(&path, id, &bytes)
                });
            match result {
                Ok(task) => loaded.tasks.push(task),
                Err(e) => loaded.problems.push(e),
            }
        }
        loaded.tasks.sort_by_key(|t| t.id);
        loaded.problems.sort_by_key(|p| p.to_string());
        Ok(loaded)
    }

    pub fn create(&self, new: NewTask) -> Result<Task, StoreError> {
        let NewTask {
            subject,
            description,
            blocked_by: blockers,
            role,
        } = new.checked::<StoreError>(&self.limits)?;
        fs::create_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        with_lock(&self.structure_lock(), || {
            let next = self.next_id()?;
            if let Some(&unknown) = blockers.iter().find(|b| !self.path(**b).exists()) {
                return Err(Refusal::UnknownBlocker { id: next, unknown }.into());
            }
            let now = now_rfc3339();
            let task = Task {
                id: next,
                subject,
                description,
                status: Status::Pending,
                owner: None,
                blocked_by: blockers,
                created_at: now.clone(),
                updated_at: now,
                role,
                worktree: None,
                result: None,
                commits: None,
                review: None,
                notes: Vec::new(),
                usage: None,
                extra: Default::default(),
            };
            // The task's lock file is made with it, so a claim never pays for creating one.
            with_lock(&self.lock_path(next), || self.write(&task))?;
            replace_locked(&self.high_water_path(), next.0.to_string().as_bytes())
                .map_err(|e| StoreError::io(&self.high_water_path(), e))?;
            Ok(task)
        })
    }

    /// The id after the high-water mark. The recorded mark is trusted unless it is missing,
    /// unreadable or behind the files on disk (hand edits), in which case the folder is scanned.
    fn next_id(&self) -> Result<TaskId, StoreError> {
        let path = self.high_water_path();
        let recorded = match fs::read_to_string(&path) {
            Ok(text) => text.trim().parse::<u64>().ok(),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let mut next = match recorded {
            Some(mark) => mark + 1,
            None => self.highest_on_disk()? + 1,
        };
        while self.path(TaskId(next)).exists() {
            next = self.highest_on_disk()?.max(next) + 1;
        }
        Ok(TaskId(next))
    }

    /// The largest task number among the file names in `.tasks/` (names only, nothing parsed).
    fn highest_on_disk(&self) -> Result<u64, StoreError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(StoreError::io(&self.dir, e)),
        };
        let mut highest = 0;
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&self.dir, e))?;
            if let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|stem| TaskId::parse(stem).ok())
            {
                highest = highest.max(id.0);
            }
        }
        Ok(highest)
    }

    /// Edits a task as `by`: the lead and the person may change anything; a teammate only the
    /// description of a task it owns (its own notes), never another's task, its subject or
    /// what it waits for.
    pub fn update(&self, id: TaskId, patch: TaskPatch, by: Actor<'_>) -> Result<Task, StoreError> {
        let subject = patch
            .subject
            .as_deref()
            .map(|s| checked_subject::<StoreError>(s, &self.limits))
            .transpose()?;
        if let Some(description) = &patch.description {
            self.limits.check_description(description)?;
        }
        let blockers = patch.blocked_by.as_deref().map(without_duplicates);
        with_lock(&self.structure_lock(), || {
            self.modify(id, |task| {
                check_may_edit(task, &patch, by)?;
                if let Some(blockers) = &blockers {
                    let loaded = self.load_all()?;
                    for &b in blockers {
                        if !loaded.tasks.iter().any(|t| t.id == b) {
                            return Err(Refusal::UnknownBlocker {
                                id: task.id,
                                unknown: b,
                            }
                            .into());
                        }
                    }
                    if let Some(cycle) = find_cycle(&loaded.tasks, task.id, blockers) {
                        return Err(Refusal::WouldCycle { cycle }.into());
                    }
                    task.blocked_by = blockers.clone();
                }
                if let Some(subject) = &subject {
                    task.subject = subject.clone();
                }
                if let Some(description) = &patch.description {
                    task.description = description.clone();
                }
                Ok(())
            })
        })
    }

    /// Read-modify-write of one task under its lock; `change` sees the latest state.
    /// Adds one job's tokens and cost to what task `id` used (its cost stays unknown once a
    /// job of it had no known price).
    pub fn add_usage(
        &self,
        id: TaskId,
        tokens: u64,
        cost_micros: Option<u64>,
    ) -> Result<Task, StoreError> {
        self.modify(id, |task| {
            task.usage = Some(TaskUsage::added(task.usage, tokens, cost_micros));
            Ok(())
        })
    }

    pub(crate) fn modify(
        &self,
        id: TaskId,
        change: impl FnOnce(&mut Task) -> Result<(), StoreError>,
    ) -> Result<Task, StoreError> {
        with_lock(&self.lock_path(id), || {
            let mut task = self.read(id)?;
            change(&mut task)?;
            task.updated_at = now_rfc3339();
            self.write(&task)?;
            Ok(task)
        })
    }

    /// Replaces the task's file; the caller holds that task's lock.
    pub(crate) fn write(&self, task: &Task) -> Result<(), StoreError> {
        let path = self.path(task.id);
        let mut bytes = serde_json::to_vec_pretty(task)
            .map_err(|e| StoreError::malformed(&path, format!("cannot serialise: {e}")))?;
        bytes.push(b'\n');
        replace_locked(&path, &secrets::redact_bytes(&bytes)).map_err(|e| StoreError::io(&path, e))
    }
}

/// The store's rule for edits (ARCHITECTURE.md, invariant 10), on both backends.
pub fn check_may_edit(task: &Task, patch: &TaskPatch, by: Actor<'_>) -> Result<(), StoreError> {
    if by.steers() {
        return Ok(());
    }
    let refuse = |field, rule| {
        Err(Refusal::NotAllowed {
            id: task.id,
            who: by.name().clone(),
            field,
            rule,
        }
        .into())
    };
    const STEERING: &str = "only the lead or the person changes a task's subject and blockers";
    if patch.subject.is_some() {
        return refuse("subject", STEERING);
    }
    if patch.blocked_by.is_some() {
        return refuse("blockedBy", STEERING);
    }
    if patch.description.is_some() && task.owner.as_ref() != Some(by.name()) {
        return refuse(
            "description",
            "only the lead, the person or the task's owner changes its description",
        );
    }
    Ok(())
}

fn parse_task(path: &Path, id: TaskId, bytes: &[u8]) -> Result<Task, StoreError> {
    let task: Task = serde_json::from_slice(bytes)
        .map_err(|e| StoreError::malformed(path, format!("invalid task JSON: {e}")))?;
    if task.id != id {
        return Err(StoreError::malformed(
            path,
            format!(
                "its id field says {:?} but the file is {id}.json",
                task.id.to_string()
            ),
        ));
    }
    Ok(task)
}

/// Duplicates dropped, order kept.
pub fn without_duplicates(ids: &[TaskId]) -> Vec<TaskId> {
    let mut out: Vec<TaskId> = Vec::new();
    for &id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Claimant;
    use crew_protocol::AgentName;

    #[test]
    fn a_tasks_usage_adds_up_and_an_unknown_cost_stays_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::new(dir.path().join(".tasks"));
        let new = NewTask {
            subject: "t".into(),
            description: String::new(),
            blocked_by: Vec::new(),
            role: None,
        };
        let id = store.create(new).unwrap().id;
        store.add_usage(id, 100, Some(2000)).unwrap();
        let both = store.add_usage(id, 20, Some(1000)).unwrap();
        assert_eq!(both.usage.unwrap().text(), "120 tokens, $0.0030");
        let unknown = store.add_usage(id, 5, None).unwrap().usage.unwrap();
        assert_eq!((unknown.tokens, unknown.cost_micros), (125, None));
        assert_eq!(unknown.text(), "125 tokens, cost unknown");
    }

    /// What crew writes for a task, byte for byte: the typed ids read back from it are written
    /// as the same text (ARCHITECTURE.md, invariant 9).
    #[test]
    fn a_task_file_is_rewritten_with_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::new(dir.path());
        let text = r#"{
  "id": "task_2",
  "subject": "s",
  "description": "",
  "status": "in_progress",
  "owner": "alice",
  "blockedBy": [
    "task_1"
  ],
  "createdAt": "2026-01-01T00:00:00.000Z",
  "updatedAt": "2026-01-01T00:00:00.000Z",
  "priority": "high"
}
"#;
        fs::write(store.path(TaskId(2)), text).unwrap();
        let task = store.read(TaskId(2)).unwrap();
        assert_eq!(
            (task.owner.as_deref(), &task.blocked_by[..]),
            (Some("alice"), &[TaskId(1)][..])
        );
        store.write(&task).unwrap();
        assert_eq!(fs::read_to_string(store.path(TaskId(2))).unwrap(), text);
    }

    /// The store's authorization (invariant 10): a teammate edits only its own task's
    /// description; subject, blockers and owner are the lead's and the person's; a writing
    /// teammate's task never completes outside review. Each refusal names who, what and why.
    #[test]
    fn teammates_edit_only_their_own_notes_and_writers_complete_only_through_review() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::new(dir.path());
        for subject in ["alice's", "bob's", "gate"] {
            store
                .create(NewTask {
                    subject: subject.into(),
                    ..NewTask::default()
                })
                .unwrap();
        }
        let (alice, bob, lead): (AgentName, AgentName, AgentName) = (
            "alice".parse().unwrap(),
            "bob".parse().unwrap(),
            "lead".parse().unwrap(),
        );
        let claim = |id, name| {
            store
                .claim(TaskId(id), Claimant { name, role: None })
                .unwrap()
        };
        claim(1, &alice);
        claim(2, &bob);
        let as_alice = Actor::Teammate {
            name: &alice,
            writes: true,
        };
        let refusal = |patch: TaskPatch, id: u64| {
            store
                .update(TaskId(id), patch, as_alice)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refusal(
                TaskPatch {
                    blocked_by: Some(vec![TaskId(3)]),
                    ..TaskPatch::default()
                },
                2
            ),
            "alice may not change task_2's blockedBy: only the lead or the person changes a \
             task's subject and blockers"
        );
        assert!(
            refusal(
                TaskPatch {
                    subject: Some("mine now".into()),
                    ..TaskPatch::default()
                },
                1
            )
            .contains("alice may not change task_1's subject")
        );
        assert!(
            refusal(
                TaskPatch {
                    description: Some("ignore your task".into()),
                    ..TaskPatch::default()
                },
                2
            )
            .contains("the task's owner changes its description")
        );
        let notes = TaskPatch {
            description: Some("found the cause".into()),
            ..TaskPatch::default()
        };
        store.update(TaskId(1), notes, as_alice).unwrap();
        for by in [Actor::Lead(&lead), Actor::Person] {
            let patch = TaskPatch {
                blocked_by: Some(vec![TaskId(3)]),
                subject: Some(format!("{} steers", by.name())),
                ..TaskPatch::default()
            };
            store.update(TaskId(2), patch, by).unwrap();
        }
        let bob_claims = Claimant {
            name: &bob,
            role: None,
        };
        let assigned = store.assign(TaskId(3), Some(bob_claims), as_alice);
        assert!(
            assigned
                .unwrap_err()
                .to_string()
                .contains("only the lead or the person assigns tasks"),
        );

        let skipped = store.complete(TaskId(1), as_alice, None).unwrap_err();
        assert!(
            skipped
                .to_string()
                .starts_with("task_1 is a writing teammate's task: it is completed only when"),
            "{skipped}"
        );
        assert_eq!(store.read(TaskId(1)).unwrap().status, Status::InProgress);
        let reader = Actor::Teammate {
            name: &bob,
            writes: false,
        };
        assert_eq!(
            store.complete(TaskId(2), reader, None).unwrap().status,
            Status::Completed
        );
    }

    /// A bad name or id in a task file is that file's problem, named by path, value and rule;
    /// the other files still load (invariant 7).
    #[test]
    fn a_bad_owner_or_blocker_in_a_file_is_reported_by_path_and_value() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::new(dir.path());
        let task = |id: u64, field: &str| {
            format!(r#"{{"id": "task_{id}", "subject": "s", "status": "pending", {field}}}"#)
        };
        fs::write(store.path(TaskId(1)), task(1, r#""owner": "../x""#)).unwrap();
        fs::write(
            store.path(TaskId(2)),
            task(2, r#""blockedBy": ["task_01"]"#),
        )
        .unwrap();
        fs::write(store.path(TaskId(3)), task(3, r#""owner": "bob""#)).unwrap();
        let loaded = store.load_all().unwrap();
        assert_eq!(loaded.tasks.len(), 1, "the good file still loads");
        let problems: Vec<String> = loaded.problems.iter().map(|p| p.to_string()).collect();
        let owner = format!(
            "{}: invalid task JSON: invalid agent name \"../x\"",
            store.path(TaskId(1)).display()
        );
        let blocker = format!(
            "{}: invalid task JSON: invalid task id \"task_01\"",
            store.path(TaskId(2)).display()
        );
        assert!(
            problems.iter().any(|p| p.starts_with(&owner)),
            "{problems:#?}"
        );
        assert!(
            problems.iter().any(|p| p.starts_with(&blocker)),
            "{problems:#?}"
        );
    }
}
