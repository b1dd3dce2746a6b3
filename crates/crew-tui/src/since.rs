//! What changed while nobody watched: each person's screen leaves a last-seen marker in
//! `.crew/screens/<user>.json` (refreshed while attached, so a killed terminal leaves a recent
//! one), and the next screen they open says what happened since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::workspace_view::WorkspaceView;
use crew_protocol::joined;
use crew_store::{Entry, RequestState, Status, TaskId};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastSeen {
    /// RFC 3339, as the store's timestamps are.
    pub seen: String,
}

/// The marker of the person running this screen (their login name; one file per person, so
/// two people on one machine each get their own summary).
pub(crate) fn marker_path(root: &Path) -> PathBuf {
    let user = std::env::var("USER")
        .ok()
        .filter(|u| {
            !u.is_empty()
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
        .unwrap_or_else(|| "person".into());
    root.join(".crew")
        .join("screens")
        .join(format!("{user}.json"))
}

impl LastSeen {
    pub(crate) fn read(root: &Path) -> Option<LastSeen> {
        let text = std::fs::read_to_string(marker_path(root)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Records `now` as seen. Losing a marker only loses a summary: errors are logged.
    pub(crate) fn write(root: &Path, now: SystemTime) {
        let path = marker_path(root);
        let marker = LastSeen {
            seen: humantime::format_rfc3339_millis(now).to_string(),
        };
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                let text = serde_json::to_vec(&marker).map_err(std::io::Error::other)?;
                crew_store::atomic::write_atomic(&path, &text)
            });
        if let Err(e) = written {
            tracing::warn!("last-seen marker {} not written: {e}", path.display());
        }
    }

    fn seen_at(&self) -> Option<SystemTime> {
        humantime::parse_rfc3339_weak(&self.seen).ok()
    }

    /// One line: how long ago, tasks that changed (by where they are now), messages, and what
    /// waits for the person.
    pub(crate) fn summary(&self, model: &WorkspaceView, now: SystemTime) -> String {
        let Some(seen) = self.seen_at() else {
            return "welcome back".into();
        };
        let after = |ts: &str| humantime::parse_rfc3339_weak(ts).is_ok_and(|t| t > seen);
        let mut tasks: BTreeMap<&str, Vec<TaskId>> = BTreeMap::new();
        for task in model.tasks.iter().filter(|t| after(&t.updated_at)) {
            tasks.entry(task.status.as_str()).or_default().push(task.id);
        }
        let messages = model
            .inboxes
            .values()
            .flatten()
            .filter(|e| matches!(e, Entry::Message { message, .. } if after(&message.ts)))
            .count();
        let waiting = model
            .requests
            .iter()
            .filter(|r| r.state == RequestState::Pending)
            .count();
        let reviews = model
            .tasks
            .iter()
            .filter(|t| t.status == Status::Review)
            .count();
        let ago = now.duration_since(seen).unwrap_or_default();
        let mut parts: Vec<String> = tasks
            .iter()
            .map(|(status, ids)| format!("{status}: {}", joined(ids, ", ")))
            .collect();
        parts.push(format!("{messages} message(s)"));
        if waiting > 0 {
            parts.push(format!("{waiting} request(s) wait for you"));
        }
        if reviews > 0 {
            parts.push(format!("{reviews} review(s) wait"));
        }
        format!(
            "since you were last here ({} ago): {}",
            humantime::format_duration(Duration::from_secs(ago.as_secs())),
            parts.join(" · ")
        )
    }
}
