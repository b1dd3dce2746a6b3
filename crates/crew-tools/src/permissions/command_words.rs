//! What the words of one simple command mean: wrappers (`sudo`, `env`, `nohup`, `timeout`,
//! `xargs`…) around another command, shell carriers (`sh -c`, `eval`, a shell reading a
//! here-document) whose argument is itself a script, and `find -exec` running a command.

use super::bash_subject::{Command, ParsedCommand, Word, parse_into};

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"];

/// Adds `command` to `out`, or the command(s) it wraps (with the wrapper's refusals added).
pub(super) fn push_command(
    command: Command,
    stdin_scripts: &[String],
    depth: usize,
    out: &mut ParsedCommand,
) {
    let program = match command.words.first() {
        Some(first) if first.opaque.is_none() => basename(&first.text).to_string(),
        _ => {
            out.commands.push(command);
            return;
        }
    };
    let args = &command.words[1..];
    let wrapped = |skip: usize, extra: Option<String>| {
        let mut inner = Command {
            words: args[skip.min(args.len())..].to_vec(),
            refusals: command.refusals.clone(),
        };
        inner.refusals.extend(extra);
        inner
    };
    match program.as_str() {
        "sudo" | "doas" => {
            let skip = options_end(
                args,
                &[
                    "-u",
                    "-g",
                    "-C",
                    "-h",
                    "-p",
                    "-U",
                    "-r",
                    "-t",
                    "-D",
                    "-R",
                    "--user",
                    "--group",
                    "--close-from",
                    "--host",
                    "--prompt",
                    "--other-user",
                    "--role",
                    "--type",
                    "--chdir",
                    "--chroot",
                ],
            );
            let inner = wrapped(skip, None);
            out.commands.push(command.clone());
            if !inner.words.is_empty() {
                push_command(inner, &[], depth, out);
            }
        }
        "env" => push_env(&command, depth, out),
        "nohup" | "time" | "exec" | "builtin" | "setsid" => {
            push_wrapped(
                command.clone(),
                wrapped(options_end(args, &[]), None),
                depth,
                out,
            );
        }
        "command" if args.iter().any(|w| w.text == "-v" || w.text == "-V") => {
            out.commands.push(command);
        }
        "command" => push_wrapped(
            command.clone(),
            wrapped(options_end(args, &[]), None),
            depth,
            out,
        ),
        "nice" => push_wrapped(
            command.clone(),
            wrapped(options_end(args, &["-n", "--adjustment"]), None),
            depth,
            out,
        ),
        "ionice" => {
            let skip = options_end(
                args,
                &[
                    "-c",
                    "-n",
                    "-p",
                    "-P",
                    "-u",
                    "--class",
                    "--classdata",
                    "--pid",
                    "--pgid",
                    "--uid",
                ],
            );
            push_wrapped(command.clone(), wrapped(skip, None), depth, out);
        }
        "stdbuf" => {
            let skip = options_end(args, &["-i", "-o", "-e", "--input", "--output", "--error"]);
            push_wrapped(command.clone(), wrapped(skip, None), depth, out);
        }
        "timeout" => {
            let skip = options_end(args, &["-s", "-k", "--signal", "--kill-after"]) + 1;
            push_wrapped(command.clone(), wrapped(skip, None), depth, out);
        }
        "xargs" => {
            let skip = options_end(
                args,
                &[
                    "-n",
                    "-I",
                    "-P",
                    "-L",
                    "-d",
                    "-E",
                    "-s",
                    "-a",
                    "-i",
                    "-l",
                    "-e",
                    "--max-args",
                    "--replace",
                    "--max-procs",
                    "--max-lines",
                    "--delimiter",
                    "--eof",
                    "--max-chars",
                    "--arg-file",
                ],
            );
            let why = "`xargs` adds arguments read from its input, unknown before it runs";
            push_wrapped(command.clone(), wrapped(skip, Some(why.into())), depth, out);
        }
        "eval" => push_script(&command, args, "eval", depth, out),
        shell if SHELLS.contains(&shell) => push_shell(command, stdin_scripts, depth, out),
        "find" => {
            for inner in find_exec_commands(&command) {
                push_command(inner, &[], depth, out);
            }
            out.commands.push(command);
        }
        _ => out.commands.push(command),
    }
}

/// A wrapper with nothing after it is itself the command.
fn push_wrapped(wrapper: Command, inner: Command, depth: usize, out: &mut ParsedCommand) {
    if inner.words.is_empty() {
        out.commands.push(wrapper);
    } else {
        push_command(inner, &[], depth, out);
    }
}

