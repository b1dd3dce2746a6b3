//! The built `crew ui` in a real pseudo-terminal (portable-pty), its screen read back with
//! vt100. Every wait polls the screen or the store with a timeout; nothing sleeps blindly.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

mod common;

use common::Repo;

const TIMEOUT: Duration = Duration::from_secs(20);

struct Screen {
    parser: vt100::Parser,
    bytes: Receiver<Vec<u8>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    raw: Vec<u8>,
}

impl Screen {
    fn start(dir: &Path, args: &[&str], cols: u16, rows: u16) -> Screen {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_crew"));
        cmd.arg("ui");
        cmd.args(args);
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
        }
    }

    fn pump(&mut self, wait: Duration) {
        if let Ok(chunk) = self.bytes.recv_timeout(wait) {
            self.parser.process(&chunk);
            self.raw.extend(chunk);
        }
        while let Ok(chunk) = self.bytes.try_recv() {
            self.parser.process(&chunk);
            self.raw.extend(chunk);
        }
    }

    fn text(&self) -> String {
        self.parser.screen().contents()
    }

    fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.text().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "never showed {needle:?}; screen:\n{}",
                self.text()
            );
            self.pump(Duration::from_millis(50));
        }
    }

    fn keys(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the process to end, reading everything it wrote on the way out.
    fn wait_exit(&mut self) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            self.pump(Duration::from_millis(50));
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "crew ui failed: {}", self.text());
                break;
            }
            assert!(
                Instant::now() < deadline,
                "crew ui did not quit:\n{}",
                self.text()
            );
        }
        self.pump(Duration::from_millis(200));
    }

    fn assert_restored(&self) {
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

fn poll<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn a_request_from_another_process_is_approved_from_the_screen() {
    let repo = Repo::init();
    let mut screen = Screen::start(repo.path(), &[], 120, 40);
    screen.wait_for("approvals (0)");
    let id = repo.ok(&[
        "send",
        "--from",
        "alice",
        "--to",
        "user",
        "--type",
        "permission_request",
        "--request",
        "run the tests",
    ]);
    let id = id.trim().to_string();
    screen.wait_for("alice asks for permission");
    screen.wait_for(&id);
    // Leave the lead's text box, focus approvals, approve.
    screen.keys("\t");
    screen.wait_for("teammates · ? help");
    screen.keys("5");
    screen.wait_for("approvals · ? help");
    screen.keys("a");
    let answer = poll("the answer in alice's inbox", || {
        let json = repo.ok(&["requests", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["request_id"] == id.as_str() && r["state"] == "approved")
            .cloned()
    });
    assert_eq!(answer["answered_by"], "user");
    screen.wait_for("approvals (0)");
    screen.keys("q");
    screen.wait_exit();
    screen.assert_restored();
}

#[test]
fn a_task_added_elsewhere_shows_at_80x24_with_the_vim_keymap() {
    let repo = Repo::init();
    let mut screen = Screen::start(
        repo.path(),
        &["--keymap", "vim", "--theme", "light"],
        80,
        24,
    );
    screen.wait_for("1 lead");
    screen.keys("\t");
    screen.wait_for("teammates · ? help");
    screen.keys("3");
    screen.wait_for("no tasks yet");
    repo.ok(&["task", "add", "write the docs"]);
    screen.wait_for("task_1 write the docs");
    screen.keys("?");
    screen.wait_for("go to the top");
    screen.keys("?");
    screen.wait_for("tasks · ? help");
    screen.keys("\u{3}");
    screen.wait_exit();
    screen.assert_restored();
}
