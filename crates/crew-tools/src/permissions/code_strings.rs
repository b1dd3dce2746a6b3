//! Commands that run a string as code crew cannot read: a shell taking its script from its
//! input (`… | sh`), an interpreter given its program on the command line (`python -c`,
//! `node -e`, `perl -e`, an awk program, sed's `e`), git told to run configuration
//! (`git -c alias.x='!…'`), and programs that run a command line given as one string
//! (`watch`, `trap`, `su -c`, `flock -c`, `script -c`, `tmux`, `parallel`, editors' and
//! debuggers' command options). The bash parser already reads what it can (`sh -c 'literal'`,
//! `eval 'literal'`, here-documents fed to a shell, `env -S`, `find -exec`); what is left is
//! opaque. So no allow rule grants such a command, and while any deny rule exists it always
//! asks: otherwise a denied command could simply be said as code.

use super::command_words::basename;
use super::escape_hatches::{sed_script_uses, sed_scripts};

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash",
];

/// Why `argv` runs a string as code, if it does.
pub fn runs_code(argv: &[String]) -> Option<String> {
    let program = basename(argv.first()?);
    let args = &argv[1..];
    let reason = match program {
        shell if SHELLS.contains(&shell) => shell_reads_input(args),
        "busybox" => return runs_code(args),
        p if is_python(p) => interpreter(args, &["-c"], "its program"),
        "node" | "nodejs" | "bun" => {
            interpreter(args, &["-e", "--eval", "-p", "--print"], "its program")
        }
        "deno" => (args.first().map(String::as_str) == Some("eval"))
            .then(|| "`deno eval` runs its argument as code".to_string()),
        "perl" => bundle_with(args, &['e', 'E'])
            .map(|a| format!("`{a}` runs its argument as code"))
            .or_else(|| reads_program_from_input(args)),
        "ruby" | "lua" | "luajit" | "Rscript" | "osascript" => {
            interpreter(args, &["-e"], "its program")
        }
        "php" => interpreter(args, &["-r", "-R", "-B", "-E"], "its program"),
        "tclsh" | "wish" | "jshell" => reads_program_from_input(args),
        "awk" | "gawk" | "mawk" | "nawk" => {
            (!args.iter().any(|a| a == "-f" || a.starts_with("--file")))
                .then(|| "its program is code given as a string (`system`, pipes)".to_string())
        }
        "sed" => sed_scripts(args)
            .ok()?
            .into_iter()
            .find(|s| sed_script_uses(s, &['e'], &['e']))
            .map(|s| format!("the script `{s}` runs commands (`e`)")),
        "git" => git_config(args),
        "watch" => Some("runs its arguments as a shell command line".to_string()),
        "trap" => args
            .iter()
            .find(|a| !a.starts_with('-') || a.len() == 1)
            .filter(|a| !a.is_empty() && *a != "-")
            .map(|a| format!("`trap {a}` runs that string as a command later")),
        "su" | "runuser" | "script" | "flock" => bundle_with(args, &['c'])
            .or_else(|| args.iter().find(|a| a.starts_with("--command")))
            .map(|a| format!("`{a}` runs its argument as a shell command line")),
        "tmux" | "screen" | "parallel" | "at" | "batch" => {
            Some("runs command lines given as strings".to_string())
        }
        "make" | "gmake" => args
            .iter()
            .find(|a| *a == "-E" || a.starts_with("--eval"))
            .map(|a| format!("`{a}` evaluates its argument as makefile code")),
        "vim" | "nvim" | "vi" | "ex" | "view" => args
            .iter()
            .find(|a| matches!(a.as_str(), "-c" | "--cmd" | "-S") || a.starts_with('+'))
            .map(|a| format!("`{a}` runs editor commands, which can run programs")),
        "gdb" => args
            .iter()
            .find(|a| matches!(a.as_str(), "-ex" | "-iex") || a.starts_with("--eval-command"))
            .map(|a| format!("`{a}` runs debugger commands, which can run programs")),
        "emacs" => args
            .iter()
            .find(|a| matches!(a.as_str(), "--eval" | "-eval") || a.starts_with("--eval="))
            .map(|a| format!("`{a}` evaluates its argument as code")),
        _ => None,
    }?;
    Some(format!("`{program}` runs a string as code: {reason}"))
}

fn is_python(program: &str) -> bool {
    let rest = program
        .strip_prefix("python")
        .or_else(|| program.strip_prefix("pypy"));
    rest.is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// A shell that is left as a command (the parser expands `-c` scripts and here-documents) runs
/// a script file, or reads its script from its input: `… | sh`, `sh -s`, `sh -`.
fn shell_reads_input(args: &[String]) -> Option<String> {
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        if arg == "-" || arg == "--" || !arg.starts_with(['-', '+']) {
            return (arg == "-" || (arg == "--" && words.next().is_none()))
                .then(|| "it reads its script from its input".to_string());
        }
        if !arg.starts_with("--") && (arg.contains('s') || arg.contains('c')) {
            return Some(format!(
                "`{arg}` runs a script given as a string or on its input"
            ));
        }
        if matches!(arg.as_str(), "-o" | "+o" | "-O" | "+O") {
            words.next();
        }
    }
    Some("with no script file it reads its script from its input".to_string())
}

/// An interpreter with one of `flags` (alone, in a bundle of short flags, or glued to its
/// value) runs that value; with no operand at all it reads its program from its input.
fn interpreter(args: &[String], flags: &[&str], what: &str) -> Option<String> {
    let short: Vec<char> = flags
        .iter()
        .filter(|f| !f.starts_with("--"))
        .filter_map(|f| f.chars().nth(1))
        .collect();
    let long = |a: &String| {
        flags
            .iter()
            .any(|f| f.starts_with("--") && (a == f || a.starts_with(&format!("{f}="))))
    };
    match bundle_with(args, &short).or_else(|| args.iter().find(|a| long(a))) {
        Some(flag) => Some(format!("`{flag}` runs its argument as {what}")),
        None => reads_program_from_input(args),
    }
}

/// No operand (only options, none of them a version or help question): the program comes
/// from standard input, as in `curl … | python3`.
fn reads_program_from_input(args: &[String]) -> Option<String> {
    let asks_about_itself = args.iter().any(|a| {
        matches!(
            a.as_str(),
            "-V" | "-v" | "--version" | "-h" | "--help" | "-m" | "-f"
        )
    });
    let operand = args.iter().any(|a| !a.starts_with('-'));
    let from_input = args.iter().any(|a| a == "-") || (!operand && !asks_about_itself);
    from_input.then(|| "it reads its program from its input".to_string())
}

/// `-xyz` bundles with any of `letters`.
fn bundle_with<'a>(args: &'a [String], letters: &[char]) -> Option<&'a String> {
    args.iter().find(|a| {
        a.starts_with('-') && !a.starts_with("--") && a[1..].chars().any(|c| letters.contains(&c))
    })
}

/// `git -c NAME=VALUE` / `--config-env` among the options before the subcommand:
/// configuration can make git run any string as a command (`alias.x=!…`, `core.pager`,
/// `core.fsmonitor`, `diff.external`).
fn git_config(args: &[String]) -> Option<String> {
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        if !arg.starts_with('-') {
            return None;
        }
        if arg.starts_with("-c") || arg.starts_with("--config-env") {
            return Some(format!(
                "`{arg}` before the subcommand sets configuration, which can run any string as \
                 a command"
            ));
        }
        if matches!(
            arg.as_str(),
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" | "--super-prefix"
        ) {
            words.next();
        }
    }
    None
}
