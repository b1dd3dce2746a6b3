//! Tool processes outliving the agent that started them. Every process a tool starts carries
//! `CREW_TOOL_OWNER=<pid>:<start time>` naming this process instance (a reused pid has another
//! start time), and its descendants inherit it. A worker killed with SIGKILL cannot clean up
//! after itself; whoever notices the death calls `kill_orphans`, which ends every process whose
//! owner instance is gone. Linux only (it reads `/proc`); elsewhere it finds nothing.

use std::sync::OnceLock;

pub const OWNER_ENV: &str = "CREW_TOOL_OWNER";

/// This process's tag, for the environment of the processes its tools start.
pub fn owner_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let pid = std::process::id();
        format!("{pid}:{}", start_time(pid).unwrap_or(0))
    })
}

/// When `pid` started (clock ticks since boot), if it runs and is not a zombie.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields count from after it.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// Whether the process instance a tag names is still there.
fn owner_alive(tag: &str) -> bool {
    let Some((pid, start)) = tag.split_once(':') else {
        return true; // Not ours to judge.
    };
    match (pid.parse::<u32>(), start.parse::<u64>()) {
        (Ok(pid), Ok(start)) => start_time(pid) == Some(start),
        _ => true,
    }
}

/// Kills (SIGKILL) every process that carries an owner tag whose owner is gone; returns their
/// pids. Processes of other users cannot be read and are left alone.
pub fn kill_orphans() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut killed = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let tag = environ.split(|b| *b == 0).find_map(|var| {
            let var = std::str::from_utf8(var).ok()?;
            var.strip_prefix(OWNER_ENV)?.strip_prefix('=')
        });
        if let Some(tag) = tag
            && !owner_alive(tag)
            && let Ok(raw) = libc::pid_t::try_from(pid)
        {
            // SAFETY: a plain signal to a process whose environment says a dead crew agent
            // started it.
            unsafe { libc::kill(raw, libc::SIGKILL) };
            killed.push(pid);
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_a_live_owner_and_a_dead_or_reused_pid_is_not() {
        assert!(owner_alive(owner_tag()));
        let (pid, start) = owner_tag().split_once(':').unwrap();
        let later: u64 = start.parse::<u64>().unwrap() + 1;
        assert!(!owner_alive(&format!("{pid}:{later}")), "pid reused later");
        assert!(!owner_alive(&format!("{}:1", u32::MAX - 1)), "no such pid");
        assert!(owner_alive("garbage"), "a tag we cannot read is left alone");
    }

    #[test]
    fn an_orphaned_tool_process_is_killed_and_a_live_owners_is_not() {
        let spawn = |tag: &str| {
            std::process::Command::new("sleep")
                .arg("30")
                .env(OWNER_ENV, tag)
                .spawn()
                .unwrap()
        };
        let mut orphan = spawn(&format!("{}:1", u32::MAX - 1));
        let mut kept = spawn(owner_tag());
        // The tag shows in /proc/<pid>/environ once the child has exec'ed.
        let tagged = |pid: u32| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|e| {
                e.windows(OWNER_ENV.len())
                    .any(|w| w == OWNER_ENV.as_bytes())
            })
        };
        for _ in 0..500 {
            if tagged(orphan.id()) && tagged(kept.id()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let killed = kill_orphans();
        assert!(killed.contains(&orphan.id()), "{killed:?}");
        assert!(!killed.contains(&kept.id()));
        assert!(orphan.wait().unwrap().code().is_none(), "ended by a signal");
        assert!(kept.try_wait().unwrap().is_none(), "still running");
        kept.kill().unwrap();
        kept.wait().unwrap();
    }
}
