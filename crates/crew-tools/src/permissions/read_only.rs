//! The read-only commands: an allow-list of programs, each with the flags it may take, for
//! roles with read-only bash and for running commands side by side. Anything not on the list
//! is not read-only, whatever it does.

use super::bash_subject::{Command, ParsedCommand};
use super::command_words::basename;
use super::escape_hatches::escape_hatch;

/// Programs that only read or print, with any flag (their escape hatches are refused by
/// `escape_hatch`: `find -exec`, `rg --pre`, `sort -o`, `tree -o`…).
const ANY_FLAGS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "stat",
    "file",
    "du",
    "df",
    "which",
    "whoami",
    "id",
    "date",
    "uname",
    "true",
    "false",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "tree",
    "find",
    "sort",
    "uniq",
    "cut",
    "tr",
    "nl",
    "cmp",
    "comm",
    "diff",
    "sed",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "hostname",
    "printenv",
];

/// Git subcommands that only read, with the flags crew has vetted for them (a flag's
/// `=value` form and, for short flags, a glued value like `-n5` are included).
const GIT_READ_ONLY: &[(&[&str], &[&str])] = &[
    (
        &["status"],
        &[
            "-s",
            "--short",
            "-b",
            "--branch",
            "--porcelain",
            "--long",
            "-u",
            "--untracked-files",
            "--ignored",
            "--ignore-submodules",
            "-z",
            "--show-stash",
            "--ahead-behind",
            "--no-ahead-behind",
            "-v",
            "--verbose",
            "--renames",
            "--no-renames",
            "--column",
            "--no-column",
        ],
    ),
    (
        &["log", "show", "diff", "shortlog", "whatchanged"],
        &[
            "-p",
            "-u",
            "--patch",
            "-s",
            "--no-patch",
            "--stat",
            "--shortstat",
            "--numstat",
            "--name-only",
            "--name-status",
            "--summary",
            "--oneline",
            "--format",
            "--pretty",
            "--graph",
            "--decorate",
            "--no-decorate",
            "--all",
            "--branches",
            "--tags",
            "--remotes",
            "-n",
            "--max-count",
            "--skip",
            "--since",
            "--after",
            "--until",
            "--before",
            "--author",
            "--committer",
            "--grep",
            "-i",
            "--regexp-ignore-case",
            "-S",
            "-G",
            "--follow",
            "--first-parent",
            "--merges",
            "--no-merges",
            "--reverse",
            "--date",
            "--abbrev-commit",
            "--no-abbrev-commit",
            "--abbrev",
            "-U",
            "--unified",
            "--cached",
            "--staged",
            "-w",
            "--ignore-all-space",
            "-b",
            "--ignore-space-change",
            "--word-diff",
            "--color",
            "--no-color",
            "--color-words",
            "-M",
            "-C",
            "--find-renames",
            "--find-copies",
            "--diff-filter",
            "--relative",
            "--no-prefix",
            "-R",
            "--check",
            "--exit-code",
            "--quiet",
            "-z",
            "--full-index",
            "--binary",
            "--raw",
            "--dirstat",
            "--merge-base",
            "-c",
            "--cc",
            "-m",
            "--left-right",
            "--cherry-pick",
            "--cherry-mark",
            "--topo-order",
            "--date-order",
            "--no-walk",
            "-L",
            "--minimal",
            "--patience",
            "--histogram",
            "--diff-algorithm",
            "--ignore-blank-lines",
            "--function-context",
            "-W",
            "--no-renames",
            "--full-diff",
            "--source",
            "--log-size",
            "--show-signature",
            "-e",
            "--email",
            "--summary",
            "--numbered",
            "--no-textconv",
            "--no-ext-diff",
            "-1",
            "-2",
            "-3",
            "-4",
            "-5",
            "-6",
            "-7",
            "-8",
            "-9",
        ],
    ),
    (
        &["rev-parse"],
        &[
            "--abbrev-ref",
            "--short",
            "--verify",
            "--show-toplevel",
            "--show-prefix",
            "--show-cdup",
            "--git-dir",
            "--is-inside-work-tree",
            "--symbolic-full-name",
            "-q",
            "--quiet",
            "--absolute-git-dir",
            "--git-common-dir",
            "--is-bare-repository",
        ],
    ),
    (
        &["ls-files"],
        &[
            "-c",
            "--cached",
            "-d",
            "--deleted",
            "-m",
            "--modified",
            "-o",
            "--others",
            "-i",
            "--ignored",
            "-s",
            "--stage",
            "-u",
            "--unmerged",
            "-z",
            "--exclude-standard",
            "-t",
            "--full-name",
            "--error-unmatch",
            "--directory",
            "--no-empty-directory",
        ],
    ),
    (
        &["ls-tree"],
        &[
            "-r",
            "-t",
            "-d",
            "-l",
            "--long",
            "-z",
            "--name-only",
            "--name-status",
            "--full-name",
            "--full-tree",
            "--abbrev",
        ],
    ),
    (
        &["blame", "annotate"],
        &[
            "-L",
            "-l",
            "-s",
            "-e",
            "-w",
            "-M",
            "-C",
            "--porcelain",
            "--line-porcelain",
            "--incremental",
            "-p",
            "-t",
            "--date",
            "--root",
            "--show-email",
            "--show-name",
            "--show-number",
            "-n",
            "-f",
            "-c",
            "--abbrev",
        ],
    ),
    (
        &["describe"],
        &[
            "--tags",
            "--all",
            "--long",
            "--abbrev",
            "--always",
            "--dirty",
            "--exact-match",
            "--first-parent",
            "--match",
            "--exclude",
            "--contains",
        ],
    ),
    (&["cat-file"], &["-t", "-s", "-p", "-e", "--batch-check"]),
    (
        &["merge-base"],
        &["--all", "--is-ancestor", "--fork-point", "--octopus"],
    ),
    (
        &["branch"],
        &[
            "--list",
            "-l",
            "-a",
            "--all",
            "-r",
            "--remotes",
            "-v",
            "-vv",
            "--verbose",
            "--show-current",
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--sort",
            "--format",
            "--points-at",
            "--color",
            "--no-color",
            "--column",
            "--no-column",
        ],
    ),
    (
        &["rev-list"],
        &[
            "--count",
            "--all",
            "--max-count",
            "-n",
            "--reverse",
            "--first-parent",
            "--merges",
            "--no-merges",
            "--left-right",
            "--since",
            "--until",
            "--objects",
        ],
    ),
    (
        &["grep"],
        &[
            "-n",
            "--line-number",
            "-i",
            "--ignore-case",
            "-w",
            "--word-regexp",
            "-l",
            "--files-with-matches",
            "-L",
            "-c",
            "--count",
            "-e",
            "-E",
            "--extended-regexp",
            "-F",
            "--fixed-strings",
            "-P",
            "-v",
            "--invert-match",
            "-h",
            "-H",
            "--cached",
            "--untracked",
            "-A",
            "-B",
            "-C",
            "--context",
            "--heading",
            "--break",
            "-p",
            "--show-function",
            "-q",
            "--quiet",
            "--all-match",
            "--and",
            "--or",
            "--not",
            "--max-depth",
            "-z",
            "--column",
            "-o",
            "--only-matching",
        ],
    ),
    (
        &["show-ref", "for-each-ref"],
        &[
            "--heads", "--tags", "--format", "--sort", "--count", "-s", "--hash", "--verify",
        ],
    ),
    (&["version"], &[]),
];

