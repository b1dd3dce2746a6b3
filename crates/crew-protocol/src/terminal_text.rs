//! Text from agents (and the files they name) as a terminal may show it: every line crew
//! prints, from the CLI and from a headless team alike, passes agent-written text through here,
//! so it can neither drive the terminal (escape sequences: titles, OSC 52 clipboard writes,
//! screen clears; their 8-bit C1 forms too) nor fake a line of its own (an embedded line break)
//! nor reorder how a line displays (bidirectional overrides).

use std::borrow::Cow;

/// On one line: every control character (line breaks, escape sequences, carriage returns, C1
/// controls) and every bidirectional override is shown escaped.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escaped(text, |_| false)
}

/// Over several lines: as [`one_line`], but line breaks and tabs stay as they are.
pub fn block(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

/// A JSON document for a terminal: JSON escapes the C0 controls itself, but leaves C1 controls
/// and bidirectional overrides raw; they are written as `\uXXXX` escapes, which any JSON reader
/// reads back as the same text (outside strings, JSON is ASCII; its whitespace stays).
pub fn json_for_terminal(json: &str) -> Cow<'_, str> {
    let unsafe_char =
        |c: char| !matches!(c, '\n' | '\t' | '\r') && (c.is_control() || is_bidi_control(c));
    if !json.chars().any(unsafe_char) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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
            one_line("c1 \u{9d}0;title\u{9c}"),
            "c1 \\u{9d}0;title\\u{9c}"
        );
        assert_eq!(
            block("line one\n\tline two\u{7}"),
            "line one\n\tline two\\u{7}"
        );
        // Escaping twice changes nothing: a headless line escaped where it is made prints as is.
        let once = one_line("x\u{1b}]52;c;cHduZWQ=\u{7}\napproved");
        assert_eq!(one_line(&once), once);
    }

    #[test]
    fn json_keeps_its_text_and_loses_its_raw_c1_controls() {
        let text = "osc \u{9d}52;c;cHduZWQ=\u{9c} and \u{202e}bidi";
        let json = serde_json::to_string_pretty(&serde_json::json!({ "text": text })).unwrap();
        let safe = json_for_terminal(&json);
        assert!(
            !safe
                .chars()
                .any(|c| c != '\n' && (c.is_control() || is_bidi_control(c))),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["text"], text);
    }
}
