//! Printing: one JSON document for `--json`, plain lines otherwise.

use serde::Serialize;

use crew_protocol::terminal_text::json_for_terminal;
pub use crew_protocol::terminal_text::{block, one_line};

pub fn json<T: Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    println!(
        "{}",
        json_for_terminal(&serde_json::to_string_pretty(value)?)
    );
    Ok(())
}

/// One JSON object on one line (`--json` progress lines).
pub fn json_line(value: &serde_json::Value) -> String {
    json_for_terminal(&value.to_string()).into_owned()
}

/// Seconds as a short age: `42s`, `3m`, `5h`, `2d`.
pub fn age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}
