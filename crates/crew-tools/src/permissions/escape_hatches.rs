//! Options through which a program an allow rule names can run other programs, write files
//! or read outside the workspace. No allow rule grants a command using one (only the bare
//! `bash` rule, which grants everything), however the rule is written.

use super::command_words::basename;

/// Git options allowed before the subcommand; every other one (`-c`, `--config-env`, `-C`,
/// `--git-dir`, `--work-tree`, `--exec-path`…) changes what git runs or where.
const GIT_GLOBAL_OK: &[&str] = &[
    "--no-pager",
    "-P",
    "--no-optional-locks",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-replace-objects",
];

/// Git subcommands crew knows; any other may be an alias, which can run any program.
const GIT_SUBCOMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-ignore",
    "checkout",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "fetch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "init",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge",
    "merge-base",
    "mv",
    "name-rev",
    "notes",
    "pull",
    "push",
    "range-diff",
    "rebase",
    "reflog",
    "remote",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "tag",
    "version",
    "whatchanged",
    "worktree",
];

/// Git subcommands that run configured or given programs whatever their flags.
const GIT_RUNS_PROGRAMS: &[&str] = &[
    "difftool",
    "mergetool",
    "filter-branch",
    "web--browse",
    "instaweb",
    "help",
    "credential",
    "send-email",
];

/// Long options (or their abbreviations) that make git run a program, write a file or read
/// outside the repository.
const GIT_HATCHES: &[(&str, &str)] = &[
    ("--output", "writes its output to a file"),
    ("--output-directory", "writes files"),
    ("--ext-diff", "runs an external diff program"),
    ("--textconv", "runs text-conversion programs"),
    ("--no-index", "compares files outside the repository"),
    ("--upload-pack", "runs a program of the caller's choice"),
    ("--receive-pack", "runs a program of the caller's choice"),
    ("--exec", "runs a program of the caller's choice"),
    ("--open-files-in-pager", "runs a pager program"),
    ("--template", "copies hook scripts from a directory"),
    ("--config", "sets configuration, which can run programs"),
    ("--contents", "reads a file of the caller's choice"),
    ("--remote", "runs commands on a remote"),
];

/// Why no allow rule may grant `argv` (its program has an escape hatch in use), if so.
pub fn escape_hatch(argv: &[String]) -> Option<String> {
    let program = basename(argv.first()?);
    let args = &argv[1..];
    let reason = match program {
        "git" => git(args),
        "find" => args
            .iter()
            .find(|a| {
                matches!(
                    a.as_str(),
                    "-exec" | "-execdir" | "-ok" | "-okdir" | "-delete" | "-fls"
                ) || a.starts_with("-fprint")
            })
            .map(|a| format!("`{a}` runs commands or writes files")),
        "sed" => sed(args),
        "awk" | "gawk" | "mawk" | "nawk" => {
            Some("awk programs can run commands (`system`, pipes) and write files; asking".into())
        }
        "sort" => args
            .iter()
            .find(|a| short_bundle_has(a, 'o') || long_is(a, &["--output", "--compress-program"]))
            .map(|a| format!("`{a}` writes a file or runs a program")),
        "tee" => args
            .iter()
            .find(|a| !a.starts_with('-') && *a != "/dev/null")
            .map(|a| format!("`tee {a}` writes a file")),
        "rg" => args
            .iter()
            .find(|a| long_is(a, &["--pre"]))
            .map(|a| format!("`{a}` runs a program on every file searched")),
        "tree" => args
            .iter()
            .find(|a| *a == "-o" || long_is(a, &["--output"]))
            .map(|a| format!("`{a}` writes a file")),
        "file" => args
            .iter()
            .find(|a| *a == "-C" || long_is(a, &["--compile"]))
            .map(|a| format!("`{a}` writes a file")),
        "date" => args
            .iter()
            .find(|a| {
                short_bundle_has(a, 's') || long_is(a, &["--set"]) || !a.starts_with(['-', '+'])
            })
            .map(|a| format!("`{a}` sets the clock")),
        "hostname" => args
            .iter()
            .find(|a| !a.starts_with('-') || long_is(a, &["--file"]) || *a == "-F")
            .map(|a| format!("`hostname {a}` sets the host's name")),
        "uniq" => uniq_output(args).map(|out| format!("`uniq IN {out}` writes the file {out}")),
        "less" | "more" | "most" => args
            .iter()
            .find(|a| {
                a.starts_with('+')
                    || matches!(a.as_str(), "-o" | "-O" | "-k")
                    || long_is(a, &["--log-file", "--LOG-FILE", "--lesskey-file"])
            })
            .map(|a| format!("`{a}` runs pager commands or writes a file")),
        "man" => args
            .iter()
            .find(|a| {
                matches!(a.as_str(), "-P" | "-H" | "-p")
                    || long_is(a, &["--pager", "--html", "--preprocessor"])
            })
            .map(|a| format!("`{a}` runs a program of the caller's choice")),
        "tar" => args
            .iter()
            .find(|a| {
                long_is(
                    a,
                    &[
                        "--to-command",
                        "--use-compress-program",
                        "--checkpoint-action",
                        "--info-script",
                        "--new-volume-script",
                        "--rsh-command",
                        "--rmt-command",
                    ],
                ) || (!a.starts_with("--")
                    && a.starts_with('-')
                    && (a.contains('I') || a.contains('F')))
            })
            .map(|a| format!("`{a}` runs a program of the caller's choice")),
        _ => None,
    }?;
    Some(format!("`{program}`: {reason}"))
}

