//! Finding the commands a shell line will run, for permission rules and concurrency safety.
//!
//! Only words at command position count (start of line, after `;`, `&&`, `||`, `|`, `&`,
//! newline, `(`, inside `$(…)` and backticks, after wrappers such as `sudo`, `env`, `nohup`,
//! `time`, and after leading `VAR=value` assignments). Quoted text is data — `git commit -m
//! "rm -rf /"` runs `git` — except where the shell would execute it: `$(…)` and backticks
//! inside double quotes and unquoted here-documents, and the script given to `sh -c`,
//! `bash -c` or `eval`, which is parsed recursively ("quoting is not a bypass").

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedCommand {
    /// Each simple command at command position, as its words with quotes removed.
    pub commands: Vec<Vec<String>>,
    /// Output goes into a file (anything but `/dev/null` or another descriptor).
    pub writes_files: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("unterminated {0} quote")]
    UnterminatedQuote(char),
    #[error("unterminated `$(`, `${{` or backtick")]
    UnterminatedExpansion,
    #[error("commands nested more than {MAX_DEPTH} levels deep")]
    TooDeep,
}

const MAX_DEPTH: usize = 16;

/// Splits `command` into the commands it runs.
pub fn parse(command: &str) -> Result<ParsedCommand, ParseError> {
    let mut out = ParsedCommand::default();
    parse_into(command, 0, &mut out)?;
    Ok(out)
}

fn parse_into(script: &str, depth: usize, out: &mut ParsedCommand) -> Result<(), ParseError> {
    if depth > MAX_DEPTH {
        return Err(ParseError::TooDeep);
    }
    let mut lexer = Lexer {
        chars: script.chars().collect(),
        pos: 0,
        depth,
        heredocs: Vec::new(),
        out,
    };
    lexer.sequence(None)
}

struct Lexer<'o> {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    /// Here-document delimiters waiting for the end of the current line: (delimiter, expands).
    heredocs: Vec<(String, bool)>,
    out: &'o mut ParsedCommand,
}

const WORD_END: &[char] = &[' ', '\t', '\n', ';', '|', '&', '(', ')', '<', '>'];

