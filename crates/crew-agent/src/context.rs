//! The system prompt: a static prefix (identity, rules, tools in registry order) whose bytes
//! never change between turns, so providers can cache it, and a dynamic suffix (environment,
//! instruction files, team facts) rebuilt every turn.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crew_model::ToolDefinition;
use crew_store::{AgentMemory, MemoryScope};

/// Instruction files collected from the working directory up to the repository root.
pub const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Bytes of one instruction file put in the prompt; the rest is cut with a note.
const INSTRUCTION_CAP: usize = 64 * 1024;

/// The rules every crew agent gets unless the caller gives its own.
pub const DEFAULT_RULES: &str = "\
# Rules
- Your text outside tool calls is shown to the people watching; keep it short and to the point.
- Read a file before you change it. Prefer read, grep and glob over shell commands for looking.
- Independent tool calls may be made together; calls that depend on each other go one at a time.
- A tool result that is an error is information: read it and correct course, do not repeat the same call.
- Permission denials are final for that call; do not try to get around them.
- Never print, log or commit secrets (API keys, tokens, passwords).
- The conversation is compacted automatically near the context limit; work does not need to be rushed.";

/// How an agent with the memory tools uses its memory (part of the static prefix).
pub const MEMORY_RULES: &str = "\
# Memory
You have a memory that lasts between conversations: your own and the team's, indexed under \
\"# Memory index\" below. When a memory's description fits what you are doing, read its body \
with memory_read. A memory says what was true when it was written: before you act on one that \
names a file, function or flag, check that it still exists (read, grep or glob). An index line \
marked STALE names a path that is gone. When a memory is wrong, correct it with memory_write or \
drop it with memory_forget. Keep (memory_write) only what will matter in later conversations and \
cannot be read from the code or git history: the person and how they work (user), corrections \
and confirmed approaches with why (feedback), decisions and constraints behind the work \
(project), where to look things up (reference).";

/// Lines and bytes of one scope's memory index in the prompt; older memories are cut first.
const MEMORY_INDEX_LINES: usize = 100;
const MEMORY_INDEX_BYTES: usize = 8 * 1024;

/// The memory index for the dynamic suffix: the agent's scope, then the team's, newest first,
/// each bounded, stale memories marked against `workspace`.
pub fn memory_index(book: &dyn AgentMemory, workspace: &Path) -> String {
    let mut out = String::from("# Memory index");
    for (title, scope) in [
        (format!("Yours ({})", book.agent()), MemoryScope::Agent),
        ("The team's".to_string(), MemoryScope::Team),
    ] {
        let index = book.prompt_index(scope, workspace, MEMORY_INDEX_LINES, MEMORY_INDEX_BYTES);
        out.push_str(&format!("\n## {title}\n{}", index.trim_end()));
    }
    out
}

/// Identity, rules and the tool list. Identical inputs give identical bytes.
pub fn static_prefix(name: &str, role: &str, rules: &str, tools: &[ToolDefinition]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "You are {name}, a {role} agent on a crew team: several coding agents working in one git \
         repository, coordinated through shared task files and inboxes.\n\n{rules}\n\n# Tools\n\
         Available tools, in order: {}.",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    )
}

/// Environment, instruction files (outermost first) and team facts.
pub fn dynamic_suffix(workspace: &Path, repo_root: &Path, team_facts: &[String]) -> String {
    let files = instruction_files(workspace, repo_root);
    dynamic_suffix_with(workspace, repo_root, &files, team_facts)
}

/// [`dynamic_suffix`] with the instruction files given (see `agent::instructions`).
pub fn dynamic_suffix_with(
    workspace: &Path,
    repo_root: &Path,
    instruction_files: &[PathBuf],
    team_facts: &[String],
) -> String {
    let now = humantime::format_rfc3339(SystemTime::now()).to_string();
    let mut out = format!(
        "# Environment\nWorking directory: {}\nDate: {}",
        workspace.display(),
        now.get(..10).unwrap_or(&now)
    );
    if let Some(branch) = git_branch(workspace, repo_root) {
        out.push_str(&format!("\nGit branch: {branch}"));
    }
    for path in instruction_files {
        match std::fs::read(path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let cut = crew_tools::spill::floor_char_boundary(&text, INSTRUCTION_CAP);
                out.push_str(&format!(
                    "\n\n# Instructions from {}\n{}",
                    path.display(),
                    &text[..cut]
                ));
                if cut < text.len() {
                    out.push_str("\n[… cut: the file is longer than 64 KiB]");
                }
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "instruction file unreadable; skipped")
            }
        }
    }
    if !team_facts.is_empty() {
        out.push_str("\n\n# Team");
        for fact in team_facts {
            out.push_str(&format!("\n- {fact}"));
        }
    }
    out
}

/// The folders from `repo_root` down to `workspace` (just `workspace` when it is not inside
/// the repository), outermost first.
fn folders_down_to(workspace: &Path, repo_root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![workspace.to_path_buf()];
    if workspace.starts_with(repo_root) {
        let mut dir = workspace;
        while dir != repo_root {
            match dir.parent() {
                Some(parent) => {
                    dirs.push(parent.to_path_buf());
                    dir = parent;
                }
                None => break,
            }
        }
    }
    dirs.reverse();
    dirs
}

