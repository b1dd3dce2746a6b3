//! The child side of the sandbox, run by `crew sandbox-exec` in a fresh single-threaded process
//! before the command: the approach of Codex CLI's `linux-sandbox`, in this order:
//!
//! 0. every inherited descriptor above stderr is closed (`close_range`);
//! 1. new user + mount + PID + IPC namespaces (`unshare`), our uid/gid mapped to themselves
//!    (the IPC namespace hides the host's SysV shared memory, semaphores and queues);
//! 2. read-only bind mounts over the policy's protected paths (mounts and Landlock intersect:
//!    a read-only mount refuses writes Landlock would allow);
//! 3. fork: the child is PID 1 of the new PID namespace and mounts its own `/proc`, so no crew
//!    process (and no key-holding environment) is visible;
//! 4. Landlock: read and execute everywhere, write only below the writable roots; signals and
//!    abstract Unix sockets scoped to the sandbox where the kernel offers it;
//! 5. seccomp, always: no socket of any family but `AF_INET`/`AF_INET6`, and those only when
//!    the policy allows the network (Unix sockets never: only `socketpair`), no io_uring (it
//!    can open sockets too);
//! 6. fork again: PID 1 reaps, its child sets the resource limits, drops every capability and
//!    execs the command. When the command ends PID 1 exits, and the kernel ends whatever the
//!    command left behind.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use serde::{Deserialize, Serialize};

use super::policy::{ResourceLimits, SandboxPolicy};

/// The oldest Landlock ABI crew accepts: ABI 3 is the first that also refuses `truncate` outside
/// the writable roots.
pub const MIN_LANDLOCK_ABI: i32 = 3;

/// One piece of the confinement, named in every report of what is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Piece {
    UserNamespace,
    MountNamespace,
    PidNamespace,
    Landlock,
    Seccomp,
    /// The `crew sandbox-exec` helper itself could not be started.
    Helper,
}

impl std::fmt::Display for Piece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Piece::UserNamespace => "user namespaces",
            Piece::MountNamespace => "mount namespaces (read-only bind mounts)",
            Piece::PidNamespace => "PID namespaces (a private /proc)",
            Piece::Landlock => "Landlock (ABI 3 or newer)",
            Piece::Seccomp => "seccomp",
            Piece::Helper => "the crew sandbox-exec helper",
        })
    }
}

/// A piece of the confinement that could not be set up; the command never runs then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{piece} unavailable: {detail}")]
pub struct ConfineError {
    pub piece: Piece,
    pub detail: String,
}

impl ConfineError {
    fn new(piece: Piece, detail: impl std::fmt::Display) -> Self {
        ConfineError {
            piece,
            detail: detail.to_string(),
        }
    }

    fn os(piece: Piece, what: &str) -> Self {
        Self::new(piece, format!("{what}: {}", io::Error::last_os_error()))
    }
}

/// What `crew sandbox-exec` does once confined.
pub enum Run<'a> {
    /// Exec this command line.
    Command(&'a [String]),
    /// Set everything up, run nothing: whether the kernel offers every piece.
    Probe,
}

/// How the process that called [`confine_and_run`] should end.
#[derive(Debug)]
pub enum Finished {
    /// With this exit code (the command's; 128 + signal when a signal ended it).
    Exit(i32),
    /// A probe found every piece in place (said by the confined child).
    Probed,
    /// The command could not be started (not found, not executable): exit 127.
    NotStarted(io::Error),
}

/// The Landlock ABI the running kernel offers (0: none).
pub fn landlock_abi() -> i32 {
    // SAFETY: landlock_create_ruleset with a null attribute and the VERSION flag only queries.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
}

