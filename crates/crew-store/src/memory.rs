//! Long-term memory: what an agent learnt that should hold in its next conversations, as
//! Markdown files with front matter (`name`, `description`, `type`) under
//! `.crew/memory/<agent>/` (its own) and `.crew/memory/team/` (every agent's). Each scope keeps
//! a `MEMORY.md` index, rewritten by crew on every change; the prompt carries an index (bounded)
//! and bodies are read on demand. Memories are agent-written data: names are checked like agent
//! names, bodies are bounded by `[limits]`, and a file that does not parse is reported by path
//! and field, never trusted.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::front_matter;
use crate::lock::with_lock;
use crate::secrets::redact;
use crate::{Limits, Refusal, StoreError};
use crew_protocol::AgentName;
use crew_protocol::{InvalidName, validate_name};

/// The team-wide scope's folder under `.crew/memory/`.
pub const TEAM_FOLDER: &str = "team";
/// Each scope's index file, written by crew.
pub const INDEX_FILE: &str = "MEMORY.md";

/// The kind of memory: user (the person and how they like to work), feedback (a correction,
/// a confirmed approach or a failure: what to do or not next time, and why), project (a fact
/// about the work not visible in the code: a decision, deadline or owner), reference (where to
/// look something up outside the repository).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MemoryType {
    User,
    Feedback,
    Project,
    Reference,
}

impl MemoryType {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::User => "user",
            MemoryType::Feedback => "feedback",
            MemoryType::Project => "project",
            MemoryType::Reference => "reference",
        }
    }
}

/// Whose memory: `agent` (yours only) or `team` (every agent on the team reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScope {
    #[default]
    Agent,
    Team,
}

impl MemoryScope {
    /// How the scope is called in messages, as `agent` sees it ("alice's memory", "the
    /// team's memory").
    pub fn label(self, agent: &AgentName) -> String {
        match self {
            MemoryScope::Agent => format!("{agent}'s memory"),
            MemoryScope::Team => "the team's memory".to_string(),
        }
    }
}

/// A memory file's front matter.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    name: String,
    description: String,
    #[serde(rename = "type")]
    kind: MemoryType,
}

/// What `memory_write` (or a hook's `memory` output) asks crew to keep; its schema is the
/// tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryDraft {
    /// a-z, 0-9, '_' or '-', starting with a letter, at most 32 characters
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MemoryType,
    /// One line: when this memory matters (it is what the index shows).
    #[schemars(length(min = 1))]
    pub description: String,
    pub body: String,
    /// agent (default): yours only; team: every agent on the team reads it
    #[serde(default)]
    pub scope: MemoryScope,
}

impl MemoryDraft {
    /// Its name, description and body as `limits` allow them (every backend keeps a memory
    /// so); the description and body as they are kept: trimmed, and a key this process read
    /// redacted (a memory goes into every later prompt of its readers).
    pub fn checked<E: From<InvalidName> + From<Refusal>>(
        &self,
        limits: &Limits,
    ) -> Result<(String, String), E> {
        validate_name("memory name", &self.name)?;
        let description = self.description.trim();
        let chars = description.chars().count();
        let limit = limits.subject_chars;
        if description.is_empty() || description.contains(['\n', '\r']) || chars > limit {
            return Err(Refusal::MemoryDescription {
                what: if description.is_empty() {
                    "empty".to_string()
                } else if chars > limit {
                    format!("{chars} characters")
                } else {
                    "more than one line".to_string()
                },
                limit,
            }
            .into());
        }
        limits.check_memory(&self.body)?;
        Ok((
            redact(description).into_owned(),
            redact(self.body.trim_end()).into_owned(),
        ))
    }
}

/// A memory as read back from its store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub name: String,
    pub kind: MemoryType,
    pub description: String,
    pub body: String,
    pub scope: MemoryScope,
    /// When it was last written.
    pub modified: SystemTime,
}

impl Memory {
    /// The paths the memory names (see [`mentioned_paths`]) that do not exist under `workspace`.
    pub fn missing_paths(&self, workspace: &Path) -> Vec<String> {
        let text = format!("{}\n{}", self.description, self.body);
        mentioned_paths(&text)
            .into_iter()
            .filter(|p| !workspace.join(p).exists())
            .collect()
    }

