//! Validation of every name and path that comes from outside, done before any path is built.

use std::path::{Component, Path};

use super::error::GitError;

/// Checks a worktree name against the rule for agent names (`[a-z][a-z0-9_-]{0,31}`), so it
/// is safe as a folder name, a branch suffix and a libgit2 worktree id.
pub fn validate_name(name: &str) -> Result<(), GitError> {
    crew_protocol::validate_name("worktree name", name).map_err(|e| GitError::InvalidName {
        name: e.value,
        reason: e.reason,
    })
}

/// Checks that a base branch name is a valid local branch name.
pub fn validate_branch(branch: &str) -> Result<(), GitError> {
    if git2::Reference::is_valid_name(&format!("refs/heads/{branch}")) {
        Ok(())
    } else {
        Err(GitError::InvalidBranch {
            branch: branch.to_string(),
        })
    }
}

/// Checks that a `copy`/`link` entry is a plain relative path that stays inside the checkout,
/// and returns it normalised (`./a//b/` becomes `a/b`), so it also works as an exclude rule.
pub fn normalize_relative(path: &str, what: &'static str) -> Result<String, GitError> {
    let invalid = |reason| GitError::InvalidPath {
        path: path.to_string(),
        what,
        reason,
    };
    if path.is_empty() {
        return Err(invalid("it is empty"));
    }
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) if part == ".git" => {
                return Err(invalid("it must not touch .git"));
            }
            Component::Normal(part) => match part.to_str() {
                Some(part) => parts.push(part),
                None => return Err(invalid("it is not valid UTF-8")),
            },
            Component::CurDir => {}
            Component::ParentDir => return Err(invalid("'..' is not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(invalid("it must be relative to the repository root"));
            }
        }
    }
    if parts.is_empty() {
        return Err(invalid("it names the repository root itself"));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_good_names() {
        for name in [
            "a",
            "alice",
            "bob-2",
            "x_y",
            &format!("a{}", "b".repeat(31)),
        ] {
            assert!(validate_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn refuses_bad_names() {
        let long = format!("a{}", "b".repeat(32));
        for name in [
            "", "Alice", "1abc", "-a", "a/b", "../x", "a b", "a.b", "é", &long,
        ] {
            assert!(
                matches!(validate_name(name), Err(GitError::InvalidName { .. })),
                "{name}"
            );
        }
    }

    #[test]
    fn branch_names() {
        assert!(validate_branch("main").is_ok());
        assert!(validate_branch("feature/x").is_ok());
        assert!(validate_branch("a..b").is_err());
        assert!(validate_branch("").is_err());
    }

    #[test]
    fn relative_paths() {
        assert_eq!(normalize_relative(".env", "copy").unwrap(), ".env");
        assert_eq!(
            normalize_relative("./config//local.toml", "copy").unwrap(),
            "config/local.toml"
        );
        assert_eq!(
            normalize_relative("node_modules/", "link").unwrap(),
            "node_modules"
        );
        for bad in ["", "/etc/passwd", "../x", "a/../../x", ".", ".git/config"] {
            assert!(normalize_relative(bad, "copy").is_err(), "{bad}");
        }
    }
}
