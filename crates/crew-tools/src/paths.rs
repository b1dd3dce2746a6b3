//! Path normalisation and confinement: every path a tool touches must lie inside one of
//! its allowed roots (the workspace; for reading also the spill directory).

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path {path} is outside the workspace {workspace}")]
    Outside { path: String, workspace: PathBuf },
    #[error("path {path} leaves the workspace through a symbolic link (resolves to {resolved})")]
    SymlinkEscape { path: String, resolved: PathBuf },
}

/// Resolves `.` and `..` without touching the file system; `..` never climbs above the root.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // Popping a root is a no-op, so "/.." stays "/"; a relative path keeps its "..".
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Resolves `raw` against `roots[0]` and checks that the result lies inside one of `roots`,
/// both lexically and after following the symbolic links of its existing prefix.
/// Returns the lexically normalised absolute path.
pub fn resolve_within(roots: &[&Path], raw: &str) -> Result<PathBuf, PathError> {
    let raw_trimmed = raw.trim();
    let Some(base) = roots.first() else {
        return Err(PathError::Empty);
    };
    if raw_trimmed.is_empty() {
        return Err(PathError::Empty);
    }
    let joined = base.join(raw_trimmed);
    let normalized = normalize_lexically(&joined);
    let root = roots
        .iter()
        .map(|r| normalize_lexically(r))
        .find(|r| normalized.starts_with(r));
    let Some(root) = root else {
        return Err(PathError::Outside {
            path: raw.to_string(),
            workspace: base.to_path_buf(),
        });
    };
    let resolved = canonicalize_existing_prefix(&normalized);
    let canonical_root = std::fs::canonicalize(&root).unwrap_or(root);
    if !resolved.starts_with(&canonical_root) {
        return Err(PathError::SymlinkEscape {
            path: raw.to_string(),
            resolved,
        });
    }
    Ok(normalized)
}

/// Canonicalises the longest prefix of `path` that exists and appends the rest unchanged.
/// A dangling symbolic link in the way is followed by hand, since creating a file through it
/// would land wherever it points.
fn canonicalize_existing_prefix(path: &Path) -> PathBuf {
    resolve_links(path, 0)
}

const MAX_LINK_HOPS: usize = 40;

fn resolve_links(path: &Path, hops: usize) -> PathBuf {
    let mut prefix = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(&prefix) {
            let mut out = canonical;
            out.extend(rest.iter().rev());
            return out;
        }
        let parent = prefix.parent().map(Path::to_path_buf);
        let is_link = std::fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink());
        if let (true, Ok(target), Some(parent)) = (is_link, std::fs::read_link(&prefix), &parent)
            && hops < MAX_LINK_HOPS
        {
            let mut next = normalize_lexically(&parent.join(target));
            next.extend(rest.iter().rev());
            return resolve_links(&next, hops + 1);
        }
        match (prefix.file_name().map(|n| n.to_os_string()), parent) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                prefix = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// `path` relative to `root` when it lies inside it, for display and rule matching.
pub fn relative_to(path: &Path, root: &Path) -> Option<PathBuf> {
    path.strip_prefix(normalize_lexically(root))
        .ok()
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalisation() {
        assert_eq!(
            normalize_lexically(Path::new("/a/./b/../c")),
            PathBuf::from("/a/c")
        );
        assert_eq!(normalize_lexically(Path::new("/../x")), PathBuf::from("/x"));
        assert_eq!(
            normalize_lexically(Path::new("a/../../b")),
            PathBuf::from("../b")
        );
    }

    #[test]
    fn traversal_and_absolute_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let roots = [ws.as_path()];
        assert!(matches!(
            resolve_within(&roots, "../x"),
            Err(PathError::Outside { .. })
        ));
        assert!(matches!(
            resolve_within(&roots, "a/../../x"),
            Err(PathError::Outside { .. })
        ));
        assert!(matches!(
            resolve_within(&roots, "/etc/passwd"),
            Err(PathError::Outside { .. })
        ));
        assert!(matches!(resolve_within(&roots, " "), Err(PathError::Empty)));
        assert_eq!(
            resolve_within(&roots, "a/./b/../c").unwrap(),
            ws.join("a/c")
        );
        let inside_abs = ws.join("x.txt");
        assert_eq!(
            resolve_within(&roots, inside_abs.to_str().unwrap()).unwrap(),
            inside_abs
        );
    }

    #[test]
    fn symlink_escape_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
        let roots = [ws.as_path()];
        assert!(matches!(
            resolve_within(&roots, "link/new-file.txt"),
            Err(PathError::SymlinkEscape { .. })
        ));
        std::os::unix::fs::symlink(outside.join("missing.txt"), ws.join("dangling")).unwrap();
        assert!(matches!(
            resolve_within(&roots, "dangling"),
            Err(PathError::SymlinkEscape { .. })
        ));
        std::os::unix::fs::symlink(ws.join("real"), ws.join("inner")).unwrap();
        assert!(resolve_within(&roots, "inner/x").is_ok());
    }

    #[test]
    fn a_second_root_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let spill = dir.path().join(".crew/tool-results");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&spill).unwrap();
        let target = spill.join("t1.txt");
        let roots = [ws.as_path(), spill.as_path()];
        assert_eq!(
            resolve_within(&roots, target.to_str().unwrap()).unwrap(),
            target
        );
        assert!(resolve_within(&roots[..1], target.to_str().unwrap()).is_err());
    }
}
