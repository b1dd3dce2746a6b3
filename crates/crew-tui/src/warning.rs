//! Problems found in user-editable files (themes, keymaps, crew.toml's `[ui]`), shown in the status
//! line instead of printed: the screen owns the terminal.

use std::fmt;

/// A problem in a file, at a 1-based line (0 when the whole file is concerned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl Warning {
    pub(crate) fn new(file: impl Into<String>, line: usize, message: impl Into<String>) -> Self {
        Warning {
            file: file.into(),
            line,
            message: message.into(),
        }
    }

    /// A warning at byte `offset` of `text`.
    pub(crate) fn at(file: &str, text: &str, offset: usize, message: impl Into<String>) -> Self {
        Warning::new(file, line_of(text, offset), message)
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// The 1-based line holding byte `offset`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The 1-based line of a TOML parse error (line 1 when it has no position).
pub(crate) fn toml_error(file: &str, text: &str, e: &toml::de::Error) -> Warning {
    let offset = e.span().map_or(0, |s| s.start);
    Warning::at(file, text, offset, e.message().trim().to_string())
}