/// `uniq [OPTION]... [INPUT [OUTPUT]]`: the second operand (`-` is one: standard input) is a
/// file it writes. `-f N`, `-s N` and `-w N` take a value.
fn uniq_output(args: &[String]) -> Option<&String> {
    let mut operands = Vec::new();
    let mut words = args.iter();
    let mut options_done = false;
    while let Some(arg) = words.next() {
        if options_done || arg == "-" || !arg.starts_with('-') {
            operands.push(arg);
        } else if arg == "--" {
            options_done = true;
        } else if arg.starts_with("--") {
            if !arg.contains('=')
                && long_is(arg, &["--skip-fields", "--skip-chars", "--check-chars"])
            {
                words.next();
            }
        } else if matches!(arg.as_str(), "-f" | "-s" | "-w") {
            words.next();
        }
    }
    operands.get(1).copied()
}

/// Git subcommands that read paths of the caller's choice: given a path outside the work
/// tree, `git diff` compares files as `--no-index` does, reading anything.
const GIT_READS_PATHS: &[&str] = &["diff", "log", "show", "whatchanged"];

/// A path operand that leaves the work tree: absolute, from a home folder, or climbing above
/// where the command runs.
fn leaves_work_tree(arg: &str) -> bool {
    if arg.starts_with(['/', '~']) {
        return true;
    }
    let mut depth: i32 = 0;
    for part in arg.split('/') {
        match part {
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

fn git(args: &[String]) -> Option<String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if !arg.starts_with('-') {
            break;
        }
        if !GIT_GLOBAL_OK.contains(&arg.as_str()) {
            return Some(format!(
                "`{arg}` before the subcommand changes git's configuration or where it works, \
                 which can run any program"
            ));
        }
        i += 1;
    }
    let sub = args.get(i)?;
    if GIT_RUNS_PROGRAMS.contains(&sub.as_str()) {
        return Some(format!("`git {sub}` runs other programs"));
    }
    if !GIT_SUBCOMMANDS.contains(&sub.as_str()) {
        return Some(format!(
            "`git {sub}` is not a git command crew knows; an alias can run any program"
        ));
    }
    let rest = &args[i + 1..];
    if GIT_READS_PATHS.contains(&sub.as_str())
        && let Some(path) = rest
            .iter()
            .filter(|a| !a.starts_with('-'))
            .find(|a| leaves_work_tree(a))
    {
        return Some(format!(
            "`git {sub}` with `{path}`, a path outside the work tree, reads files as \
             `--no-index` does"
        ));
    }
    for arg in rest {
        if arg == "--" {
            break;
        }
        if let Some((_, why)) = GIT_HATCHES.iter().find(|(name, _)| long_is(arg, &[name])) {
            return Some(format!("`git {sub}` with `{arg}` {why}"));
        }
        let short_hatch = match sub.as_str() {
            "format-patch" | "archive" => arg == "-o" || arg.starts_with("-o"),
            "grep" => arg == "-O" || arg.starts_with("-O"),
            "rebase" => arg == "-x" || arg.starts_with("-x"),
            "fetch" | "pull" | "clone" | "ls-remote" => arg == "-u",
            _ => false,
        };
        if short_hatch {
            return Some(format!(
                "`git {sub}` with `{arg}` runs a program or writes a file"
            ));
        }
    }
    match (sub.as_str(), rest.first().map(String::as_str)) {
        ("bisect", Some("run")) | ("submodule", Some("foreach")) => {
            Some(format!("`git {sub}` runs a command of the caller's choice"))
        }
        _ => None,
    }
}

/// `sed -i` (in place), `-f` (a script file) and scripts with `w`, `W`, `e` commands or the
/// `w`/`e` flags of `s`.
fn sed(args: &[String]) -> Option<String> {
    let scripts = match sed_scripts(args) {
        Ok(scripts) => scripts,
        Err(arg) => {
            return Some(format!(
                "`{arg}` edits files in place or runs a script file"
            ));
        }
    };
    scripts
        .iter()
        .find(|s| sed_script_uses(s, &['w', 'W', 'e'], &['w', 'e']))
        .map(|s| format!("the script `{s}` writes files or runs commands (`w`, `W`, `e`)"))
}

/// The scripts of a sed command line, read as GNU sed's getopt does (options anywhere, bundles,
/// `-l N` and `-e S` taking the next word or the rest of the bundle): every `-e`/`--expression`,
/// else the first operand. `Err` with the option when it edits in place or reads a script file.
pub(super) fn sed_scripts(args: &[String]) -> Result<Vec<String>, String> {
    let mut scripts = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            if long_is(&format!("--{name}"), &["--in-place", "--file"]) {
                return Err(arg.clone());
            }
            let takes = long_is(&format!("--{name}"), &["--expression", "--line-length"]);
            if takes {
                let value = value.or_else(|| {
                    i += 1;
                    args.get(i - 1).cloned()
                });
                if long_is(&format!("--{name}"), &["--expression"]) {
                    scripts.extend(value);
                }
            }
            continue;
        }
        let Some(bundle) = arg.strip_prefix('-').filter(|b| !b.is_empty()) else {
            operands.push(arg.clone());
            continue;
        };
        for (at, flag) in bundle.char_indices() {
            match flag {
                'i' | 'f' => return Err(arg.clone()),
                'e' | 'l' => {
                    let rest = &bundle[at + 1..];
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned()
                    } else {
                        Some(rest.to_string())
                    };
                    if flag == 'e' {
                        scripts.extend(value);
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    if scripts.is_empty() {
        scripts.extend(operands.into_iter().next());
    }
    Ok(scripts)
}

/// A small reader of sed scripts: addresses, then a command letter; `s` and `y` have two
/// delimited fields, `s` then flags. True when a command in `commands`, or an `s` flag in
/// `s_flags`, is used.
pub(super) fn sed_script_uses(script: &str, commands: &[char], s_flags: &[char]) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_field = |i: &mut usize, delim: char| {
        while *i < chars.len() && chars[*i] != delim {
            *i += if chars[*i] == '\\' { 2 } else { 1 };
        }
        *i += 1;
    };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            c if commands.contains(&c) => return true,
            's' | 'y' if i < chars.len() => {
                let delim = chars[i];
                i += 1;
                skip_field(&mut i, delim);
                skip_field(&mut i, delim);
                if c == 's' {
                    while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                        if s_flags.contains(&chars[i]) {
                            return true;
                        }
                        i += 1;
                    }
                }
            }
            '/' | '\\' => {
                let delim = if c == '\\' && i < chars.len() {
                    i += 1;
                    chars[i - 1]
                } else {
                    '/'
                };
                skip_field(&mut i, delim);
            }
            'a' | 'i' | 'c' | 'b' | 't' | 'T' | ':' | 'r' | 'R' | '#' | 'w' | 'W' => {
                while i < chars.len()
                    && chars[i] != '\n'
                    && (matches!(c, 'a' | 'i' | 'c' | '#' | 'w' | 'W' | 'r' | 'R')
                        || chars[i] != ';')
                {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    false
}

/// `-xyz` contains the short flag `c`.
fn short_bundle_has(arg: &str, c: char) -> bool {
    arg.starts_with('-')
        && !arg.starts_with("--")
        && arg[1..].starts_with(|f: char| f.is_ascii_alphabetic())
        && arg[1..].contains(c)
}

/// `arg` is one of `names` (with `=value`), or an abbreviation getopt would accept.
fn long_is(arg: &str, names: &[&str]) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    name.starts_with("--") && name.len() >= 3 && names.iter().any(|n| n.starts_with(name))
}
