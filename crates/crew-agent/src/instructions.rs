//! Which instruction files (`AGENTS.md`, `CLAUDE.md`) an agent's prompt carries, each once:
//! the person's own (`$XDG_CONFIG_HOME/crew/AGENTS.md`, else `~/.config/crew/AGENTS.md`),
//! the project's from the checkout root down to the working directory, and those of
//! subfolders the agent has read or written in, from the moment it first did.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::context::instruction_files;

/// The person's own instruction file, wherever their configuration lives.
pub fn user_instructions_file() -> Option<PathBuf> {
    user_crew_dir().map(|dir| dir.join("AGENTS.md"))
}

/// The person's crew configuration folder (instructions, skills).
pub fn user_crew_dir() -> Option<PathBuf> {
    user_crew_dir_in(
        std::env::var_os("XDG_CONFIG_HOME"),
        std::env::var_os("HOME"),
    )
}

/// `$XDG_CONFIG_HOME/crew/AGENTS.md` when that variable is set to an absolute path (the XDG
/// rule: a relative one is ignored), else `$HOME/.config/crew/AGENTS.md`.
pub fn user_instructions_in(
    xdg_config_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    user_crew_dir_in(xdg_config_home, home).map(|dir| dir.join("AGENTS.md"))
}

/// `$XDG_CONFIG_HOME/crew` when that variable is an absolute path, else `$HOME/.config/crew`.
pub fn user_crew_dir_in(
    xdg_config_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let config = xdg_config_home
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("crew"))
}

/// The files of one agent session.
#[derive(Debug, Clone, Default)]
pub struct Instructions {
    user: Option<PathBuf>,
    /// Subfolder files, in the order the agent came upon them.
    discovered: Vec<PathBuf>,
    /// Folders already looked in (canonical).
    visited: HashSet<PathBuf>,
}

impl Instructions {
    pub fn new(user: Option<PathBuf>) -> Self {
        Self {
            user,
            ..Self::default()
        }
    }

    /// Every file for the prompt, each once (a file reached by two paths, e.g. a link, counts
    /// once): the user's, the project's down to `workspace`, then the discovered ones.
    pub fn files(&self, workspace: &Path, repo_root: &Path) -> Vec<PathBuf> {
        let mut seen = HashSet::new();
        self.user
            .iter()
            .filter(|p| p.is_file())
            .cloned()
            .chain(instruction_files(workspace, repo_root))
            .chain(self.discovered.iter().cloned())
            .filter(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())))
            .collect()
    }

    /// The agent used `path` (a file or a folder, relative to `workspace` or absolute):
    /// instruction files in the folders below `workspace` down to it join the prompt. Returns
    /// whether any did.
    pub fn touched(&mut self, workspace: &Path, path: &Path) -> bool {
        let path = workspace.join(path);
        let folder = if path.is_dir() {
            path.as_path()
        } else {
            match path.parent() {
                Some(parent) => parent,
                None => return false,
            }
        };
        let (Ok(folder), Ok(workspace)) = (folder.canonicalize(), workspace.canonicalize()) else {
            return false;
        };
        if !folder.starts_with(&workspace) || folder == workspace {
            return false;
        }
        let mut grew = false;
        let below: Vec<&Path> = folder
            .ancestors()
            .take_while(|dir| *dir != workspace)
            .collect();
        for dir in below.into_iter().rev() {
            if !self.visited.insert(dir.to_path_buf()) {
                continue;
            }
            for name in crate::context::INSTRUCTION_FILES {
                let file = dir.join(name);
                if file.is_file() {
                    self.discovered.push(file);
                    grew = true;
                }
            }
        }
        grew
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_file_follows_xdg_then_home() {
        let some = |s: &str| Some(OsString::from(s));
        assert_eq!(
            user_instructions_in(some("/cfg"), some("/home/me")),
            Some(PathBuf::from("/cfg/crew/AGENTS.md"))
        );
        assert_eq!(
            user_instructions_in(some("relative"), some("/home/me")),
            Some(PathBuf::from("/home/me/.config/crew/AGENTS.md"))
        );
        assert_eq!(
            user_instructions_in(None, some("/home/me")),
            Some(PathBuf::from("/home/me/.config/crew/AGENTS.md"))
        );
        assert_eq!(user_instructions_in(None, None), None);
    }

    #[test]
    fn subfolder_files_join_once_when_the_agent_first_works_there() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        std::fs::write(ws.join("AGENTS.md"), "root").unwrap();
        std::fs::write(ws.join("a/AGENTS.md"), "a").unwrap();
        std::fs::write(ws.join("a/b/CLAUDE.md"), "b").unwrap();
        std::fs::write(ws.join("a/b/x.rs"), "").unwrap();
        let user = ws.join("user.md");
        std::fs::write(&user, "mine").unwrap();
        let mut ins = Instructions::new(Some(user.clone()));
        assert_eq!(ins.files(&ws, &ws), [user.clone(), ws.join("AGENTS.md")]);
        assert!(
            !ins.touched(&ws, Path::new("top.txt")),
            "the root's is there already"
        );
        assert!(ins.touched(&ws, Path::new("a/b/x.rs")));
        assert!(!ins.touched(&ws, Path::new("a/b/x.rs")), "once");
        assert!(
            !ins.touched(&ws, &ws.join("a")),
            "a/ was visited on the way"
        );
        assert_eq!(
            ins.files(&ws, &ws),
            [
                user,
                ws.join("AGENTS.md"),
                ws.join("a/AGENTS.md"),
                ws.join("a/b/CLAUDE.md")
            ]
        );
        assert!(!ins.touched(&ws, Path::new("../elsewhere/x")));
    }
}