    /// `- name (type): description`, marked stale when it names a path gone from `workspace`.
    pub fn index_line(&self, workspace: Option<&Path>) -> String {
        let mut line = format!(
            "- {} ({}): {}",
            self.name,
            self.kind.as_str(),
            self.description
        );
        if let Some(workspace) = workspace {
            let missing = self.missing_paths(workspace);
            if !missing.is_empty() {
                line.push_str(&format!(
                    " [STALE: names {} which no longer exists; verify before use]",
                    missing
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        line
    }
}

/// One agent's view of the memory folders: its own scope and the team's.
#[derive(Debug, Clone)]
pub struct MemoryBook {
    /// `<repo>/.crew/memory`
    dir: PathBuf,
    agent: AgentName,
    limits: Limits,
}

impl MemoryBook {
    /// The memories of `agent` under `crew_dir` (`<repo>/.crew`), with the default limits.
    pub fn new(crew_dir: &Path, agent: &AgentName) -> Self {
        Self {
            dir: crew_dir.join("memory"),
            agent: agent.clone(),
            limits: Limits::default(),
        }
    }

    pub fn with_limits(self, limits: Limits) -> Self {
        Self { limits, ..self }
    }

    pub fn agent(&self) -> &AgentName {
        &self.agent
    }

    /// `.crew/memory/<agent>/` or `.crew/memory/team/`.
    pub fn scope_dir(&self, scope: MemoryScope) -> PathBuf {
        match scope {
            MemoryScope::Agent => self.dir.join(&self.agent),
            MemoryScope::Team => self.dir.join(TEAM_FOLDER),
        }
    }

    /// The file memory `name` of `scope` is kept in.
    pub fn file(&self, scope: MemoryScope, name: &str) -> PathBuf {
        self.scope_dir(scope).join(format!("{name}.md"))
    }

    /// How the scope is called in messages ("alice's memory", "the team's memory").
    pub fn scope_label(&self, scope: MemoryScope) -> String {
        scope.label(&self.agent)
    }

    /// Writes (or replaces: one memory per name) `draft`, then the scope's index. Returns
    /// whether a memory of that name was replaced.
    pub fn write(&self, draft: &MemoryDraft) -> Result<bool, StoreError> {
        let (description, body) = draft.checked::<StoreError>(&self.limits)?;
        let dir = self.scope_dir(draft.scope);
        let path = self.file(draft.scope, &draft.name);
        let header = Header {
            name: draft.name.clone(),
            description,
            kind: draft.kind,
        };
        // Serialising three plain fields cannot fail.
        let yaml = serde_norway::to_string(&header).unwrap_or_default();
        let text = format!("---\n{yaml}---\n\n{body}\n");
        with_lock(&dir.join(".lock"), || {
            let replaced = path.exists();
            if !replaced {
                let count = self.list(draft.scope).0.len();
                if count >= self.limits.memories_per_scope {
                    return Err(Refusal::MemoriesFull {
                        scope: self.scope_label(draft.scope),
                        count,
                    }
                    .into());
                }
            }
            write_atomic(&path, text.as_bytes()).map_err(|e| StoreError::io(&path, e))?;
            self.write_index(draft.scope)?;
            Ok(replaced)
        })
    }

    /// Reads memory `name`: from `scope` when given, else the agent's own first, then the team's.
    pub fn read(&self, scope: Option<MemoryScope>, name: &str) -> Result<Memory, StoreError> {
        validate_name("memory name", name)?;
        let scopes = match scope {
            Some(scope) => vec![scope],
            None => vec![MemoryScope::Agent, MemoryScope::Team],
        };
        for scope in &scopes {
            let path = self.file(*scope, name);
            if path.is_file() {
                return self.load(*scope, &path);
            }
        }
        Err(self.not_found(scope, name))
    }

    /// Deletes memory `name` from `scope`, then rewrites the scope's index.
    pub fn forget(&self, scope: MemoryScope, name: &str) -> Result<(), StoreError> {
        validate_name("memory name", name)?;
        let dir = self.scope_dir(scope);
        let path = self.file(scope, name);
        with_lock(&dir.join(".lock"), || match std::fs::remove_file(&path) {
            Ok(()) => self.write_index(scope),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(self.not_found(Some(scope), name))
            }
            Err(e) => Err(StoreError::io(&path, e)),
        })
    }

    /// Every memory of `scope` by name, and the files that could not be read (by path and why).
    pub fn list(&self, scope: MemoryScope) -> (Vec<Memory>, Vec<StoreError>) {
        let dir = self.scope_dir(scope);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
            Err(e) => return (Vec::new(), vec![StoreError::io(&dir, e)]),
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.ends_with(".md") && name != INDEX_FILE && !name.starts_with('.')
            })
            .collect();
        paths.sort();
        let mut memories = Vec::new();
        let mut broken = Vec::new();
        for path in paths {
            match self.load(scope, &path) {
                Ok(memory) => memories.push(memory),
                Err(e) => broken.push(e),
            }
        }
        (memories, broken)
    }

    /// One memory file, checked: its front matter parses, its name is valid and is the file's.
    fn load(&self, scope: MemoryScope, path: &Path) -> Result<Memory, StoreError> {
        let metadata = std::fs::symlink_metadata(path).map_err(|e| StoreError::io(path, e))?;
        if !metadata.is_file() {
            return Err(StoreError::malformed(path, "not a regular file"));
        }
        if metadata.len() > (self.limits.memory_bytes + 4096) as u64 {
            return Err(StoreError::malformed(
                path,
                format!(
                    "{} bytes, more than a memory may hold ([limits] memory_bytes)",
                    metadata.len()
                ),
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| StoreError::io(path, e))?;
        let text =
            String::from_utf8(bytes).map_err(|_| StoreError::malformed(path, "not UTF-8 text"))?;
        let (header, body): (Header, String) = front_matter::parse(path, &text)?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        validate_name("memory name", &header.name)
            .map_err(|e| StoreError::malformed(path, format!("front matter: name: {e}")))?;
        if header.name != stem {
            return Err(StoreError::malformed(
                path,
                format!(
                    "front matter: name: {:?} is not the file's name {stem:?}",
                    header.name
                ),
            ));
        }
        Ok(Memory {
            name: header.name,
            kind: header.kind,
            // A hand-edited file may fold it over lines; the index keeps one line per memory.
            description: header
                .description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            body: body.trim_end().to_string(),
            scope,
            modified: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        })
    }

    /// `MEMORY.md` of `scope`: every memory by name, for the person and for tools that browse.
    fn write_index(&self, scope: MemoryScope) -> Result<(), StoreError> {
        let (memories, broken) = self.list(scope);
        let mut text = format!(
            "# {} (index written by crew on every change; edit the memory files, not this one)\n\n",
            self.scope_label(scope)
        );
        for memory in &memories {
            text.push_str(&memory.index_line(None));
            text.push('\n');
        }
        for error in &broken {
            text.push_str(&format!("- unreadable: {error}\n"));
        }
        let path = self.scope_dir(scope).join(INDEX_FILE);
        write_atomic(&path, text.as_bytes()).map_err(|e| StoreError::io(&path, e))
    }

    fn not_found(&self, scope: Option<MemoryScope>, name: &str) -> StoreError {
        no_such_memory(&self.agent, scope, name).into()
    }
}

/// One agent's memories and the team's, wherever they are kept: the memory folders
/// ([`MemoryBook`]), or the team's store for an agent on another host (crew-team's). What the
/// memory tools, hooks' memories and the prompt's index use.
pub trait AgentMemory: Send + Sync + std::fmt::Debug {
    /// The agent whose memory it is.
    fn agent(&self) -> &AgentName;

    /// Writes (or replaces: one memory per name) `draft`; whether one was replaced.
    fn write(&self, draft: &MemoryDraft) -> Result<bool, StoreError>;

    /// Memory `name`: from `scope` when given, else the agent's own first, then the team's.
    fn read(&self, scope: Option<MemoryScope>, name: &str) -> Result<Memory, StoreError>;

    fn forget(&self, scope: MemoryScope, name: &str) -> Result<(), StoreError>;

    /// Every memory of `scope` by name, and what could not be read.
    fn list(&self, scope: MemoryScope) -> (Vec<Memory>, Vec<StoreError>);

    /// How the scope is called in messages ("alice's memory", "the team's memory").
    fn scope_label(&self, scope: MemoryScope) -> String {
        scope.label(self.agent())
    }

    /// The index of `scope` for the prompt: newest first, stale memories marked against
    /// `workspace`, at most `max_lines` lines and `max_bytes` bytes; what is cut (the oldest) is
    /// counted in a last line, and unreadable files are named.
    fn prompt_index(
        &self,
        scope: MemoryScope,
        workspace: &Path,
        max_lines: usize,
        max_bytes: usize,
    ) -> String {
        let (mut memories, broken) = self.list(scope);
        memories.sort_by(|a, b| b.modified.cmp(&a.modified).then(a.name.cmp(&b.name)));
        let mut out = String::new();
        let mut shown = 0;
        for memory in &memories {
            let line = memory.index_line(Some(workspace));
            if shown == max_lines || out.len() + line.len() + 1 > max_bytes {
                break;
            }
            out.push_str(&line);
            out.push('\n');
            shown += 1;
        }
        if shown < memories.len() {
            out.push_str(&format!(
                "- ({} older memories not listed here; memory_read without a name lists them all)\n",
                memories.len() - shown
            ));
        }
        for error in &broken {
            out.push_str(&format!("- (unreadable, ignored: {error})\n"));
        }
        if out.is_empty() {
            out.push_str("(none)\n");
        }
        out
    }
}

impl AgentMemory for MemoryBook {
    fn agent(&self) -> &AgentName {
        MemoryBook::agent(self)
    }

    fn write(&self, draft: &MemoryDraft) -> Result<bool, StoreError> {
        MemoryBook::write(self, draft)
    }

    fn read(&self, scope: Option<MemoryScope>, name: &str) -> Result<Memory, StoreError> {
        MemoryBook::read(self, scope, name)
    }

    fn forget(&self, scope: MemoryScope, name: &str) -> Result<(), StoreError> {
        MemoryBook::forget(self, scope, name)
    }

    fn list(&self, scope: MemoryScope) -> (Vec<Memory>, Vec<StoreError>) {
        MemoryBook::list(self, scope)
    }
}

/// No memory `name` where `agent` looked: in `scope`, or in neither of its scopes.
pub fn no_such_memory(agent: &AgentName, scope: Option<MemoryScope>, name: &str) -> Refusal {
    Refusal::NoSuchMemory {
        name: name.to_string(),
        scope: match scope {
            Some(scope) => scope.label(agent),
            None => format!("{} or the team's", MemoryScope::Agent.label(agent)),
        },
    }
}

/// File extensions that make a lone `name.ext` word count as a path.
const FILE_EXTENSIONS: &[&str] = &[
    "rs", "toml", "md", "json", "jsonl", "yaml", "yml", "lock", "txt", "py", "js", "ts", "tsx",
    "jsx", "go", "c", "h", "cc", "cpp", "hpp", "java", "kt", "rb", "sh", "cfg", "ini", "html",
    "css", "scss", "sql", "proto", "swift", "cs", "php", "mjs", "cjs", "vue", "svelte",
];

/// The relative paths a memory's text names, for the staleness check: a span in backticks that
/// contains a `/` or is a file name with a common extension, or a plain word that ends in such
/// a file name (`src/x.rs`, `Cargo.toml`); a `:line` suffix is dropped. URLs, absolute paths,
/// paths with `..` and code (`a::b`, `f()`, `self.name`) are not paths of the worktree.
pub fn mentioned_paths(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        let quoted = i % 2 == 1;
        if quoted && part.contains(char::is_whitespace) {
            continue;
        }
        for word in part.split(char::is_whitespace) {
            let word = word.trim_matches(|c: char| {
                matches!(
                    c,
                    '.' | ',' | ';' | ':' | '(' | ')' | '"' | '\'' | '[' | ']'
                )
            });
            let word = match word.rsplit_once(':') {
                Some((path, line)) if line.chars().all(|c| c.is_ascii_digit()) => path,
                _ => word,
            };
            if is_path_like(word, quoted) && !found.iter().any(|f| f == word) {
                found.push(word.to_string());
            }
        }
    }
    found
}

/// `quoted`: in backticks, where a folder path (`a/b/`) counts too.
fn is_path_like(word: &str, quoted: bool) -> bool {
    if word.is_empty()
        || word.starts_with(['/', '-', '~', '.'])
        || word.contains("://")
        || word.split('/').any(|part| part == "..")
        || !word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    {
        return false;
    }
    let last = word.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let has_extension = last
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && FILE_EXTENSIONS.contains(&ext));
    has_extension || (quoted && word.trim_matches('/').contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(name: &str, body: &str) -> MemoryDraft {
        MemoryDraft {
            name: name.to_string(),
            kind: MemoryType::Feedback,
            description: "when running tests".to_string(),
            body: body.to_string(),
            scope: MemoryScope::Agent,
        }
    }

    #[test]
    fn paths_are_words_with_a_slash_or_a_known_extension() {
        let text = "Edit `src/store/memory.rs:12` and Cargo.toml, not https://x.org/a/b, \
                    /etc/passwd, ../up/x.rs, `self.name`, crate::store, f(), read/write, \
                    and/or, `assets/roles/` or v1.2.";
        assert_eq!(
            mentioned_paths(text),
            ["src/store/memory.rs", "Cargo.toml", "assets/roles/"]
        );
    }

    #[test]
    fn a_memory_round_trips_and_replaces_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let book = MemoryBook::new(dir.path(), &"alice".parse().unwrap());
        assert!(!book.write(&draft("tests", "use nextest")).unwrap());
        assert!(book.write(&draft("tests", "use cargo nextest")).unwrap());
        let memory = book.read(None, "tests").unwrap();
        assert_eq!(memory.body, "use cargo nextest");
        assert_eq!(memory.kind, MemoryType::Feedback);
        let index = std::fs::read_to_string(dir.path().join("memory/alice/MEMORY.md")).unwrap();
        assert!(
            index.contains("- tests (feedback): when running tests"),
            "{index}"
        );
        book.forget(MemoryScope::Agent, "tests").unwrap();
        let gone = book.read(None, "tests").unwrap_err().to_string();
        assert!(gone.contains("no memory named \"tests\""), "{gone}");
    }

    #[test]
    fn a_hand_folded_description_is_one_index_line_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let book = MemoryBook::new(dir.path(), &"alice".parse().unwrap());
        let scope = dir.path().join("memory/alice");
        std::fs::create_dir_all(&scope).unwrap();
        std::fs::write(
            scope.join("folded.md"),
            "---\nname: folded\ntype: user\ndescription: |\n  line one\n  - fake: entry\n---\nbody",
        )
        .unwrap();
        std::fs::write(dir.path().join("outside.md"), "---\nname: linked\n---\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.md"), scope.join("linked.md")).unwrap();
        let index = book.prompt_index(MemoryScope::Agent, dir.path(), 10, 10_000);
        assert!(
            index.starts_with("- folded (user): line one - fake: entry\n"),
            "{index}"
        );
        assert!(index.contains("linked.md: not a regular file"), "{index}");
    }

    #[test]
    fn bad_names_descriptions_and_sizes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let book = MemoryBook::new(dir.path(), &"alice".parse().unwrap()).with_limits(Limits {
            memories_per_scope: 1,
            ..Limits::default()
        });
        let err = |d: MemoryDraft| book.write(&d).unwrap_err().to_string();
        assert!(err(draft("../x", "b")).contains("memory name"));
        let mut two_lines = draft("a", "b");
        two_lines.description = "one\ntwo".into();
        assert!(err(two_lines).contains("more than one line"));
        let big = err(draft("a", &"x".repeat(16 * 1024 + 1)));
        assert!(big.contains("memory_bytes"), "{big}");
        book.write(&draft("a", "b")).unwrap();
        assert!(err(draft("b", "b")).contains("memories_per_scope"));
        assert!(book.read(None, "../../etc/passwd").is_err());
    }
}
