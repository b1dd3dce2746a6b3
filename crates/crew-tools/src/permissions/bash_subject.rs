//! Finding every command a shell line will run, with `tree-sitter-bash` (the grammar Codex CLI
//! uses for the same decision).
//!
//! Every simple command anywhere in the line counts: in lists and pipelines, subshells and
//! compound statements, inside `$(…)`, backticks, `<(…)`, `${X:-$(…)}`, `$((…))`, here-documents
//! that expand, behind wrappers (`env`, `sudo`, `timeout`, `xargs`…) and in the scripts given to
//! `sh -c` or `eval` (parsed recursively: quoting is not a bypass). Each command keeps its words
//! with quotes removed plus the reasons no allow rule may grant it (`refusals`): an assignment
//! before it, a redirection into a file, a word only known when it runs. Deny rules look at the
//! words of every command; allow rules only at commands without refusals.

use tree_sitter::{Node, Parser};

pub use super::command_words::basename;
use super::command_words::push_command;

/// One word of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word as the program receives it when `opaque` is `None`; otherwise its source text.
    pub text: String,
    /// Why the word's value is only known when the line runs (an expansion, a glob…).
    pub opaque: Option<&'static str>,
}

impl Word {
    pub fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            opaque: None,
        }
    }
}

/// One simple command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<Word>,
    /// Why no allow rule may grant this command; empty for a command of plain words.
    pub refusals: Vec<String>,
}

impl Command {
    /// The words as text (the source text for words only known at run time).
    pub fn argv(&self) -> Vec<String> {
        self.words.iter().map(|w| w.text.clone()).collect()
    }

    /// Why an allow rule may not grant this command, if it may not, naming the program.
    pub fn refusal(&self) -> Option<String> {
        let why = self.refusals.first().cloned().or_else(|| {
            self.words
                .iter()
                .find_map(|w| w.opaque.map(|why| format!("`{}` {why}", w.text)))
        })?;
        Some(match self.words.first() {
            Some(program) if program.opaque.is_none() => format!("`{}`: {why}", program.text),
            _ => why,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedCommand {
    /// Every simple command of the line, nested ones included.
    pub commands: Vec<Command>,
    /// Set when the line is not valid shell as far as the grammar can tell; the commands are
    /// still what could be read (for deny rules), but no allow rule may vouch for the line.
    pub error: Option<ParseError>,
}

impl ParsedCommand {
    /// Why rules may not allow the line as a whole, if they may not: the first command that is
    /// not plain, or a parse error.
    pub fn refusal(&self) -> Option<String> {
        if let Some(error) = &self.error {
            return Some(format!("could not parse the command ({error})"));
        }
        self.commands.iter().find_map(Command::refusal)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("a syntax error near `{0}`")]
    Syntax(String),
    #[error("commands nested more than {MAX_DEPTH} levels deep")]
    TooDeep,
    #[error("the shell grammar could not be loaded")]
    Grammar,
}

const MAX_DEPTH: usize = 16;

/// Reads `command` into the commands it runs.
pub fn parse(command: &str) -> ParsedCommand {
    let mut out = ParsedCommand::default();
    parse_into(command, 0, &mut out);
    out
}

/// Parses `script` (a whole line, or a script found inside one at `depth`) into `out`.
pub(super) fn parse_into(script: &str, depth: usize, out: &mut ParsedCommand) {
    if depth > MAX_DEPTH {
        out.error.get_or_insert(ParseError::TooDeep);
        return;
    }
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        out.error.get_or_insert(ParseError::Grammar);
        return;
    }
    let Some(tree) = parser.parse(script, None) else {
        out.error.get_or_insert(ParseError::Grammar);
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        let near = first_error(root)
            .and_then(|n| script.get(n.start_byte()..))
            .unwrap_or(script);
        out.error
            .get_or_insert(ParseError::Syntax(near.chars().take(40).collect()));
    }
    let mut walker = Walker {
        src: script.as_bytes(),
        depth,
        out,
    };
    walker.walk(root, &[]);
}

/// The first ERROR or MISSING node under `node`, for the message.
fn first_error(node: Node) -> Option<Node> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    children.into_iter().find_map(first_error)
}

struct Walker<'s, 'o> {
    src: &'s [u8],
    depth: usize,
    out: &'o mut ParsedCommand,
}

impl Walker<'_, '_> {
    fn text(&self, node: Node) -> String {
        node.utf8_text(self.src).unwrap_or_default().to_string()
    }

    fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor).collect()
    }

