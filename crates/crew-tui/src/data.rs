//! Reading the workspace for the screen, incrementally: inboxes and transcripts from kept byte
//! offsets, single task and status files by the path a file-system event names. The loader runs
//! off the input path and hands `Change`s to the state.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use tracing::debug;

use crate::uiconfig::{self, UiConfig};
use crew_agent::AgentEvent;
use crew_agent::transcript::{Row, TranscriptLine};
use crew_config::{FILE_NAME, TeamConfig};
use crew_store::{AgentName, AgentStatus, Entry, Task, TaskId, Workspace};

/// How many transcript rows are kept per agent: the panes show the last few, a zoomed teammate
/// or the lead pane scrolls back through all of them (`crew replay` shows whole files).
pub(crate) const TRANSCRIPT_KEEP: usize = 1000;

/// One thing that changed on disk.
#[derive(Debug, Clone)]
pub enum Change {
    Config(Result<(Box<TeamConfig>, UiConfig), String>),
    /// Every task (initial load or a rescan), with the files that did not parse.
    AllTasks(Vec<Task>, Vec<String>),
    /// One task file was written (Some) or removed (None).
    Task(TaskId, Option<Task>),
    TaskProblem(String),
    /// New entries of an inbox; `reset` when it must be read again from the start.
    Inbox {
        name: AgentName,
        entries: Vec<Entry>,
        reset: bool,
    },
    Agent(AgentName, Option<AgentStatus>),
    /// Each agent's standing with the store's server (a team kept in PostgreSQL only).
    Standing(BTreeMap<AgentName, Standing>),
    /// New rows of an agent's transcript. The last `tail` rows are the reply still streaming:
    /// they are sent again, grown, with the next change and replace these.
    Transcript {
        name: AgentName,
        lines: Vec<Row>,
        reset: bool,
        tail: usize,
    },
}

/// What the store's server knows of an agent beyond its status: the tasks whose lease lapsed
/// (claimable again: its host went silent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub lapsed: Vec<TaskId>,
}

pub struct Loader {
    ws: Workspace,
    inbox_offsets: HashMap<AgentName, u64>,
    transcript_offsets: HashMap<PathBuf, u64>,
}

impl Loader {
    pub fn new(root: &Path) -> Self {
        Loader {
            ws: Workspace::new(root),
            inbox_offsets: HashMap::new(),
            transcript_offsets: HashMap::new(),
        }
    }

    /// Folders to watch: the store, the runtime folder (recursively) and the root for crew.toml.
    pub(crate) fn watched(&self) -> Vec<(PathBuf, bool)> {
        vec![
            (self.ws.tasks_dir(), false),
            (self.ws.mailboxes_dir(), false),
            (self.ws.crew_dir().join("agents"), false),
            (self.ws.crew_dir().join("transcripts"), true),
            (self.ws.root().to_path_buf(), false),
        ]
    }

    /// Everything, from scratch.
    pub fn load_all(&mut self) -> Vec<Change> {
        self.inbox_offsets.clear();
        self.transcript_offsets.clear();
        let mut changes = vec![self.config()];
        match self.ws.tasks().load_all() {
            Ok(loaded) => changes.push(Change::AllTasks(
                loaded.tasks,
                loaded.problems.iter().map(ToString::to_string).collect(),
            )),
            Err(e) => changes.push(Change::TaskProblem(e.to_string())),
        }
        let boxes = self.ws.mailboxes();
        match boxes.inboxes() {
            Ok(names) => {
                for name in names {
                    changes.extend(self.inbox(&name));
                }
            }
            Err(e) => changes.push(Change::TaskProblem(e.to_string())),
        }
        for path in files_in(&self.ws.crew_dir().join("agents"), "json") {
            changes.extend(self.agent(&path));
        }
        changes.extend(self.transcripts());
        changes
    }

    /// Whether this checkout keeps transcripts of `name` (it runs here).
    pub fn has_transcripts(&self, name: &AgentName) -> bool {
        !files_in(
            &self.ws.crew_dir().join("transcripts").join(name.as_str()),
            "jsonl",
        )
        .is_empty()
    }

