//! Which changes of a teammate's branch govern the team, judged by what each change does (where
//! it lands, whether it adds or edits, whether the entry is a symlink or a gitlink), not by a
//! list of files that exist: such a change is never merged automatically, and the review shows
//! it with its reason. The names a change is judged by are crew's own folders, git's and the
//! agents' settings, hooks and CI, wherever they would appear.

use serde::Serialize;

use crew_config::TeamConfig;
use crew_git::{EntryKind, FileDiff, FileStatus};
use crew_protocol::{CONFIG_FILE, RUNTIME_FOLDERS};

/// A change that only the person merges, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtectedChange {
    pub path: String,
    pub reason: String,
}

impl std::fmt::Display for ProtectedChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.path, self.reason)
    }
}

/// What the policy looks at besides the change: the repository's settings that make a path
/// matter.
pub(crate) struct Governed<'a> {
    pub config: &'a TeamConfig,
    /// The repository's `core.hooksPath`.
    pub hooks_path: Option<String>,
}

/// Folders whose files git or an agent CLI runs or obeys.
const GOVERNING_FOLDERS: &[(&str, &str)] = &[
    (".githooks", "git hooks"),
    (".husky", "git hooks"),
    (".claude", "agent settings"),
    (".codex", "agent settings"),
    (".github", "CI and repository automation"),
    (".gitlab", "CI"),
    (".ci", "CI"),
    (".circleci", "CI"),
    (".buildkite", "CI"),
];

/// Files that govern the team or git wherever they are (agents read nested instruction files;
/// git reads nested ignore and attribute files).
const GOVERNING_NAMES: &[(&str, &str)] = &[
    (
        ".gitignore",
        "changes what git tracks (e.g. `!.tasks` commits crew's store)",
    ),
    (".gitattributes", "changes how git filters and diffs files"),
    (".gitmodules", "adds or moves submodules"),
    ("AGENTS.md", "agent instructions"),
    ("CLAUDE.md", "agent instructions"),
];

/// CI files at the repository root.
const CI_FILES: &[&str] = &[
    ".gitlab-ci.yml",
    ".travis.yml",
    "Jenkinsfile",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    "appveyor.yml",
];

/// The changes among `files` that only the person merges, each with its reason (a rename
/// counts for both its paths).
pub(crate) fn protected_changes(
    files: &[FileDiff],
    governed: &Governed<'_>,
) -> Vec<ProtectedChange> {
    let mut found = Vec::new();
    for file in files {
        let reason = match file.kind {
            EntryKind::Symlink if file.status != FileStatus::Deleted => {
                Some("a symlink".to_string())
            }
            EntryKind::Gitlink => {
                Some("a gitlink: an embedded repository or submodule".to_string())
            }
            _ => None,
        };
        let reason = reason
            .or_else(|| path_reason(&file.path, governed))
            .or_else(|| {
                let old = file.old_path.as_deref()?;
                path_reason(old, governed).map(|why| format!("moved from {old}: {why}"))
            });
        if let Some(reason) = reason {
            found.push(ProtectedChange {
                path: file.path.clone(),
                reason,
            });
        }
    }
    found
}

