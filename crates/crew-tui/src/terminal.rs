//! The only code that touches the real terminal: raw mode, the alternate screen, mouse capture,
//! and putting all of it back on exit and on panic.

use std::io::{self, Stdout, Write, stdout};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

pub(crate) type Term = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped, whatever way the screen ends.
pub(crate) struct Session {
    pub terminal: Term,
}

impl Session {
    pub(crate) fn start() -> io::Result<Session> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut out = stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, EnableMouseCapture) {
            restore();
            return Err(e);
        }
        let terminal = Terminal::new(CrosstermBackend::new(out)).inspect_err(|_| restore())?;
        Ok(Session { terminal })
    }

    pub(crate) fn bell(&mut self) {
        // A bell that cannot be rung is not worth stopping for.
        let _ = self.terminal.backend_mut().write_all(b"\x07");
        let _ = self.terminal.backend_mut().flush();
    }

    /// A desktop notification where the terminal supports one: OSC 9 (iTerm2, kitty, WezTerm,
    /// Windows Terminal) and OSC 777 (urxvt, foot, VTE); terminals without them ignore both.
    pub(crate) fn desktop_notify(&mut self, text: &str) {
        let _ = self
            .terminal
            .backend_mut()
            .write_all(desktop_notification(text).as_bytes());
        let _ = self.terminal.backend_mut().flush();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        restore();
    }
}

/// The OSC 9 and OSC 777 sequences for `text`, with control characters and `;` (which would end
/// or split the sequence) replaced: agent-written text never becomes a terminal command.
pub fn desktop_notification(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() || c == ';' { ' ' } else { c })
        .take(200)
        .collect();
    format!("\x1b]9;{clean}\x07\x1b]777;notify;crew;{clean}\x07")
}

/// Leaves raw mode and the alternate screen and shows the cursor. Safe to call twice.
pub(crate) fn restore() {
    // Nothing useful can be done if the terminal is gone; each step is tried regardless.
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), DisableMouseCapture, LeaveAlternateScreen, Show);
}

/// Restores the terminal before the previous panic hook prints, so the message is readable.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
