//! What the words of one simple command mean: keywords and assignments before the program,
//! wrappers (`sudo`, `env`, `nohup`, `timeout`, `xargs`…) around another command, and shell
//! carriers (`sh -c`, `eval`) whose argument is itself a script.

use super::bash_subject::{ParseError, ParsedCommand, parse_into};
/// Words that open or close a compound command and precede the real command name.
const LEADING_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "}",
];
/// Lines that start with these are syntax, not commands.
const SYNTAX_ONLY: &[&str] = &[
    "fi", "done", "esac", "for", "case", "select", "in", "function",
];
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh"];

pub(super) fn push_command(
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
