//! The diff of a teammate's worktree against its base: merge-base(base, branch) .. the working
//! directory, uncommitted and untracked (not ignored) files included, renames detected.

use git2::{Delta, DiffFindOptions, DiffOptions, Patch};
use serde::Serialize;

use super::error::{Context, GitError};
use super::names::validate_branch;
use super::worktree::{Worktrees, head_commit};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorktreeDiff {
    pub files: Vec<FileDiff>,
    pub totals: DiffTotals,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DiffTotals {
    pub files: usize,
    pub additions: usize,
    pub deletions: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    /// Path after the change (for a deleted file, the path it had).
    pub path: String,
    /// Path before a rename.
    pub old_path: Option<String>,
    pub status: FileStatus,
    /// What the path holds after the change (for a deleted one, what it held): a merge policy
    /// treats a symlink or a gitlink unlike a file.
    pub kind: EntryKind,
    /// Binary files have no hunks and no line counts.
    pub binary: bool,
    pub additions: usize,
    pub deletions: usize,
    pub hunks: Vec<Hunk>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
    Typechange,
}

/// A tree entry's mode, as git records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// 100644.
    File,
    /// 100755.
    Executable,
    /// 120000: its content is the link's target.
    Symlink,
    /// 160000: a commit of another repository (a submodule, or an embedded `.git`).
    Gitlink,
}

