//! Printing: one JSON document for `--json`, plain lines otherwise.

use std::borrow::Cow;

use serde::Serialize;

pub fn json<T: Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
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

/// Stored text for a terminal, on one line: every control character (line breaks, escape
/// sequences, carriage returns) and every bidirectional override is shown escaped, so text an
/// agent wrote can neither drive the terminal nor fake a line of its own.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escaped(text, |_| false)
}

/// Stored text for a terminal, over several lines: as [`one_line`], but line breaks and tabs
/// stay as they are.
pub fn block(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

fn escaped(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| !keep(c) && (c.is_control() || is_bidi_control(c));
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Characters that reorder how a line displays (the "Trojan Source" set).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(one_line("plain — ünïcode"), "plain — ünïcode");
        assert_eq!(
            one_line("red\u{1b}[31m\nfake ✓ task_9"),
            "red\\u{1b}[31m\\nfake ✓ task_9"
        );
        assert_eq!(one_line("a\u{202E}b\r"), "a\\u{202e}b\\r");
        assert_eq!(
            block("line one\n\tline two\u{7}"),
            "line one\n\tline two\\u{7}"
        );
    }
}
