//! Server-sent events parser, fed raw bytes in whatever pieces the network delivers.
//!
//! Follows the WHATWG event-stream rules that model APIs rely on: lines end in `\n`, `\r\n` or
//! `\r`; a line starting with `:` is a comment; `data:` lines of one event join with `\n`; a blank
//! line dispatches the event; an event cut off by the end of the stream is discarded. Bytes are
//! buffered until a whole line arrives, so a split inside a UTF-8 character is harmless.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental parser: `push` bytes, collect complete events.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes and returns every event they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some((line_end, next)) = find_line_end(&self.pending[start..]) {
            let line = String::from_utf8_lossy(&self.pending[start..start + line_end]).into_owned();
            start += next;
            if let Some(event) = self.take_line(&line) {
                events.push(event);
            }
        }
        self.pending.drain(..start);
        events
    }

    /// Ends the stream. Returns true when it stopped in the middle of an event (which is
    /// discarded, as the rules require).
    pub fn finish(&mut self) -> bool {
        let cut_off = !self.pending.is_empty() || self.data.is_some() || self.event.is_some();
        *self = Self::default();
        cut_off
    }

    fn take_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let event = self.event.take();
            // An event without data is not dispatched.
            return self.data.take().map(|data| SseEvent { event, data });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            // `id`, `retry` and unknown fields carry nothing the model APIs need.
            _ => {}
        }
        None
    }
}

/// Finds the first line terminator: `(length of the line, offset after the terminator)`.
/// A `\r` as the last buffered byte waits for the next read, since a `\n` may follow it.
fn find_line_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let pos = bytes.iter().position(|&b| b == b'\n' || b == b'\r')?;
    if bytes[pos] == b'\n' {
        return Some((pos, pos + 1));
    }
    match bytes.get(pos + 1) {
        Some(b'\n') => Some((pos, pos + 2)),
        Some(_) => Some((pos, pos + 1)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    fn parse_all(input: &[u8]) -> Vec<SseEvent> {
        SseParser::new().push(input)
    }

    #[test]
    fn event_and_data_lines_make_an_event() {
        let events = parse_all(b"event: ping\ndata: {\"a\":1}\n\ndata:x\n\n");
        assert_eq!(events, vec![ev(Some("ping"), "{\"a\":1}"), ev(None, "x")]);
    }

    #[test]
    fn crlf_line_endings_are_accepted() {
        let events = parse_all(b"event: a\r\ndata: one\r\n\r\ndata: two\r\n\r\n");
        assert_eq!(events, vec![ev(Some("a"), "one"), ev(None, "two")]);
    }

    #[test]
    fn lone_cr_ends_a_line_but_waits_for_a_possible_lf() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"data: a\r").is_empty());
        assert!(parser.push(b"\n\r").is_empty());
        assert_eq!(parser.push(b"\n"), vec![ev(None, "a")]);
        assert_eq!(parse_all(b"data: b\r\rdata: c\r"), vec![ev(None, "b")]);
    }

    #[test]
    fn comment_lines_are_skipped() {
        let events = parse_all(b": keep-alive\ndata: x\n: inside\n\n:\n\n");
        assert_eq!(events, vec![ev(None, "x")]);
    }

    #[test]
    fn data_split_at_every_byte_including_inside_utf8() {
        let input = "data: héllo → ✓\n\n".as_bytes();
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for byte in input {
            events.extend(parser.push(std::slice::from_ref(byte)));
        }
        assert_eq!(events, vec![ev(None, "héllo → ✓")]);
    }

    #[test]
    fn several_data_lines_join_with_newline() {
        let events = parse_all(b"data: one\ndata:two\ndata\ndata:  three\n\n");
        assert_eq!(events, vec![ev(None, "one\ntwo\n\n three")]);
    }

    #[test]
    fn stream_ending_mid_event_discards_it_and_reports_the_cut() {
        let mut parser = SseParser::new();
        assert_eq!(
            parser.push(b"data: done\n\ndata: partial\n"),
            vec![ev(None, "done")]
        );
        assert!(parser.finish());
        let mut clean = SseParser::new();
        clean.push(b"data: x\n\n");
        assert!(!clean.finish());
        let mut mid_line = SseParser::new();
        assert!(mid_line.push(b"data: par").is_empty());
        assert!(mid_line.finish());
    }

    #[test]
    fn blank_line_without_data_dispatches_nothing() {
        assert!(parse_all(b"event: lonely\n\n\n").is_empty());
    }

    /// A valid stream: events with optional names and data lines (possibly multi-byte),
    /// with comments and a choice of line ending.
    fn stream_strategy() -> impl Strategy<Value = (Vec<u8>, Vec<SseEvent>)> {
        let line = "[a-zé✓{}\":, ]{0,12}";
        let event = (
            proptest::option::of("[a-z_]{1,10}"),
            proptest::collection::vec(line, 1..4),
            any::<bool>(),
            any::<bool>(),
        );
        proptest::collection::vec(event, 0..8).prop_map(|events| {
            let mut bytes = Vec::new();
            let mut expected = Vec::new();
            for (name, lines, crlf, comment) in events {
                let eol = if crlf { "\r\n" } else { "\n" };
                if comment {
                    bytes.extend(format!(": note{eol}").as_bytes());
                }
                if let Some(name) = &name {
                    bytes.extend(format!("event: {name}{eol}").as_bytes());
                }
                for line in &lines {
                    bytes.extend(format!("data: {line}{eol}").as_bytes());
                }
                bytes.extend(eol.as_bytes());
                expected.push(SseEvent {
                    event: name,
                    data: lines.join("\n"),
                });
            }
            (bytes, expected)
        })
    }

    proptest! {
        #[test]
        fn any_rechunking_yields_the_same_events(
            (bytes, expected) in stream_strategy(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..10),
        ) {
            let mut positions: Vec<usize> =
                cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
            positions.sort_unstable();
            let mut parser = SseParser::new();
            let mut events = Vec::new();
            let mut from = 0;
            for to in positions.into_iter().chain([bytes.len()]) {
                events.extend(parser.push(&bytes[from..to]));
                from = to;
            }
            prop_assert!(!parser.finish());
            prop_assert_eq!(events, expected);
        }
    }
}
