//! A new repository with a first commit: how the demo gets a project to work on.

use std::path::Path;

use crate::error::{Context, io_error};
use crate::{Author, GitError};

/// Creates a git repository at `dir` on `branch` whose first commit holds `files`
/// (relative path, content), committed by `author`.
pub fn init_with_files(
    dir: &Path,
    branch: &str,
    files: &[(&str, &str)],
    author: &Author,
    message: &str,
) -> Result<(), GitError> {
    let mut opts = git2::RepositoryInitOptions::new();
    opts.initial_head(branch);
    let repo = git2::Repository::init_opts(dir, &opts)
        .context(|| format!("creating a repository in {}", dir.display()))?;
    for (rel, content) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        std::fs::write(&path, content).map_err(io_error(&path))?;
    }
    let mut index = repo.index().context(|| "opening the index".into())?;
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .context(|| "adding the files".into())?;
    index.write().context(|| "writing the index".into())?;
    let tree_id = index.write_tree().context(|| "writing the tree".into())?;
    let tree = repo
        .find_tree(tree_id)
        .context(|| "reading the tree".into())?;
    let sig = author.signature()?;
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[])
        .context(|| format!("committing in {}", dir.display()))?;
    Ok(())
}