    /// What every transcript of this checkout gained since it was last read (those of the
    /// agents that run here; a team in the store reads the rest from the store).
    pub fn transcripts(&mut self) -> Vec<Change> {
        let mut changes = Vec::new();
        for dir in dirs_in(&self.ws.crew_dir().join("transcripts")) {
            for path in files_in(&dir, "jsonl") {
                changes.extend(self.transcript(&path));
            }
        }
        changes
    }

    /// What the files at `paths` now say. An empty list (the watcher lost track) reloads all.
    pub fn changed(&mut self, paths: &[PathBuf]) -> Vec<Change> {
        if paths.is_empty() {
            return self.load_all();
        }
        let mut changes = Vec::new();
        let mut seen: Vec<&PathBuf> = Vec::new();
        for path in paths {
            if seen.contains(&path) {
                continue;
            }
            seen.push(path);
            let parent = path.parent().unwrap_or(Path::new(""));
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if parent == self.ws.tasks_dir() && ext == "json" && stem.starts_with("task_") {
                changes.push(self.task(path, stem));
            } else if parent == self.ws.mailboxes_dir()
                && ext == "jsonl"
                && let Ok(name) = AgentName::parse(stem)
            {
                changes.extend(self.inbox(&name));
            } else if parent == self.ws.crew_dir().join("agents") && ext == "json" {
                changes.extend(self.agent(path));
            } else if parent.parent() == Some(&self.ws.crew_dir().join("transcripts"))
                && ext == "jsonl"
            {
                changes.extend(self.transcript(path));
            } else if path.parent() == Some(self.ws.crew_dir().join("transcripts").as_path())
                && path.is_dir()
            {
                for file in files_in(path, "jsonl") {
                    changes.extend(self.transcript(&file));
                }
            } else if *path == self.ws.root().join(FILE_NAME) {
                changes.push(self.config());
            }
        }
        changes
    }

    fn config(&self) -> Change {
        Change::Config(
            uiconfig::load(self.ws.root())
                .map(|(team, ui)| (Box::new(team), ui))
                .map_err(|e| e.to_string()),
        )
    }

    fn task(&self, path: &Path, stem: &str) -> Change {
        let Ok(id) = TaskId::parse(stem) else {
            return Change::TaskProblem(format!("{}: bad task file name", path.display()));
        };
        if !path.exists() {
            return Change::Task(id, None);
        }
        match self.ws.tasks().read(id) {
            Ok(task) => Change::Task(id, Some(task)),
            Err(e) => Change::TaskProblem(e.to_string()),
        }
    }

    fn inbox(&mut self, name: &AgentName) -> Option<Change> {
        let boxes = self.ws.mailboxes();
        let offset = self.inbox_offsets.get(name).copied().unwrap_or(0);
        // A shorter file than our offset means it was replaced: start over.
        let len = fs::metadata(boxes.inbox_path(name)).map_or(0, |m| m.len());
        let reset = len < offset;
        let from = if reset { 0 } else { offset };
        match boxes.read_from(name, from) {
            Ok(batch) => {
                self.inbox_offsets.insert(name.clone(), batch.end);
                (reset || !batch.entries.is_empty()).then(|| Change::Inbox {
                    name: name.clone(),
                    entries: batch.entries,
                    reset,
                })
            }
            Err(e) => {
                debug!(inbox = name.as_str(), error = %e, "skipping inbox");
                None
            }
        }
    }

    fn agent(&self, path: &Path) -> Option<Change> {
        // A file not named for an agent is no agent's status.
        let name = AgentName::parse(path.file_stem()?.to_str()?).ok()?;
        let status = fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<AgentStatus>(&bytes).ok());
        Some(Change::Agent(name, status))
    }

    fn transcript(&mut self, path: &Path) -> Option<Change> {
        let name = AgentName::parse(path.parent()?.file_name()?.to_str()?).ok()?;
        let offset = self.transcript_offsets.get(path).copied().unwrap_or(0);
        let bytes = fs::read(path).ok()?;
        let reset = (bytes.len() as u64) < offset;
        let start = if reset {
            0
        } else {
            usize::try_from(offset).unwrap_or(bytes.len())
        };
        let complete = bytes[start..]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(start, |i| start + i + 1);
        // A reply streams as many delta lines written over time; the trailing run of them is
        // read again next time, so the reply stays one "assistant:" line however it was split.
        let streaming = start + streaming_from(&bytes[start..complete]);
        self.transcript_offsets
            .insert(path.to_path_buf(), streaming as u64);
        let mut lines = rendered(&bytes[start..streaming]);
        let tail = rendered(&bytes[streaming..complete]);
        let tail_len = tail.len();
        lines.extend(tail);
        (reset || !lines.is_empty()).then_some(Change::Transcript {
            name,
            lines,
            reset,
            tail: tail_len,
        })
    }
}

