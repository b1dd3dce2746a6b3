//! Writing a file the kernel resolves beneath the workspace. The write and edit tools run
//! outside the sandbox, so no lexical check may decide where a write lands: a link such as
//! `w -> x/y/z/d/../../.tasks/task_77.json` with `d -> <repo>/.crew/agents` resolves one way
//! as text and another in the kernel. Every component is resolved by `openat2` from the
//! workspace's directory with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (no absolute link, no
//! `..` above it, no `/proc/self/fd` link), or, where the kernel lacks `openat2` (before 5.6),
//! by a walk that follows no symbolic link at all. The file opened is then checked against
//! crew's protected paths by its real path, before a byte of it changes.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crew_sandbox::policy::is_protected;

/// Why a write was not done.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    #[error(
        "{0} resolves outside the workspace (the kernel refused it: a link in it leaves the \
         workspace); nothing was written"
    )]
    Escapes(PathBuf),
    #[error("{0} is protected: .git and crew's own files are changed only by crew, not by tools")]
    Protected(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Writes `bytes` to `path` (absolute, lexically inside `root`), creating its missing folders.
pub fn write_beneath(root: &Path, path: &Path, bytes: &[u8]) -> Result<(), BeneathError> {
    let io = |source: std::io::Error| BeneathError::Io {
        path: path.to_path_buf(),
        source,
    };
    let relative = path
        .strip_prefix(root)
        .map_err(|_| BeneathError::Escapes(path.to_path_buf()))?;
    let names: Vec<&std::ffi::OsStr> = relative
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(BeneathError::Escapes(path.to_path_buf())),
        })
        .collect::<Result<_, _>>()?;
    let Some((file, folders)) = names.split_last() else {
        return Err(BeneathError::Escapes(path.to_path_buf()));
    };
    let top = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io(e.into()))?;
    let refused = |e: Errno| match e {
        Errno::XDEV | Errno::LOOP | Errno::NOTDIR => BeneathError::Escapes(path.to_path_buf()),
        other => io(other.into()),
    };
    let walk = Walk::choose(&top);
    // Each folder: resolved beneath the root, made inside its resolved parent when missing.
    let mut parent = rustix::io::dup(&top).map_err(|e| io(e.into()))?;
    let mut prefix = PathBuf::new();
    for name in folders {
        prefix.push(name);
        let folder_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        parent = match walk.open(&top, &parent, &prefix, name, folder_flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(&parent, *name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(refused(e)),
                }
                walk.open(&top, &parent, &prefix, name, folder_flags, Mode::empty())
                    .map_err(refused)?
            }
            Err(e) => return Err(refused(e)),
        };
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC;
    let fd = walk
        .open(
            &top,
            &parent,
            relative,
            file,
            flags,
            Mode::from_raw_mode(0o666),
        )
        .map_err(refused)?;
    // A link inside the workspace may still name `.git` or crew's files there.
    let real = std::fs::read_link(format!("/proc/self/fd/{}", raw(&fd))).map_err(io)?;
    let real_root = root.canonicalize().map_err(io)?;
    if is_protected(&real_root, &real) {
        return Err(BeneathError::Protected(path.to_path_buf()));
    }
    rustix::fs::ftruncate(&fd, 0).map_err(|e| io(e.into()))?;
    std::fs::File::from(fd).write_all(bytes).map_err(io)
}

fn raw(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd;
    fd.as_fd().as_raw_fd()
}

/// How components are resolved: by `openat2` from the root, or (no `openat2`) one at a time
/// from the parent, following no link.
#[derive(Clone, Copy)]
enum Walk {
    Beneath,
    NoFollow,
}

impl Walk {
    fn choose(top: &OwnedFd) -> Walk {
        match rustix::fs::openat2(
            top,
            ".",
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH,
        ) {
            Err(Errno::NOSYS) => Walk::NoFollow,
            _ => Walk::Beneath,
        }
    }

    /// Opens `prefix` (relative to `top`), whose last component `name` is in `parent`.
    fn open(
        self,
        top: &OwnedFd,
        parent: &OwnedFd,
        prefix: &Path,
        name: &std::ffi::OsStr,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, Errno> {
        match self {
            Walk::Beneath => rustix::fs::openat2(
                top,
                prefix,
                flags,
                mode,
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            ),
            Walk::NoFollow => rustix::fs::openat(parent, name, flags | OFlags::NOFOLLOW, mode),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_that_leave_the_root_are_refused_by_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("wt");
        let store = base.join("store");
        std::fs::create_dir_all(root.join("x/y/z")).unwrap();
        std::fs::create_dir_all(store.join("agents")).unwrap();
        std::fs::create_dir_all(store.join(".tasks")).unwrap();
        symlink(store.join("agents"), root.join("x/y/z/d")).unwrap();
        symlink("x/y/z/d/../../.tasks/task_77.json", root.join("w")).unwrap();
        let err = write_beneath(&root, &root.join("w"), b"{}").unwrap_err();
        assert!(matches!(err, BeneathError::Escapes(_)), "{err}");
        assert!(!store.join(".tasks/task_77.json").exists());
        // A link whose folder is made on the way: refused as well.
        symlink(&store, root.join("out")).unwrap();
        let err = write_beneath(&root, &root.join("out/new/f"), b"x").unwrap_err();
        assert!(matches!(err, BeneathError::Escapes(_)), "{err}");
        assert!(!store.join("new").exists());
        // /proc/self/fd links are magic links.
        let proc_link = root.join("p");
        symlink("/proc/self/fd/1", &proc_link).unwrap();
        assert!(write_beneath(&root, &proc_link, b"x").is_err());
        // Inside, links and new folders work.
        symlink("x/y", root.join("inner")).unwrap();
        write_beneath(&root, &root.join("inner/new/f.txt"), b"hi").unwrap();
        assert_eq!(std::fs::read(root.join("x/y/new/f.txt")).unwrap(), b"hi");
        // A link to crew's files inside the root is refused before the file changes.
        std::fs::write(root.join("crew.toml"), "keep").unwrap();
        symlink("crew.toml", root.join("c")).unwrap();
        let err = write_beneath(&root, &root.join("c"), b"x").unwrap_err();
        assert!(matches!(err, BeneathError::Protected(_)), "{err}");
        assert_eq!(std::fs::read(root.join("crew.toml")).unwrap(), b"keep");
    }
}