/// Why a change at `path` governs the team, if it does.
fn path_reason(path: &str, governed: &Governed<'_>) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let first = parts.first().copied().unwrap_or_default();
    let name = parts.last().copied().unwrap_or_default();
    if parts.iter().any(|p| p.eq_ignore_ascii_case(".git")) {
        return Some("a nested .git: git would run its config".to_string());
    }
    if RUNTIME_FOLDERS.contains(&first) {
        return Some(format!("crew's own folder {first}/"));
    }
    if path == CONFIG_FILE {
        return Some("the team's configuration".to_string());
    }
    if let Some((_, why)) = GOVERNING_FOLDERS
        .iter()
        .find(|(folder, _)| *folder == first)
    {
        return Some((*why).to_string());
    }
    if let Some((_, why)) = GOVERNING_NAMES.iter().find(|(n, _)| *n == name) {
        return Some((*why).to_string());
    }
    if CI_FILES.contains(&path) {
        return Some("CI".to_string());
    }
    if let Some(hooks) = governed
        .hooks_path
        .as_deref()
        .map(|h| h.trim_start_matches("./").trim_end_matches('/'))
        && !hooks.is_empty()
        && (path == hooks || path.starts_with(&format!("{hooks}/")))
    {
        return Some("git hooks (core.hooksPath)".to_string());
    }
    let config = governed.config;
    if config
        .roles
        .values()
        .any(|file| file.get_ref().trim_start_matches("./") == path)
    {
        return Some("a role's instructions ([roles] in crew.toml)".to_string());
    }
    let hook_words = config
        .hooks
        .iter()
        .flat_map(|h| h.command.split_whitespace())
        .map(|w| w.trim_start_matches("./"));
    if hook_words.into_iter().any(|w| w == path) {
        return Some("a script a crew.toml hook runs".to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, status: FileStatus, kind: EntryKind) -> FileDiff {
        FileDiff {
            path: path.to_string(),
            old_path: None,
            status,
            kind,
            binary: false,
            additions: 0,
            deletions: 0,
            hunks: Vec::new(),
        }
    }

    /// Each class the policy knows, including paths that did not exist before (a new folder
    /// under `.tasks/`), nested names, symlinks and gitlinks anywhere, a rename out of a
    /// governed path, and the settings that make a path matter (`core.hooksPath`, `[roles]`,
    /// hooks); ordinary files pass.
    #[test]
    fn a_change_is_judged_by_where_it_lands_and_what_it_is() {
        let text = "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\n\
                    model = { provider = \"scripted\" }\n\n[roles]\n\
                    implementer = \"docs/implementer.md\"\n\n[[hooks]]\n\
                    event = \"PreToolUse\"\ncommand = \"sh ./scripts/guard.sh --strict\"\n";
        let config = TeamConfig::parse(std::path::Path::new("crew.toml"), text).unwrap();
        let governed = Governed {
            config: &config,
            hooks_path: Some("./tools/hooks/".to_string()),
        };
        use EntryKind::{Executable, File, Gitlink, Symlink};
        use FileStatus::{Added, Deleted, Modified, Renamed};
        let mut renamed = change("notes.txt", Renamed, File);
        renamed.old_path = Some("crew.toml".to_string());
        let files = [
            change(".tasks/task_77.json", Added, File),
            change(".mailboxes/lead.jsonl", Added, File),
            change(".worktrees/bob/x", Added, File),
            change(".crew/agents/x.json", Modified, File),
            change(".githooks/pre-commit", Added, Executable),
            change(".husky/pre-push", Added, Executable),
            change("tools/hooks/post-checkout", Added, Executable),
            change(".claude/settings.json", Added, File),
            change(".codex/config.toml", Added, File),
            change("src/AGENTS.md", Added, File),
            change("CLAUDE.md", Modified, File),
            change("docs/implementer.md", Modified, File),
            change(".github/workflows/ci.yml", Added, File),
            change(".gitlab-ci.yml", Added, File),
            change("sub/.gitignore", Added, File),
            change(".gitattributes", Modified, File),
            change(".gitmodules", Deleted, File),
            change("link", Added, Symlink),
            change("vendor/lib", Added, Gitlink),
            change("scripts/guard.sh", Modified, File),
            renamed,
            // Passes: ordinary files, a removed symlink, look-alikes.
            change("src/main.rs", Modified, File),
            change("old-link", Deleted, Symlink),
            change("docs/crew.toml", Added, File),
            change("tasks/task_1.json", Added, File),
            change("scripts/other.sh", Added, Executable),
        ];
        let found = protected_changes(&files, &governed);
        let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
        let expected: Vec<&str> = files[..21].iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, expected);
        let reason = |path: &str| {
            found
                .iter()
                .find(|p| p.path == path)
                .unwrap()
                .reason
                .clone()
        };
        assert_eq!(reason(".tasks/task_77.json"), "crew's own folder .tasks/");
        assert_eq!(reason("link"), "a symlink");
        assert!(reason("sub/.gitignore").contains("!.tasks"));
        assert_eq!(
            reason("tools/hooks/post-checkout"),
            "git hooks (core.hooksPath)"
        );
        assert_eq!(
            reason("notes.txt"),
            "moved from crew.toml: the team's configuration"
        );
    }
}