    /// A statement or anything holding statements; `inherited` are refusals from around it
    /// (a redirection of the enclosing group).
    fn walk(&mut self, node: Node, inherited: &[String]) {
        match node.kind() {
            "command" => self.command(node, inherited, Vec::new()),
            "redirected_statement" => {
                let body = node.child_by_field_name("body");
                let mut refusals = inherited.to_vec();
                let mut stdin_scripts = Vec::new();
                for child in Self::named_children(node) {
                    if Some(child) != body {
                        refusals.extend(self.redirect(child));
                        stdin_scripts.extend(self.stdin_text(child));
                    }
                }
                match body {
                    Some(body) if body.kind() == "command" => {
                        self.command(body, &refusals, stdin_scripts);
                    }
                    Some(body) => self.walk(body, &refusals),
                    None => {}
                }
            }
            "variable_assignment" | "variable_assignments" => {
                let refusal = format!(
                    "`{}` sets a variable for the rest of the line",
                    self.text(node)
                );
                self.line_refusal(refusal);
                self.nested(node);
            }
            "function_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| self.text(n))
                    .unwrap_or_default();
                self.line_refusal(format!(
                    "the line defines a shell function `{name}`, which can stand in for any command"
                ));
                self.nested(node);
            }
            "declaration_command" | "unset_command" => {
                let keyword = node.child(0).map(|n| self.text(n)).unwrap_or_default();
                self.line_refusal(format!("`{keyword}` changes shell variables"));
                self.nested(node);
            }
            "test_command" | "c_style_for_statement" => {
                self.line_refusal(
                    "`[[ … ]]` and `for ((…))` evaluate arithmetic, which can run commands"
                        .to_string(),
                );
                self.nested(node);
            }
            "compound_statement" if node.child(0).is_some_and(|c| c.kind() == "((") => {
                self.line_refusal("`(( … ))` evaluates arithmetic, which can run commands".into());
                self.nested(node);
            }
            _ => {
                for child in Self::named_children(node) {
                    self.walk(child, inherited);
                }
            }
        }
    }

    /// Commands inside `node`, which run on their own (substitutions, bodies).
    fn nested(&mut self, node: Node) {
        if self.depth >= MAX_DEPTH {
            self.out.error.get_or_insert(ParseError::TooDeep);
            return;
        }
        self.depth += 1;
        for child in Self::named_children(node) {
            self.walk(child, &[]);
        }
        self.depth -= 1;
    }

    fn line_refusal(&mut self, refusal: String) {
        self.out.commands.push(Command {
            words: Vec::new(),
            refusals: vec![refusal],
        });
    }

    /// One simple command; `stdin_scripts` is literal text a here-document or here-string
    /// around it feeds its input.
    fn command(&mut self, node: Node, inherited: &[String], mut stdin_scripts: Vec<String>) {
        let mut command = Command {
            words: Vec::new(),
            refusals: inherited.to_vec(),
        };
        for child in Self::named_children(node) {
            match child.kind() {
                "variable_assignment" => {
                    let name = child
                        .child_by_field_name("name")
                        .map(|n| self.text(n))
                        .unwrap_or_default();
                    command
                        .refusals
                        .push(format!("`{name}=…` before the command changes how it runs"));
                    self.nested(child);
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    command.refusals.extend(self.redirect(child));
                    stdin_scripts.extend(self.stdin_text(child));
                }
                "command_name" => match child.named_child(0) {
                    Some(name) => command.words.push(self.word(name)),
                    None => command.words.push(Word::literal(self.text(child))),
                },
                _ => command.words.push(self.word(child)),
            }
        }
        push_command(command, &stdin_scripts, self.depth, self.out);
    }

    /// The literal text a here-document or here-string feeds a command (a shell reading it
    /// runs it as a script).
    fn stdin_text(&self, node: Node) -> Option<String> {
        match node.kind() {
            "heredoc_redirect" => Self::named_children(node)
                .into_iter()
                .find(|c| c.kind() == "heredoc_body")
                .map(|b| self.text(b)),
            "herestring_redirect" => node.named_child(0).map(|w| {
                let mut walker = Walker {
                    src: self.src,
                    depth: self.depth,
                    out: &mut ParsedCommand::default(),
                };
                walker.word(w).text
            }),
            _ => None,
        }
    }

    /// Why a redirection keeps a command from being plain (none for reading a file, `2>&1`,
    /// `>/dev/null`); commands inside its target or here-document are read as well.
    fn redirect(&mut self, node: Node) -> Vec<String> {
        let mut refusals = Vec::new();
        match node.kind() {
            "file_redirect" => {
                let mut cursor = node.walk();
                let op = node
                    .children(&mut cursor)
                    .find(|c| !c.is_named())
                    .map(|c| self.text(c))
                    .unwrap_or_default();
                let target = node
                    .child_by_field_name("destination")
                    .map(|d| self.word(d));
                let Some(target) = target else {
                    return refusals;
                };
                if let Some(why) = target.opaque {
                    refusals.push(format!("the redirection target `{}` {why}", target.text));
                    return refusals;
                }
                let duplicates_fd = (op.ends_with('&') || op == ">&")
                    && (target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()));
                let harmless = matches!(
                    target.text.as_str(),
                    "/dev/null" | "/dev/stdout" | "/dev/stderr"
                );
                if op.contains('>') && !duplicates_fd && !harmless {
                    refusals.push(format!("`{op} {}` writes to a file", target.text));
                }
            }
            "heredoc_redirect" => {
                for child in Self::named_children(node) {
                    match child.kind() {
                        "heredoc_body"
                            if Self::named_children(child)
                                .iter()
                                .any(|c| c.kind() != "heredoc_content") =>
                        {
                            refusals.push(
                                "the here-document expands variables or commands".to_string(),
                            );
                            self.nested(child);
                        }
                        "file_redirect" | "herestring_redirect" => {
                            refusals.extend(self.redirect(child));
                        }
                        "heredoc_start" | "heredoc_end" | "heredoc_body" => {}
                        _ => self.walk(child, &[]),
                    }
                }
            }
            "herestring_redirect" => {
                for child in Self::named_children(node) {
                    let word = self.word(child);
                    if let Some(why) = word.opaque {
                        refusals.push(format!("the here-string `{}` {why}", word.text));
                    }
                }
            }
            _ => self.walk(node, &[]),
        }
        refusals
    }

    /// The value of one word; commands inside it are read as commands of their own.
    fn word(&mut self, node: Node) -> Word {
        let raw = self.text(node);
        let opaque = |why: &'static str| Word {
            text: raw.clone(),
            opaque: Some(why),
        };
        match node.kind() {
            "word" | "number" if Self::named_children(node).is_empty() => unescape_word(&raw),
            "raw_string" => Word::literal(raw.trim_matches('\'')),
            "ansi_c_string" => Word::literal(decode_ansi_c(&raw)),
            "string" | "translated_string" => {
                let mut text = String::new();
                let mut why = None;
                for child in Self::named_children(node) {
                    match child.kind() {
                        "string_content" => {
                            text.push_str(&unescape_double_quoted(&self.text(child)))
                        }
                        "string" => text.push_str(&self.word(child).text),
                        _ => why = why.or(self.word(child).opaque),
                    }
                }
                match why {
                    Some(why) => opaque(why),
                    None => Word::literal(text),
                }
            }
            "concatenation" => {
                let mut text = String::new();
                let mut why = None;
                for child in Self::named_children(node) {
                    let part = self.word(child);
                    if child.kind() == "word" && part.text.contains(['{', '}']) {
                        why = why.or(Some("is a brace expansion, known only when it runs"));
                    }
                    why = why.or(part.opaque);
                    text.push_str(&part.text);
                }
                match why {
                    Some(why) => opaque(why),
                    None => Word::literal(text),
                }
            }
            "command_substitution" | "process_substitution" => {
                self.nested(node);
                opaque("runs a command inside the line")
            }
            "arithmetic_expansion" => {
                self.nested(node);
                opaque("evaluates arithmetic, which can run commands")
            }
            "simple_expansion" | "expansion" => {
                self.nested(node);
                if raw.contains("$(") || raw.contains('`') {
                    opaque("runs a command inside the line")
                } else {
                    opaque("expands a variable, known only when it runs")
                }
            }
            _ => {
                self.nested(node);
                opaque("is not a plain word")
            }
        }
    }
}

