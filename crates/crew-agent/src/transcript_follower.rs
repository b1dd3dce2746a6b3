//! Following every agent's transcript as it grows, for a reader with no screen (headless
//! progress): the whole lines appended since the last look, each with the agent it belongs to.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::transcript::TranscriptLine;

/// Where each transcript file under `<repo>/.crew/transcripts/<agent>/` was read up to.
#[derive(Debug)]
pub struct TranscriptFollower {
    dir: PathBuf,
    offsets: HashMap<PathBuf, u64>,
}

impl TranscriptFollower {
    /// Starts at the end of what is there now: earlier runs' lines are not news.
    pub fn new(repo_root: &Path) -> Self {
        let mut follower = Self {
            dir: repo_root.join(".crew/transcripts"),
            offsets: HashMap::new(),
        };
        for (_, path) in follower.files() {
            let len = fs::metadata(&path).map_or(0, |m| m.len());
            follower.offsets.insert(path, len);
        }
        follower
    }

    /// The whole lines written since the last call, file by file, as `(agent, line)`. A torn
    /// last line waits for its end; a line that does not parse (an event from a newer crew) is
    /// skipped, not fatal.
    pub fn new_lines(&mut self) -> Vec<(String, TranscriptLine)> {
        let mut out = Vec::new();
        for (agent, path) in self.files() {
            let offset = self.offsets.get(&path).copied().unwrap_or(0);
            let Ok(bytes) = fs::read(&path) else {
                continue;
            };
            // A shorter file was replaced: read it from the start.
            let start = if (bytes.len() as u64) < offset {
                0
            } else {
                usize::try_from(offset).unwrap_or(bytes.len())
            };
            let Some(last_newline) = bytes[start..].iter().rposition(|&b| b == b'\n') else {
                continue;
            };
            let end = start + last_newline + 1;
            out.extend(
                bytes[start..end]
                    .split(|&b| b == b'\n')
                    .filter_map(|line| serde_json::from_slice::<TranscriptLine>(line).ok())
                    .map(|line| (agent.clone(), line)),
            );
            self.offsets.insert(path, end as u64);
        }
        out
    }

    /// Every `<agent>/<session>.jsonl`, sorted so agents come in a stable order.
    fn files(&self) -> Vec<(String, PathBuf)> {
        let mut files = Vec::new();
        for agent in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let Some(name) = agent.file_name().to_str().map(str::to_string) else {
                continue;
            };
            for file in fs::read_dir(agent.path()).into_iter().flatten().flatten() {
                let path = file.path();
                if path.extension().is_some_and(|e| e == "jsonl") {
                    files.push((name.clone(), path));
                }
            }
        }
        files.sort();
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{AgentEvent, RecoveryKind};
    use crate::transcript::{TranscriptWriter, transcript_path};
    use std::io::Write;

    fn line(reason: &str) -> TranscriptLine {
        TranscriptLine {
            ts: "t".into(),
            turn: 1,
            event: AgentEvent::Recovery {
                kind: RecoveryKind::ModelRetry,
                attempt: 1,
                reason: reason.into(),
            },
        }
    }

    #[test]
    fn reads_only_new_whole_lines_of_every_agent() {
        let dir = tempfile::tempdir().unwrap();
        let old = transcript_path(dir.path(), "alice", "session_1");
        TranscriptWriter::open(old.clone())
            .unwrap()
            .append(&line("before the start"))
            .unwrap();
        let mut follower = TranscriptFollower::new(dir.path());
        assert!(
            follower.new_lines().is_empty(),
            "earlier lines are not news"
        );

        TranscriptWriter::open(old.clone())
            .unwrap()
            .append(&line("alice retries"))
            .unwrap();
        let lead = transcript_path(dir.path(), "lead", "session_2");
        let mut writer = TranscriptWriter::open(lead.clone()).unwrap();
        writer.append(&line("lead retries")).unwrap();
        // A torn line (its writer is mid-way) waits for its end.
        let mut torn = fs::OpenOptions::new().append(true).open(&lead).unwrap();
        torn.write_all(b"{\"ts\":\"t\",\"tu").unwrap();
        let seen: Vec<(String, TranscriptLine)> = follower.new_lines();
        assert_eq!(
            seen,
            vec![
                ("alice".to_string(), line("alice retries")),
                ("lead".to_string(), line("lead retries")),
            ]
        );
        assert!(follower.new_lines().is_empty(), "each line is told once");
    }
}