/// Why `parsed` is not read-only, if it is not: every command must be on the list with
/// allowed flags and made of plain words, and nothing may be redirected into a file.
/// `also_allowed` lets a caller add its own commands (a reviewer's test command).
pub fn read_only_refusal(
    parsed: &ParsedCommand,
    also_allowed: &dyn Fn(&[String]) -> bool,
) -> Option<String> {
    if let Some(error) = &parsed.error {
        return Some(format!("could not parse the command ({error})"));
    }
    if parsed.commands.is_empty() {
        return Some("the line runs no command".to_string());
    }
    parsed
        .commands
        .iter()
        .find_map(|command| command_refusal(command, also_allowed))
}

fn command_refusal(command: &Command, also_allowed: &dyn Fn(&[String]) -> bool) -> Option<String> {
    if let Some(why) = command.refusal() {
        return Some(why);
    }
    let argv = command.argv();
    // An escape hatch is refused whatever else allows the command (a reviewer's own prefixes
    // too), as for allow rules.
    if let Some(why) = escape_hatch(&argv) {
        return Some(why);
    }
    if also_allowed(&argv) {
        return None;
    }
    program_refusal(&argv)
}

/// `argv` of plain words against the allow-list.
fn program_refusal(argv: &[String]) -> Option<String> {
    let program = basename(argv.first()?);
    if ANY_FLAGS.contains(&program) {
        return None;
    }
    if program != "git" {
        return Some(format!("`{}` is not a read-only command", argv.join(" ")));
    }
    let mut args = argv[1..].iter().skip_while(|a| a.starts_with('-'));
    let Some(sub) = args.next() else {
        return Some("`git` without a read-only subcommand".to_string());
    };
    let Some((_, flags)) = GIT_READ_ONLY
        .iter()
        .find(|(subs, _)| subs.contains(&sub.as_str()))
    else {
        return Some(format!("`{}` is not a read-only command", argv.join(" ")));
    };
    let mut operands_only = false;
    for arg in args {
        if arg == "--" {
            operands_only = true;
        } else if !operands_only && arg.starts_with('-') && !flag_vetted(arg, flags) {
            return Some(format!(
                "`git {sub} {arg}`: `{arg}` is not among the flags crew has vetted for `git {sub}`"
            ));
        } else if sub == "branch" && !operands_only && !arg.starts_with('-') {
            return Some("`git branch NAME` creates a branch".to_string());
        }
    }
    None
}

fn flag_vetted(arg: &str, flags: &[&str]) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    flags.iter().any(|f| {
        *f == name
            || (!f.starts_with("--") && f.len() == 2 && name.starts_with(f) && name.len() > 2 && {
                // A short flag with its value glued on: `-n5`, `-U3`.
                name[2..].chars().all(|c| c.is_ascii_digit())
            })
    }) || arg.len() > 1 && arg[1..].chars().all(|c| c.is_ascii_digit())
}