/// Every `AGENTS.md` / `CLAUDE.md` from the repository root down to `workspace`. A workspace
/// that is its own checkout (a worktree under the repository) holds its own copy of the
/// project's files, so the search starts at that checkout's root: each file is loaded once.
pub fn instruction_files(workspace: &Path, repo_root: &Path) -> Vec<PathBuf> {
    let checkout = folders_down_to(workspace, repo_root)
        .into_iter()
        .rev()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or_else(|| repo_root.to_path_buf());
    folders_down_to(workspace, &checkout)
        .into_iter()
        .flat_map(|dir| INSTRUCTION_FILES.map(|name| dir.join(name)))
        .filter(|path| path.is_file())
        .collect()
}

/// The checked-out branch, read from the nearest `.git` (a folder, or a worktree's file
/// pointing at one); `None` when there is none or it cannot be read cheaply.
fn git_branch(workspace: &Path, repo_root: &Path) -> Option<String> {
    let dot_git = folders_down_to(workspace, repo_root)
        .into_iter()
        .rev()
        .map(|dir| dir.join(".git"))
        .find(|p| p.exists())?;
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let pointer = std::fs::read_to_string(&dot_git).ok()?;
        let target = PathBuf::from(pointer.strip_prefix("gitdir:")?.trim());
        dot_git.parent()?.join(target)
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => branch.to_string(),
        None => format!("detached at {}", head.get(..12).unwrap_or(head)),
    })
}

/// A stable 64-bit FNV-1a hash of the cacheable prefix: the static system text, the tool
/// definitions and the compaction epoch (compaction rewrites history, starting a new cache
/// lineage). Equal fingerprints mean the provider's cached prefix still applies.
pub fn fingerprint(static_prefix: &str, tools: &[ToolDefinition], epoch: u64) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    // Serialising plain strings and JSON values cannot fail.
    let tools = serde_json::to_string(tools).unwrap_or_default();
    let mut hash = OFFSET;
    let parts: [&[u8]; 3] = [
        static_prefix.as_bytes(),
        tools.as_bytes(),
        &epoch.to_le_bytes(),
    ];
    for part in parts {
        for &byte in part.iter().chain(&[0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: "d".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn the_static_prefix_is_byte_stable_and_lists_tools_in_order() {
        let tools = [tool("read"), tool("bash")];
        let a = static_prefix("alice", "coder", DEFAULT_RULES, &tools);
        assert_eq!(a, static_prefix("alice", "coder", DEFAULT_RULES, &tools));
        assert!(a.contains("in order: read, bash."));
        assert!(!a.contains("Date"));
    }

    #[test]
    fn fingerprint_changes_with_any_part() {
        let tools = [tool("read")];
        let base = fingerprint("p", &tools, 0);
        assert_eq!(base, fingerprint("p", &tools, 0));
        assert_ne!(base, fingerprint("q", &tools, 0));
        assert_ne!(base, fingerprint("p", &[tool("bash")], 0));
        assert_ne!(base, fingerprint("p", &tools, 1));
        assert_eq!(base.len(), 16);
    }

    #[test]
    fn instruction_files_come_outermost_first_and_stop_at_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let ws = root.join("sub/ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "outside").unwrap();
        std::fs::write(root.join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(root.join("sub/CLAUDE.md"), "sub rules").unwrap();
        std::fs::write(ws.join("AGENTS.md"), "ws rules").unwrap();
        assert_eq!(
            instruction_files(&ws, &root),
            [
                root.join("AGENTS.md"),
                root.join("sub/CLAUDE.md"),
                ws.join("AGENTS.md")
            ]
        );
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let suffix = dynamic_suffix(&ws, &root, &["lead is bob".to_string()]);
        let at = |needle: &str| suffix.find(needle).unwrap();
        assert!(at("root rules") < at("sub rules") && at("sub rules") < at("ws rules"));
        assert!(!suffix.contains("outside"));
        assert!(suffix.contains("Git branch: main"));
        assert!(suffix.contains("- lead is bob"));
    }

    #[test]
    fn in_a_worktree_only_its_own_copies_are_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let wt = root.join(".worktrees/alice");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(wt.join("src")).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../../.git/worktrees/alice\n").unwrap();
        std::fs::write(root.join("AGENTS.md"), "main's copy").unwrap();
        std::fs::write(wt.join("AGENTS.md"), "alice's copy").unwrap();
        assert_eq!(instruction_files(&wt, &root), [wt.join("AGENTS.md")]);
        assert_eq!(
            instruction_files(&wt.join("src"), &root),
            [wt.join("AGENTS.md")]
        );
        assert_eq!(instruction_files(&root, &root), [root.join("AGENTS.md")]);
    }

    #[test]
    fn a_worktree_git_file_points_at_its_head() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("wt");
        let git_dir = dir.path().join("gitdir");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&git_dir).unwrap();
        std::fs::write(ws.join(".git"), format!("gitdir: {}\n", git_dir.display())).unwrap();
        std::fs::write(git_dir.join("HEAD"), "ref: refs/heads/crew/alice\n").unwrap();
        assert_eq!(git_branch(&ws, &ws).as_deref(), Some("crew/alice"));
    }
}