/// Confines this process as `policy` says and runs `run`. Must be called while the process
/// is single-threaded (namespaces and `fork` need that). Returns in the outer process with the
/// command's exit code, or in the confined child when something failed before the command ran.
pub fn confine_and_run(policy: &SandboxPolicy, run: Run<'_>) -> Result<Finished, ConfineError> {
    // Nothing here needs a descriptor above stderr: whatever is open was inherited.
    close_inherited();
    // SAFETY: plain libc calls on a single-threaded process; see each step.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(ConfineError::os(Piece::UserNamespace, "unshare"));
    }
    map_ids(uid, gid)?;
    let root = c"/";
    // Our mounts must not leak back into the parent's namespace.
    // SAFETY: pointers are valid NUL-terminated strings or null where the call allows it.
    if unsafe {
        libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    } != 0
    {
        return Err(ConfineError::os(Piece::MountNamespace, "make / private"));
    }
    for path in &policy.read_only {
        bind_read_only(path).map_err(|e| {
            ConfineError::new(Piece::MountNamespace, format!("{}: {e}", path.display()))
        })?;
    }
    for path in &policy.hidden {
        hide(path).map_err(|e| {
            ConfineError::new(Piece::MountNamespace, format!("{}: {e}", path.display()))
        })?;
    }
    // SAFETY: single-threaded, so the child is a faithful copy.
    match unsafe { libc::fork() } {
        -1 => Err(ConfineError::os(Piece::PidNamespace, "fork")),
        0 => init(policy, run),
        child => Ok(Finished::Exit(wait_until(child, child))),
    }
}

/// PID 1 of the new namespace: its own `/proc`, Landlock and seccomp, then the command.
fn init(policy: &SandboxPolicy, run: Run<'_>) -> Result<Finished, ConfineError> {
    // SAFETY: prctl and mount with valid arguments.
    unsafe {
        // Ends with the outer process (killed on timeout or cancellation).
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(ConfineError::os(Piece::PidNamespace, "mount /proc"));
        }
    }
    restrict_files(policy).map_err(|e| ConfineError::new(Piece::Landlock, e))?;
    filter_sockets(policy.network).map_err(|e| ConfineError::new(Piece::Seccomp, e))?;
    let argv = match run {
        Run::Probe => return Ok(Finished::Probed),
        Run::Command(argv) => argv,
    };
    let Some((program, args)) = argv.split_first() else {
        return Ok(Finished::NotStarted(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no command given",
        )));
    };
    // SAFETY: still single-threaded.
    match unsafe { libc::fork() } {
        -1 => Err(ConfineError::os(Piece::PidNamespace, "fork")),
        0 => {
            if let Err(e) = set_limits(&policy.limits) {
                return Ok(Finished::NotStarted(e));
            }
            drop_capabilities();
            Ok(Finished::NotStarted(
                std::process::Command::new(program).args(args).exec(),
            ))
        }
        command => Ok(Finished::Exit(wait_until(-1, command))),
    }
}

