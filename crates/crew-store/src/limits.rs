//! How big the text agents store may be. Subjects, descriptions and messages become other
//! agents' prompts and lines on a person's terminal, so an unbounded one is a denial of service
//! on both (a 10 MB message became the lead's whole next prompt). Bigger content goes in a file
//! that the message names.

use serde::{Deserialize, Serialize};

use crate::Refusal;

/// `[limits]` in crew.toml; the defaults hold where it says nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// A task subject: one line of at most this many characters.
    pub subject_chars: usize,
    /// A task description, in bytes.
    pub description_bytes: usize,
    /// A message's text, in bytes.
    pub message_bytes: usize,
    /// A memory's body (`memory_write`), in bytes.
    pub memory_bytes: usize,
    /// Memories kept in one scope (an agent's, or the team's).
    pub memories_per_scope: usize,
    /// What one task may add to the repository when crew commits it: the bytes of its new
    /// and changed files (0: no limit).
    pub max_task_bytes: u64,
    /// Processes and threads one confined command may have at once (`RLIMIT_NPROC`; 0: no
    /// limit).
    pub max_processes: u64,
    /// Address space of each process of a confined command (`RLIMIT_AS`; 0: no limit, the
    /// default, since runtimes such as V8 and Go reserve far more than they use).
    pub max_memory_bytes: u64,
    /// The largest file a confined command may write (`RLIMIT_FSIZE`; 0: no limit).
    pub max_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            subject_chars: 200,
            description_bytes: 64 * 1024,
            message_bytes: 256 * 1024,
            memory_bytes: 16 * 1024,
            memories_per_scope: 200,
            max_task_bytes: 100 << 20,
            max_processes: 4096,
            max_memory_bytes: 0,
            max_file_bytes: 8 << 30,
        }
    }
}

impl Limits {
    pub fn check_subject(&self, subject: &str) -> Result<(), Refusal> {
        if subject.contains(['\n', '\r']) {
            return Err(Refusal::NotOneLine {
                what: "a task subject",
            });
        }
        let chars = subject.chars().count();
        if chars > self.subject_chars {
            return Err(Refusal::TooLarge {
                what: "task subject",
                size: chars,
                unit: "characters",
                limit: self.subject_chars,
                setting: "subject_chars",
            });
        }
        Ok(())
    }

    pub fn check_description(&self, description: &str) -> Result<(), Refusal> {
        check_bytes(
            "task description",
            description,
            self.description_bytes,
            "description_bytes",
        )
    }

    pub fn check_message(&self, text: &str) -> Result<(), Refusal> {
        check_bytes("message text", text, self.message_bytes, "message_bytes")
    }

    pub fn check_memory(&self, body: &str) -> Result<(), Refusal> {
        check_bytes("memory body", body, self.memory_bytes, "memory_bytes")
    }
}

fn check_bytes(
    what: &'static str,
    text: &str,
    limit: usize,
    setting: &'static str,
) -> Result<(), Refusal> {
    if text.len() > limit {
        return Err(Refusal::TooLarge {
            what,
            size: text.len(),
            unit: "bytes",
            limit,
            setting,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_with_the_size_and_the_setting() {
        let limits = Limits::default();
        assert!(limits.check_subject(&"s".repeat(200)).is_ok());
        let long = limits
            .check_subject(&"s".repeat(201))
            .unwrap_err()
            .to_string();
        assert!(
            long.contains("201 characters") && long.contains("subject_chars"),
            "{long}"
        );
        let two = limits
            .check_subject("a\nfake line")
            .unwrap_err()
            .to_string();
        assert!(two.contains("one line"), "{two}");
        let big = limits
            .check_message(&"x".repeat(256 * 1024 + 1))
            .unwrap_err()
            .to_string();
        assert!(
            big.contains("262145 bytes") && big.contains("a file"),
            "{big}"
        );
        assert!(limits.check_description(&"d".repeat(64 * 1024)).is_ok());
    }
}