/// The agent layer's own rendering, so the panes read like `crew replay`.
fn rendered(bytes: &[u8]) -> Vec<Row> {
    crew_agent::transcript::rows(bytes).unwrap_or_else(|e| vec![Row::plain(format!("?? {e}"))])
}

/// Where the trailing run of `message_delta` lines in `chunk` (whole lines) starts.
fn streaming_from(chunk: &[u8]) -> usize {
    let mut from = chunk.len();
    for line in chunk.split_inclusive(|&b| b == b'\n').rev() {
        let delta = serde_json::from_slice::<TranscriptLine>(line)
            .is_ok_and(|l| matches!(l.event, AgentEvent::MessageDelta { .. }));
        if !delta {
            break;
        }
        from -= line.len();
    }
    from
}

fn files_in(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some(ext) && p.is_file())
        .collect();
    out.sort();
    out
}

fn dirs_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::SystemTime;

    use super::*;
    use crate::workspace_view::WorkspaceView;

    fn append(path: &Path, lines: &[&str]) {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for l in lines {
            writeln!(f, r#"{{"ts":"2026-01-01T00:00:00Z","turn":1,"event":{l}}}"#).unwrap();
        }
    }

    fn delta(text: &str) -> String {
        format!(r#"{{"type":"message_delta","text":"{text}"}}"#)
    }

    #[test]
    fn a_subagents_side_transcript_stays_out_of_its_callers_pane() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(".crew/transcripts/alice");
        let side = folder.join("session_1/sub1.jsonl");
        fs::create_dir_all(side.parent().unwrap()).unwrap();
        append(&folder.join("session_1.jsonl"), &[&delta("mine")]);
        append(&side, &[&delta("the subagent's")]);
        let mut loader = Loader::new(dir.path());
        let mut model = WorkspaceView::default();
        model.apply(loader.load_all(), SystemTime::now());
        assert_eq!(model.transcripts["alice"].texts(), ["assistant: mine"]);
        let changes = loader.changed(&[side.clone(), side.parent().unwrap().to_path_buf()]);
        assert!(changes.is_empty(), "{changes:?}");
    }

    #[test]
    fn a_reply_streamed_over_several_reads_stays_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(".crew/transcripts/alice");
        fs::create_dir_all(&folder).unwrap();
        let file = folder.join("session_1.jsonl");
        append(
            &file,
            &[
                r#"{"type":"message_start","call":1}"#,
                &delta("Writing lib/sub.sh "),
            ],
        );
        let mut loader = Loader::new(dir.path());
        let mut model = WorkspaceView::default();
        model.apply(loader.load_all(), SystemTime::now());
        assert_eq!(
            model.transcripts["alice"].texts(),
            ["assistant: Writing lib/sub.sh "]
        );
        append(&file, &[&delta("and its test.")]);
        model.apply(
            loader.changed(std::slice::from_ref(&file)),
            SystemTime::now(),
        );
        append(
            &file,
            &[r#"{"type":"permission_waiting","request_id":"req_1","to":"user"}"#],
        );
        model.apply(
            loader.changed(std::slice::from_ref(&file)),
            SystemTime::now(),
        );
        let lines = model.transcripts["alice"].texts();
        assert_eq!(lines[0], "assistant: Writing lib/sub.sh and its test.");
        assert_eq!(lines.len(), 2, "{lines:?}");
        // Nothing new: the finished reply is not read again.
        model.apply(
            loader.changed(std::slice::from_ref(&file)),
            SystemTime::now(),
        );
        assert_eq!(model.transcripts["alice"].rows.len(), 2);
    }
}