/// An unquoted word: backslashes removed; glob patterns are only known when they run.
fn unescape_word(raw: &str) -> Word {
    let mut text = String::new();
    let mut glob = false;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => text.push(next),
            },
            '*' | '?' => {
                glob = true;
                text.push(c);
            }
            '[' if raw.len() > 1 && chars.clone().any(|c| c == ']') => {
                glob = true;
                text.push(c);
            }
            _ => text.push(c),
        }
    }
    Word {
        opaque: glob.then_some("is a glob pattern, expanded to file names when it runs"),
        text: if glob { raw.to_string() } else { text },
    }
}

fn unescape_double_quoted(raw: &str) -> String {
    let mut text = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(&next @ ('"' | '\\' | '$' | '`'))) => {
                text.push(next);
                chars.next();
            }
            _ => text.push(c),
        }
    }
    text
}

/// `$'…'`: the common escapes; anything unusual is kept as written (deny rules still see the
/// letters around it).
fn decode_ansi_c(raw: &str) -> String {
    let inner = raw
        .strip_prefix("$'")
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(raw);
    let mut text = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => text.push('\n'),
            Some('t') => text.push('\t'),
            Some('x') => {
                let hex: String = std::iter::from_fn(|| chars.next_if(char::is_ascii_hexdigit))
                    .take(2)
                    .collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(b) => text.push(char::from(b)),
                    Err(_) => text.push_str("\\x"),
                }
            }
            Some(d @ '0'..='7') => {
                let mut oct = d.to_string();
                oct.extend(
                    std::iter::from_fn(|| chars.next_if(|c| ('0'..='7').contains(c))).take(2),
                );
                match u8::from_str_radix(&oct, 8) {
                    Ok(b) => text.push(char::from(b)),
                    Err(_) => text.push_str(&oct),
                }
            }
            Some(other) => text.push(other),
            None => {}
        }
    }
    text
}