fn map_ids(uid: libc::uid_t, gid: libc::gid_t) -> Result<(), ConfineError> {
    let write = |file: &str, text: String| {
        std::fs::write(file, text)
            .map_err(|e| ConfineError::new(Piece::UserNamespace, format!("{file}: {e}")))
    };
    // Needed before gid_map can be written without CAP_SETGID in the parent namespace.
    if Path::new("/proc/self/setgroups").exists() {
        write("/proc/self/setgroups", "deny".into())?;
    }
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// Mounts something empty over `path`: an empty read-only tmpfs over a folder, `/dev/null`
/// over a file (reads as empty, writes vanish).
fn hide(path: &Path) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: valid NUL-terminated strings or null where the call allows it.
    let mounted = unsafe {
        if path.is_dir() {
            libc::mount(
                c"tmpfs".as_ptr(),
                c_path.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                c"size=0".as_ptr().cast(),
            )
        } else {
            libc::mount(
                c"/dev/null".as_ptr(),
                c_path.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            )
        }
    };
    if mounted != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Bind-mounts `path` over itself, then remounts it read-only, keeping the flags the kernel
/// locks for a less privileged namespace (nosuid, nodev, noexec, atime) or the remount fails.
fn bind_read_only(path: &Path) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: valid NUL-terminated paths; `stat` is written by statvfs before it is read.
    unsafe {
        if libc::mount(
            c_path.as_ptr(),
            c_path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut stat) != 0 {
            return Err(io::Error::last_os_error());
        }
        let locked = [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
            (libc::ST_NOATIME, libc::MS_NOATIME),
            (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
            (libc::ST_RELATIME, libc::MS_RELATIME),
        ]
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms);
        if libc::mount(
            std::ptr::null(),
            c_path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked,
            std::ptr::null(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Devices a command may write to wherever it runs.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

fn restrict_files(policy: &SandboxPolicy) -> Result<(), String> {
    let kernel = landlock_abi();
    if kernel < MIN_LANDLOCK_ABI {
        return Err(format!(
            "the kernel offers Landlock ABI {kernel}, crew needs {MIN_LANDLOCK_ABI}"
        ));
    }
    // The rights crew knows how to grant; newer kernels enforce all of them.
    let abi = ABI::V5;
    let all = AccessFs::from_all(abi);
    let fail = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default().handle_access(all).map_err(fail)?;
    if kernel >= 6 {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6)).map_err(fail)?;
    }
    let path_fd = |path: &Path| PathFd::new(path).map_err(|e| format!("{}: {e}", path.display()));
    let mut created = ruleset
        .create()
        .map_err(fail)?
        .add_rule(PathBeneath::new(
            path_fd(Path::new("/"))?,
            AccessFs::from_read(abi),
        ))
        .map_err(fail)?;
    for root in &policy.writable {
        created = created
            .add_rule(PathBeneath::new(path_fd(root)?, all))
            .map_err(fail)?;
    }
    for device in DEVICES.iter().map(Path::new).filter(|d| d.exists()) {
        created = created
            .add_rule(PathBeneath::new(path_fd(device)?, AccessFs::from_file(abi)))
            .map_err(fail)?;
    }
    let status = created.restrict_self().map_err(fail)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel did not enforce the ruleset".into());
    }
    Ok(())
}

fn filter_sockets(network: bool) -> Result<(), String> {
    let fail = |e: seccompiler::BackendError| e.to_string();
    // A Unix socket (abstract ones too) reaches servers outside the sandbox (tmux, docker,
    // D-Bus, ssh-agent, crew's own daemon) that act for the command unconfined, so no family
    // but the Internet ones is ever allowed, and those only with the network. socketpair stays
    // allowed: it connects only this process's own ends.
    // An empty rule list matches the call whatever its arguments; the conditions of one rule
    // must all hold.
    let socket_rule = if network {
        let not = |family: i32| {
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                u64::from(family.unsigned_abs()),
            )
        };
        let rule = SeccompRule::new(vec![
            not(libc::AF_INET).map_err(fail)?,
            not(libc::AF_INET6).map_err(fail)?,
        ])
        .map_err(fail)?;
        vec![rule]
    } else {
        Vec::new()
    };
    let rules: BTreeMap<i64, Vec<SeccompRule>> = [
        (libc::SYS_socket, socket_rule),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]
    .into_iter()
    .collect();
    let arch = std::env::consts::ARCH.try_into().map_err(fail)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(fail)?;
    let program: BpfProgram = filter.try_into().map_err(fail)?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

/// Sets the policy's resource limits (soft and hard: the command cannot raise them again).
fn set_limits(limits: &ResourceLimits) -> io::Result<()> {
    for (resource, value) in [
        (libc::RLIMIT_NPROC, limits.processes),
        (libc::RLIMIT_AS, limits.memory_bytes),
        (libc::RLIMIT_FSIZE, limits.file_bytes),
    ] {
        let Some(value) = value else { continue };
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: setrlimit reads a valid rlimit.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Closes every descriptor above stderr, so nothing crew (or whoever started crew) left open
/// reaches the command, nor this helper's processes it could reach through `/proc`:
/// `close_range`, or where the kernel lacks it (before 5.11) each descriptor listed in
/// `/proc/self/fd`.
fn close_inherited() {
    // SAFETY: close_range only closes descriptors, none of which this process uses.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) } == 0;
    if closed {
        return;
    }
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: closing a descriptor number; the listing's own, already closed, fails with
        // EBADF, harmlessly.
        unsafe {
            libc::close(fd);
        }
    }
}

/// Empties the bounding and ambient sets, so the command (uid 0 in the namespace when crew runs
/// as root) holds no capability after exec, not even over its own namespaces.
fn drop_capabilities() {
    // SAFETY: prctl with integer arguments; an unknown capability number fails with EINVAL.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
    }
}

/// Waits (for `which`: a pid, or -1 for any child) until `target` ends, retrying on EINTR
/// and reaping whatever else ends meanwhile (PID 1 inherits every orphan); returns its exit
/// code, or 128 + the signal that ended it.
fn wait_until(which: libc::pid_t, target: libc::pid_t) -> i32 {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a valid int.
        let waited = unsafe { libc::waitpid(which, &mut status, 0) };
        if waited == target {
            return exit_code(status);
        }
        if waited == -1 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return 126;
        }
    }
}

fn exit_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}
