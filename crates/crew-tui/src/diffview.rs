//! The diff review of one writing teammate's worktree: which file and hunk is shown, how.

use std::collections::HashMap;

use crate::highlight::Segments;
use crew_git::{FileDiff, WorktreeDiff};
use crew_store::{AgentName, TaskId};

pub struct DiffView {
    pub name: AgentName,
    /// A review's diff: only this task's commits; merge, send-back and discard act on the task.
    pub task: Option<TaskId>,
    /// None while loading.
    pub diff: Option<Result<WorktreeDiff, String>>,
    pub file: usize,
    pub hunk: usize,
    /// First visible row of the hunk list.
    pub scroll: usize,
    pub side_by_side: bool,
    /// Highlighting per file index, filled in by the background highlighter.
    pub highlights: HashMap<usize, Vec<Segments>>,
    /// What the last merge/discard/send-back did.
    pub outcome: Option<String>,
}

impl DiffView {
    pub(crate) fn new(name: &AgentName) -> Self {
        DiffView {
            name: name.clone(),
            task: None,
            diff: None,
            file: 0,
            hunk: 0,
            scroll: 0,
            side_by_side: false,
            highlights: HashMap::new(),
            outcome: None,
        }
    }

    pub fn files(&self) -> &[FileDiff] {
        match &self.diff {
            Some(Ok(diff)) => &diff.files,
            _ => &[],
        }
    }

    pub(crate) fn current(&self) -> Option<&FileDiff> {
        self.files().get(self.file)
    }

    pub(crate) fn move_file(&mut self, delta: isize) {
        let n = self.files().len();
        if n == 0 {
            return;
        }
        self.file = (self.file as isize + delta).clamp(0, n as isize - 1) as usize;
        self.hunk = 0;
        self.scroll = 0;
    }

    /// Next/previous hunk; past the last hunk of a file goes on to the next file.
    pub(crate) fn move_hunk(&mut self, delta: isize) {
        let Some(file) = self.current() else { return };
        let count = file.hunks.len() as isize;
        let next = self.hunk as isize + delta;
        if next >= count {
            if self.file + 1 < self.files().len() {
                self.move_file(1);
            }
            return;
        }
        if next < 0 {
            if self.file > 0 {
                self.move_file(-1);
                let last = self
                    .current()
                    .map_or(0, |f| f.hunks.len().saturating_sub(1));
                self.hunk = last;
                self.scroll = self.hunk_row(last);
            }
            return;
        }
        self.hunk = next as usize;
        self.scroll = self.hunk_row(self.hunk);
    }

    /// The row where hunk `h` of the current file starts (each hunk: a header row, then lines).
    pub(crate) fn hunk_row(&self, h: usize) -> usize {
        self.current().map_or(0, |f| {
            f.hunks.iter().take(h).map(|k| 1 + k.lines.len()).sum()
        })
    }

    pub(crate) fn rows(&self) -> usize {
        self.current()
            .map_or(0, |f| f.hunks.iter().map(|k| 1 + k.lines.len()).sum())
    }

    pub(crate) fn scroll_by(&mut self, delta: isize) {
        let max = self.rows().saturating_sub(1) as isize;
        self.scroll = (self.scroll as isize + delta).clamp(0, max.max(0)) as usize;
    }
}