/// `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]… [COMMAND…]`.
fn push_env(command: &Command, depth: usize, out: &mut ParsedCommand) {
    let args = &command.words[1..];
    let mut refusals = command.refusals.clone();
    let mut i = 0;
    let mut options_done = false;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if word.opaque.is_some() {
            break;
        }
        if text == "--" && !options_done {
            options_done = true;
        } else if is_assignment(text) {
            let name = text.split('=').next().unwrap_or_default();
            refusals.push(format!("`env {name}=…` changes how the command runs"));
        } else if options_done || !text.starts_with('-') {
            break;
        } else if matches!(text, "-S" | "--split-string") || text.starts_with("--split-string=") {
            let script = text
                .strip_prefix("--split-string=")
                .map(str::to_string)
                .or_else(|| args.get(i + 1).map(|w| w.text.clone()))
                .unwrap_or_default();
            refusals.push("`env -S` splits a string into a command".to_string());
            let mut inner = ParsedCommand::default();
            parse_into(&script, depth + 1, &mut inner);
            for mut found in inner.commands {
                found.refusals.extend(refusals.iter().cloned());
                out.commands.push(found);
            }
            return;
        } else if matches!(text, "-C" | "--chdir") || text.starts_with("--chdir=") {
            refusals.push("`env -C` runs the command in another directory".to_string());
            i += usize::from(!text.contains('='));
        } else if matches!(text, "-u" | "--unset") {
            i += 1;
        }
        i += 1;
    }
    let inner = Command {
        words: args[i.min(args.len())..].to_vec(),
        refusals,
    };
    push_wrapped(command.clone(), inner, depth, out);
}

/// `sh -c SCRIPT`, `bash -lc SCRIPT`, a shell fed a here-document; a shell running a script
/// file is itself the command.
fn push_shell(command: Command, stdin_scripts: &[String], depth: usize, out: &mut ParsedCommand) {
    let args = &command.words[1..];
    let mut i = 0;
    let mut takes_script = false;
    while let Some(word) = args.get(i) {
        let text = &word.text;
        if word.opaque.is_some() || !text.starts_with(['-', '+']) || text == "--" || text == "-" {
            break;
        }
        if !text.starts_with("--") && text.contains('c') {
            takes_script = true;
        }
        // `-o OPTION` / `-O OPTION` take a word.
        i += if matches!(text.as_str(), "-o" | "+o" | "-O" | "+O") {
            2
        } else {
            1
        };
    }
    if takes_script && let Some(script) = args.get(i) {
        push_script(&command, std::slice::from_ref(script), "sh -c", depth, out);
        return;
    }
    let reads_stdin = args.get(i).is_none_or(|w| w.text == "-");
    if reads_stdin && !stdin_scripts.is_empty() {
        for script in stdin_scripts {
            let mut inner = ParsedCommand::default();
            parse_into(script, depth + 1, &mut inner);
            absorb(inner, &command.refusals, out);
        }
        return;
    }
    out.commands.push(command);
}

/// A script given as words (`eval`, `sh -c`): parsed as a line of its own.
fn push_script(
    carrier: &Command,
    words: &[Word],
    name: &str,
    depth: usize,
    out: &mut ParsedCommand,
) {
    let script: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    let mut inner = ParsedCommand::default();
    parse_into(&script.join(" "), depth + 1, &mut inner);
    let mut refusals = carrier.refusals.clone();
    if let Some(word) = words.iter().find(|w| w.opaque.is_some()) {
        refusals.push(format!(
            "`{name}` runs `{}`, a script only known when it runs",
            word.text
        ));
    }
    absorb(inner, &refusals, out);
}

fn absorb(inner: ParsedCommand, refusals: &[String], out: &mut ParsedCommand) {
    if let Some(error) = inner.error {
        out.error.get_or_insert(error);
    }
    for mut found in inner.commands {
        found.refusals.extend(refusals.iter().cloned());
        out.commands.push(found);
    }
}

/// The commands `find` runs for `-exec`, `-execdir`, `-ok`, `-okdir` (up to `;` or `+`).
fn find_exec_commands(command: &Command) -> Vec<Command> {
    let mut found = Vec::new();
    let mut words = command.words.iter();
    while let Some(word) = words.next() {
        if matches!(word.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let inner: Vec<Word> = words
                .by_ref()
                .take_while(|w| w.text != ";" && w.text != "+")
                .cloned()
                .collect();
            let mut refusals = command.refusals.clone();
            refusals.push(format!("`find {}` runs a command on every file", word.text));
            found.push(Command {
                words: inner,
                refusals,
            });
        }
    }
    found
}

/// Index of the first word after a wrapper's options (with the arguments of those in
/// `opts_with_arg`), `--` included.
fn options_end(args: &[Word], opts_with_arg: &[&str]) -> usize {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        if word.opaque.is_some() {
            break;
        }
        if word.text == "--" {
            return i + 1;
        }
        if !word.text.starts_with('-') || word.text == "-" {
            break;
        }
        i += if takes_value(&word.text, opts_with_arg) {
            2
        } else {
            1
        };
    }
    i
}

/// `word` is one of `opts_with_arg` given without its value (`-n`, `--signal`, or an
/// abbreviation getopt accepts: `--sig`), so the next word is that value.
fn takes_value(word: &str, opts_with_arg: &[&str]) -> bool {
    opts_with_arg.iter().any(|opt| {
        *opt == word || (word.len() >= 3 && word.starts_with("--") && opt.starts_with(word))
    })
}

pub(super) fn is_assignment(word: &str) -> bool {
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
