//! The built `crew` in a real pseudo-terminal (portable-pty), its screen read back with vt100.
//! Every wait polls the screen through the one wait helper; nothing sleeps blindly.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError, channel};
use std::time::Duration;

use crew_test_support::wait;
use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

pub const TIMEOUT: Duration = wait::BUDGET;

pub struct Screen {
    parser: vt100::Parser,
    bytes: Receiver<Vec<u8>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    raw: Vec<u8>,
    /// The terminal closed (the process and everything it started are gone) and all it was
    /// sent has been read.
    closed: bool,
}

impl Screen {
    /// Runs `crew ARGS` in `dir` on a `cols`×`rows` terminal.
    pub fn start(dir: &Path, args: &[&str], cols: u16, rows: u16) -> Screen {
        Self::start_with_env(dir, args, &[], cols, rows)
    }

    /// As [`Screen::start`], with these variables set.
    pub fn start_with_env(
        dir: &Path,
        args: &[&str],
        env: &[(&str, &Path)],
        cols: u16,
        rows: u16,
    ) -> Screen {
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_crew"));
        cmd.args(args);
        for (name, value) in env {
            cmd.env(name, value);
        }
        Self::spawn(cmd, dir, cols, rows)
    }

    /// Runs `program ARGS` (which runs the built `crew` its own way: inside a private network
    /// namespace, say) in `dir` on a `cols`×`rows` terminal, with these variables set.
    pub fn start_program(
        dir: &Path,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        cols: u16,
        rows: u16,
    ) -> Screen {
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        for (name, value) in env {
            cmd.env(name, value);
        }
        Self::spawn(cmd, dir, cols, rows)
    }

    fn spawn(mut cmd: CommandBuilder, dir: &Path, cols: u16, rows: u16) -> Screen {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        cmd.cwd(dir);
        cmd.env("TERM", "xterm-256color");
        cmd.env("XDG_CONFIG_HOME", dir.join(".no-config"));
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let (tx, bytes) = channel();
        std::thread::spawn(move || {
            // Keeps the master alive as long as the child may write.
            let _master = pair.master;
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Screen {
            parser: vt100::Parser::new(rows, cols, 0),
            bytes,
            writer,
            child,
            raw: Vec::new(),
            closed: false,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.process_id().unwrap()
    }

    /// Whether the process has ended (reaping it if so).
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// As a closed terminal or a dropped ssh session does: SIGHUP to the screen's process, and
    /// waits for it to end.
    pub fn hang_up(&mut self) {
        // SAFETY: a plain signal to the process this test started.
        unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGHUP) };
        wait::eventually_showing("the screen to end on SIGHUP", TIMEOUT, || {
            self.pump(Duration::ZERO);
            if self.exited() {
                Ok(())
            } else {
                Err(self.text())
            }
        });
    }

    /// Reads what the terminal shows within `wait`, and whatever else has arrived.
    pub fn pump(&mut self, wait: Duration) {
        let mut next = self
            .bytes
            .recv_timeout(wait)
            .map_err(|e| e == RecvTimeoutError::Disconnected);
        loop {
            match next {
                Ok(chunk) => {
                    self.parser.process(&chunk);
                    self.raw.extend(chunk);
                }
                Err(closed) => {
                    self.closed |= closed;
                    return;
                }
            }
            next = self
                .bytes
                .try_recv()
                .map_err(|e| e == TryRecvError::Disconnected);
        }
    }

    pub fn text(&self) -> String {
        self.parser.screen().contents()
    }

    /// Polls until `done` holds for the screen's text; fails with the screen after `timeout`.
    pub fn wait_until(&mut self, what: &str, timeout: Duration, done: impl Fn(&str) -> bool) {
        wait::eventually_showing(what, timeout, || {
            self.pump(Duration::ZERO);
            let text = self.text();
            if done(&text) { Ok(()) } else { Err(text) }
        });
    }

    pub fn wait_for(&mut self, needle: &str) {
        self.wait_until(&format!("{needle:?}"), TIMEOUT, |t| t.contains(needle));
    }

    pub fn keys(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the process to end, then for the terminal to close: everything it wrote on
    /// the way out has been read by then.
    pub fn wait_exit(&mut self) {
        let status = wait::eventually_showing("crew to quit", TIMEOUT, || {
            self.pump(Duration::ZERO);
            match self.child.try_wait().unwrap() {
                Some(status) => Ok(status),
                None => Err(self.text()),
            }
        });
        assert!(status.success(), "crew failed: {}", self.text());
        wait::eventually_showing("the terminal to close", TIMEOUT, || {
            self.pump(Duration::ZERO);
            if self.closed {
                Ok(())
            } else {
                Err(self.text())
            }
        });
    }

    pub fn assert_restored(&self) {
        let screen = self.parser.screen();
        assert!(!screen.alternate_screen(), "left the alternate screen");
        assert!(!screen.hide_cursor(), "cursor shown again");
        let raw = String::from_utf8_lossy(&self.raw);
        assert!(
            raw.contains("\u{1b}[?1049l"),
            "alternate screen left explicitly"
        );
    }
}

/// Ends the team daemon of the repository at `root` (and its whole process group: the workers
/// it started) when the test ends, however it ends: CI runs many tests at once, and a daemon
/// left behind would run on.
pub struct DaemonGuard {
    pub root: std::path::PathBuf,
}

impl DaemonGuard {
    /// The pid in `.crew/daemon.json`, while the file is there.
    pub fn pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.root.join(".crew/daemon.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v["pid"].as_u64().and_then(|p| u32::try_from(p).ok())
    }
}

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            // SAFETY: plain signals to the daemon this test started and its process group.
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}