impl Lexer<'_> {
    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// Reads commands until the end of input or, inside a substitution, its closing `end`.
    fn sequence(&mut self, end: Option<char>) -> Result<(), ParseError> {
        let mut words: Vec<String> = Vec::new();
        let mut parens = 0usize;
        loop {
            while matches!(self.peek_at(0), Some(' ' | '\t')) {
                self.pos += 1;
            }
            let Some(c) = self.peek_at(0) else {
                if end.is_some() {
                    return Err(ParseError::UnterminatedExpansion);
                }
                break;
            };
            match c {
                '\n' => {
                    self.pos += 1;
                    self.flush(&mut words)?;
                    self.skip_heredoc_bodies()?;
                }
                '&' if self.peek_at(1) == Some('>') => self.redirect()?,
                ';' | '|' | '&' => {
                    self.pos += 1;
                    self.flush(&mut words)?;
                }
                '(' => {
                    self.pos += 1;
                    self.flush(&mut words)?;
                    parens += 1;
                }
                ')' => {
                    self.pos += 1;
                    self.flush(&mut words)?;
                    if end == Some(')') && parens == 0 {
                        return Ok(());
                    }
                    parens = parens.saturating_sub(1);
                }
                '`' if end == Some('`') => {
                    self.pos += 1;
                    self.flush(&mut words)?;
                    return Ok(());
                }
                '#' => {
                    while self.peek_at(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '<' | '>' => self.redirect()?,
                d if d.is_ascii_digit() && self.fd_redirect_ahead() => self.redirect()?,
                _ => {
                    let word = self.word(end)?;
                    words.push(word);
                }
            }
        }
        self.flush(&mut words)
    }

    /// True at `2>`, `10<` and the like: a descriptor number glued to a redirection.
    fn fd_redirect_ahead(&self) -> bool {
        let digits = self.chars[self.pos..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        matches!(self.peek_at(digits), Some('<' | '>'))
    }

    /// Reads one word, removing quotes; substitutions inside it are parsed as commands.
    fn word(&mut self, end: Option<char>) -> Result<String, ParseError> {
        let mut word = String::new();
        while let Some(c) = self.peek_at(0) {
            if WORD_END.contains(&c) || (c == '`' && end == Some('`')) {
                break;
            }
            self.pos += 1;
            match c {
                '\'' => {
                    let start = self.pos;
                    while self.peek_at(0).is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    if self.peek_at(0).is_none() {
                        return Err(ParseError::UnterminatedQuote('\''));
                    }
                    word.extend(&self.chars[start..self.pos]);
                    self.pos += 1;
                }
                '"' => self.double_quoted(&mut word, true)?,
                '\\' => match self.peek_at(0) {
                    Some('\n') => self.pos += 1,
                    Some(next) => {
                        word.push(next);
                        self.pos += 1;
                    }
                    None => {}
                },
                '$' | '`' => self.expansion(c, &mut word)?,
                other => word.push(other),
            }
        }
        Ok(word)
    }

    /// Reads double-quoted text up to the closing quote (or, for a here-document body, to the
    /// end of input). Substitutions inside still run, so they are parsed.
    fn double_quoted(
        &mut self,
        word: &mut String,
        closed_by_quote: bool,
    ) -> Result<(), ParseError> {
        loop {
            let Some(c) = self.peek_at(0) else {
                return if closed_by_quote {
                    Err(ParseError::UnterminatedQuote('"'))
                } else {
                    Ok(())
                };
            };
            self.pos += 1;
            match c {
                '"' if closed_by_quote => return Ok(()),
                '\\' => match self.peek_at(0) {
                    Some(next @ ('"' | '\\' | '$' | '`')) => {
                        word.push(next);
                        self.pos += 1;
                    }
                    Some('\n') => self.pos += 1,
                    _ => word.push('\\'),
                },
                '$' | '`' => self.expansion(c, word)?,
                other => word.push(other),
            }
        }
    }

    /// After a `$` or a backtick: command substitutions are parsed as commands; parameter
    /// and arithmetic expansions are kept as text. The raw text goes into `word`.
    fn expansion(&mut self, first: char, word: &mut String) -> Result<(), ParseError> {
        let start = self.pos - 1;
        match (first, self.peek_at(0), self.peek_at(1)) {
            ('`', _, _) => self.nested('`')?,
            ('$', Some('('), Some('(')) => self.skip_balanced('(', ')', 2)?,
            ('$', Some('('), _) => {
                self.pos += 1;
                self.nested(')')?;
            }
            ('$', Some('{'), _) => self.skip_balanced('{', '}', 1)?,
            _ => {}
        }
        word.extend(&self.chars[start..self.pos]);
        Ok(())
    }

    fn nested(&mut self, end: char) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        self.depth += 1;
        let result = self.sequence(Some(end));
        self.depth -= 1;
        result
    }

    /// Skips `open`…`close` text with nesting, starting before the first `open`.
    fn skip_balanced(&mut self, open: char, close: char, opens: usize) -> Result<(), ParseError> {
        self.pos += opens;
        let mut depth = opens;
        while depth > 0 {
            let Some(c) = self.peek_at(0) else {
                return Err(ParseError::UnterminatedExpansion);
            };
            self.pos += 1;
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
            }
        }
        Ok(())
    }

    fn redirect(&mut self) -> Result<(), ParseError> {
        while self.peek_at(0).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let mut op = String::new();
        while let Some(c @ ('<' | '>' | '&' | '|' | '-')) = self.peek_at(0) {
            let fits = match c {
                '|' => op == ">",
                '-' => op == "<<" || op.ends_with('&'),
                _ => op.len() < 3,
            };
            if !fits {
                break;
            }
            op.push(c);
            self.pos += 1;
        }
        while matches!(self.peek_at(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
        if op.ends_with('-') && op != "<<-" {
            return Ok(()); // `>&-` closes a descriptor; no target
        }
        let quoted = matches!(self.peek_at(0), Some('\'' | '"' | '\\'));
        let target = self.word(None)?;
        if op.starts_with("<<") && op != "<<<" {
            self.heredocs.push((target, !quoted));
            return Ok(());
        }
        let duplicates_fd = op.ends_with('&') && target.chars().all(|c| c.is_ascii_digit());
        if op.contains('>') && !duplicates_fd && target != "/dev/null" {
            self.out.writes_files = true;
        }
        Ok(())
    }

    /// At the start of a line after here-document operators: skips each body up to its
    /// delimiter line, parsing substitutions in bodies whose delimiter was not quoted.
    fn skip_heredoc_bodies(&mut self) -> Result<(), ParseError> {
        for (delimiter, expands) in std::mem::take(&mut self.heredocs) {
            let start = self.pos;
            let mut body_end = self.chars.len();
            while self.pos < self.chars.len() {
                let line_start = self.pos;
                while self.peek_at(0).is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[line_start..self.pos].iter().collect();
                self.pos = (self.pos + 1).min(self.chars.len());
                if line.trim_start_matches('\t') == delimiter {
                    body_end = line_start;
                    break;
                }
            }
            if expands {
                let body: String = self.chars[start..body_end].iter().collect();
                let mut sub = Lexer {
                    chars: body.chars().collect(),
                    pos: 0,
                    depth: self.depth,
                    heredocs: Vec::new(),
                    out: &mut *self.out,
                };
                sub.double_quoted(&mut String::new(), false)?;
            }
        }
        Ok(())
    }

    fn flush(&mut self, words: &mut Vec<String>) -> Result<(), ParseError> {
        let words = std::mem::take(words);
        push_command(words, self.depth, self.out)
    }
}

/// Words that open or close a compound command and precede the real command name.
const LEADING_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "}",
];
/// Lines that start with these are syntax, not commands.
const SYNTAX_ONLY: &[&str] = &[
    "fi", "done", "esac", "for", "case", "select", "in", "function",
];
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh"];

fn push_command(
    mut words: Vec<String>,
    depth: usize,
    out: &mut ParsedCommand,
) -> Result<(), ParseError> {
    let skip = words
        .iter()
        .take_while(|w| LEADING_KEYWORDS.contains(&w.as_str()) || is_assignment(w))
        .count();
    words.drain(..skip);
    let Some(first) = words.first().map(|w| basename(w).to_string()) else {
        return Ok(());
    };
    if SYNTAX_ONLY.contains(&first.as_str()) {
        return Ok(());
    }
    let inner = |opts: &[&str], positional: usize| strip_wrapper(&words[1..], opts, positional);
    match first.as_str() {
        "sudo" | "doas" => {
            let rest = inner(&["-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D"], 0);
            out.commands.push(words.clone());
            push_command(rest, depth, out)
        }
        "env" => push_wrapped(inner(&["-u", "-C", "-S"], 0), words, depth, out),
        "nohup" | "time" | "exec" | "command" | "builtin" => {
            push_wrapped(inner(&[], 0), words, depth, out)
        }
        "nice" => push_wrapped(inner(&["-n"], 0), words, depth, out),
        "timeout" => push_wrapped(inner(&["-s", "-k"], 1), words, depth, out),
        "xargs" => push_wrapped(
            inner(&["-n", "-I", "-P", "-L", "-d", "-E", "-s", "-a"], 0),
            words,
            depth,
            out,
        ),
        "eval" => parse_into(&words[1..].join(" "), depth + 1, out),
        shell if SHELLS.contains(&shell) => {
            let flag = words[1..]
                .iter()
                .position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'));
            match flag.and_then(|i| words.get(i + 2)) {
                Some(script) => parse_into(script, depth + 1, out),
                None => {
                    out.commands.push(words);
                    Ok(())
                }
            }
        }
        _ => {
            out.commands.push(words);
            Ok(())
        }
    }
}

/// A wrapper that only adjusts how its command runs: the command is what counts; a wrapper
/// with nothing after it is itself the command.
fn push_wrapped(
    rest: Vec<String>,
    words: Vec<String>,
    depth: usize,
    out: &mut ParsedCommand,
) -> Result<(), ParseError> {
    if rest.is_empty() {
        out.commands.push(words);
        Ok(())
    } else {
        push_command(rest, depth, out)
    }
}

/// Drops a wrapper's options (with the arguments of those in `opts_with_arg`) and its first
/// `positional` arguments, returning the wrapped command.
fn strip_wrapper(args: &[String], opts_with_arg: &[&str], positional: usize) -> Vec<String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if !arg.starts_with('-') && !is_assignment(arg) {
            break;
        }
        i += if opts_with_arg.contains(&arg.as_str()) {
            2
        } else {
            1
        };
    }
    args.iter().skip(i + positional).cloned().collect()
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The program name without its directory: `/bin/rm` is `rm` for rule matching.
pub fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}