impl EntryKind {
    fn of(mode: git2::FileMode) -> EntryKind {
        match mode {
            git2::FileMode::Link => EntryKind::Symlink,
            git2::FileMode::Commit => EntryKind::Gitlink,
            git2::FileMode::BlobExecutable => EntryKind::Executable,
            _ => EntryKind::File,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// The `@@ -a,b +c,d @@ ...` line, without its line ending.
    pub header: String,
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    pub lines: Vec<DiffLine>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    pub kind: LineKind,
    pub old_lineno: Option<u32>,
    pub new_lineno: Option<u32>,
    /// The line without its line ending; invalid UTF-8 is replaced.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LineKind {
    Context,
    Add,
    Del,
}

impl Worktrees {
    /// What merging worktree `name` into `base_branch` would bring, as it is on disk right now.
    pub fn diff(&self, name: &str, base_branch: &str) -> Result<WorktreeDiff, GitError> {
        validate_branch(base_branch)?;
        let wt = self.open_worktree(name)?;
        let base = self.base_commit(base_branch)?.id();
        let head = head_commit(&wt)?;
        let fork = self
            .repo()
            .merge_base(base, head)
            .context(|| format!("finding the merge base of {base_branch:?} and crew/{name}"))?;
        let fork_tree = wt
            .find_commit(fork)
            .and_then(|c| c.tree())
            .context(|| format!("reading merge base {fork}"))?;

        let mut opts = DiffOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .include_typechange(true)
            .ignore_submodules(true);
        let mut diff = wt
            .diff_tree_to_workdir_with_index(Some(&fork_tree), Some(&mut opts))
            .context(|| format!("diffing worktree {name:?} against {base_branch:?}"))?;
        let mut find = DiffFindOptions::new();
        find.renames(true).for_untracked(true);
        diff.find_similar(Some(&mut find))
            .context(|| format!("detecting renames in worktree {name:?}"))?;

        collect(&diff, &format!("worktree {name:?}"))
    }
}

/// Every file of `diff` with its hunks and line counts; `what` names the diff in errors.
pub(crate) fn collect(diff: &git2::Diff<'_>, what: &str) -> Result<WorktreeDiff, GitError> {
    let mut files = Vec::new();
    for idx in 0..diff.deltas().len() {
        let patch =
            Patch::from_diff(diff, idx).context(|| format!("reading the diff of {what}"))?;
        if let Some(file) = file_diff(diff, idx, patch.as_ref())? {
            files.push(file);
        }
    }
    let totals = DiffTotals {
        files: files.len(),
        additions: files.iter().map(|f| f.additions).sum(),
        deletions: files.iter().map(|f| f.deletions).sum(),
    };
    Ok(WorktreeDiff { files, totals })
}

fn file_diff(
    diff: &git2::Diff<'_>,
    idx: usize,
    patch: Option<&Patch<'_>>,
) -> Result<Option<FileDiff>, GitError> {
    // A patch's delta carries the binary flag found while loading content; prefer it.
    let delta = match patch {
        Some(p) => p.delta(),
        None => match diff.get_delta(idx) {
            Some(d) => d,
            None => return Ok(None),
        },
    };
    let status = match delta.status() {
        Delta::Added | Delta::Untracked | Delta::Copied => FileStatus::Added,
        Delta::Modified | Delta::Conflicted => FileStatus::Modified,
        Delta::Deleted => FileStatus::Deleted,
        Delta::Renamed => FileStatus::Renamed,
        Delta::Typechange => FileStatus::Typechange,
        Delta::Unmodified | Delta::Ignored | Delta::Unreadable => return Ok(None),
    };
    let path_of = |file: git2::DiffFile<'_>| {
        file.path_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let old = path_of(delta.old_file());
    let new = path_of(delta.new_file());
    let (path, old_path) = match status {
        FileStatus::Deleted => (old, None),
        FileStatus::Renamed => (new, Some(old)),
        _ => (new, None),
    };
    let kind = EntryKind::of(match status {
        FileStatus::Deleted => delta.old_file().mode(),
        _ => delta.new_file().mode(),
    });
    let binary = delta.flags().is_binary();
    let mut file = FileDiff {
        path,
        old_path,
        status,
        kind,
        binary,
        additions: 0,
        deletions: 0,
        hunks: Vec::new(),
    };
    if let (Some(patch), false) = (patch, binary) {
        file.hunks = hunks(patch).context(|| format!("reading hunks of {}", file.path))?;
        count_lines(&mut file);
    }
    Ok(Some(file))
}

/// A change that arrives as unified-diff hunks for `path` (as Codex proposes its edits), in the
/// same shape as a worktree diff (None when it changes nothing). A text that is not a diff is an
/// error.
pub fn patched_change(path: &str, hunks: &str) -> Result<Option<FileDiff>, GitError> {
    let text = if hunks.starts_with("diff --git") {
        hunks.to_string()
    } else if hunks.starts_with("--- ") {
        format!("diff --git a/{path} b/{path}\n{hunks}")
    } else {
        format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n{hunks}")
    };
    let diff = git2::Diff::from_buffer(text.as_bytes())
        .context(|| format!("reading the proposed diff of {path}"))?;
    Ok(collect(&diff, &format!("the proposed {path}"))?
        .files
        .into_iter()
        .next())
}

/// What writing `new` over `old` (None: the file does not exist yet) would change in `path`, in
/// the same shape as a worktree diff: a write or edit shown before it is allowed.
pub fn proposed_change(path: &str, old: Option<&str>, new: &str) -> Result<FileDiff, GitError> {
    let name = std::path::Path::new(path);
    let patch = Patch::from_buffers(
        old.unwrap_or("").as_bytes(),
        Some(name),
        new.as_bytes(),
        Some(name),
        None,
    )
    .context(|| format!("diffing the proposed {path}"))?;
    let mut file = FileDiff {
        path: path.to_string(),
        old_path: None,
        status: if old.is_some() {
            FileStatus::Modified
        } else {
            FileStatus::Added
        },
        kind: EntryKind::File,
        binary: false,
        additions: 0,
        deletions: 0,
        hunks: hunks(&patch).context(|| format!("reading hunks of the proposed {path}"))?,
    };
    count_lines(&mut file);
    Ok(file)
}

fn count_lines(file: &mut FileDiff) {
    for line in file.hunks.iter().flat_map(|h| &h.lines) {
        match line.kind {
            LineKind::Add => file.additions += 1,
            LineKind::Del => file.deletions += 1,
            LineKind::Context => {}
        }
    }
}

fn hunks(patch: &Patch<'_>) -> Result<Vec<Hunk>, git2::Error> {
    let mut hunks = Vec::with_capacity(patch.num_hunks());
    for h in 0..patch.num_hunks() {
        let (hunk, count) = patch.hunk(h)?;
        let mut lines = Vec::with_capacity(count);
        for l in 0..count {
            let line = patch.line_in_hunk(h, l)?;
            let kind = match line.origin() {
                ' ' => LineKind::Context,
                '+' => LineKind::Add,
                '-' => LineKind::Del,
                // "\ No newline at end of file" markers are not lines of the file.
                _ => continue,
            };
            lines.push(DiffLine {
                kind,
                old_lineno: line.old_lineno(),
                new_lineno: line.new_lineno(),
                text: without_eol(line.content()),
            });
        }
        hunks.push(Hunk {
            header: without_eol(hunk.header()),
            old_start: hunk.old_start(),
            old_lines: hunk.old_lines(),
            new_start: hunk.new_start(),
            new_lines: hunk.new_lines(),
            lines,
        });
    }
    Ok(hunks)
}

fn without_eol(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}
