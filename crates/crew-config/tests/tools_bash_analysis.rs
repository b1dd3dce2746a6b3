//! The bash analysis as an attacker meets it (issue 9, part 2): allow rules and the read-only
//! list grant only plain commands without escape hatches; deny rules catch every spelling of
//! a command anywhere in a line; `crew init`'s rules are safe as shipped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::Path;

use crew_config::{TeamConfig, init_template};
use crew_tools::permissions::bash_subject::parse;
use crew_tools::permissions::read_only::read_only_refusal;
use crew_tools::permissions::{
    BypassSwitches, DecidedBy, Decision, PermissionMode, PermissionPolicy, PermissionQuery, RuleSet,
};
use crew_tools::{Subject, ToolKind};
use proptest::prelude::*;

fn policy(mode: PermissionMode, allow: &[&str], deny: &[&str]) -> PermissionPolicy {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    let rules = RuleSet {
        allow: owned(allow),
        ask: Vec::new(),
        deny: owned(deny),
    };
    let switches = BypassSwitches {
        config_allows: true,
        flag_given: true,
    };
    PermissionPolicy::new(mode, &rules, switches).unwrap()
}

/// The policy `crew init` ships.
fn template_policy() -> PermissionPolicy {
    let config = TeamConfig::parse(
        Path::new("crew.toml"),
        &init_template("web", "main", &Default::default()),
    )
    .unwrap();
    let p = &config.permissions;
    let mode: PermissionMode = p.mode.get_ref().parse().unwrap();
    let rules = RuleSet {
        allow: p.allow.clone(),
        ask: p.ask.clone(),
        deny: p.deny.clone(),
    };
    PermissionPolicy::new(mode, &rules, BypassSwitches::default()).unwrap()
}

fn decide(policy: &PermissionPolicy, command: &str) -> (Decision, DecidedBy) {
    let subject = Subject::Command(command.to_string());
    let roots = [Path::new("/work/ws")];
    let query = PermissionQuery {
        tool: "bash",
        kind: ToolKind::Exec,
        subject: &subject,
        roots: &roots,
    };
    let outcome = policy.decide(&query, None);
    (outcome.decision, outcome.decided_by)
}

/// The issue's rules: `allow = ["bash(git status)", "bash(git diff:*)"]`.
fn issue_policy() -> PermissionPolicy {
    policy(
        PermissionMode::Ask,
        &["bash(git status)", "bash(git diff:*)"],
        &["bash(rm -rf:*)"],
    )
}

/// Asserts `command` asks (is not granted) and the reason contains `why`.
fn assert_asks(policy: &PermissionPolicy, command: &str, why: &str) {
    match decide(policy, command) {
        (Decision::Ask(reason), _) => {
            assert!(
                reason.contains(why),
                "{command}: reason `{reason}` lacks `{why}`"
            );
        }
        other => panic!("{command}: expected an ask, got {other:?}"),
    }
}

fn assert_denied(policy: &PermissionPolicy, command: &str) {
    let (decision, by) = decide(policy, command);
    assert!(
        matches!(decision, Decision::Deny(_)),
        "{command}: {decision:?} by {by:?}"
    );
}

/// Each finding of the issue, with variants: (command, words the reason must contain).
const GRANTED_BEFORE: &[(&str, &str)] = &[
    // `git diff > FILE`
    ("git diff > FILE", "writes to a file"),
    ("git diff >> FILE", "writes to a file"),
    ("git diff >| FILE", "writes to a file"),
    ("git diff &> FILE", "writes to a file"),
    ("git diff 2> FILE", "writes to a file"),
    ("git diff >&FILE", "writes to a file"),
    ("git diff > /work/ws/.git/config", "writes to a file"),
    ("git status > FILE", "writes to a file"),
    ("{ git status; } > FILE", "writes to a file"),
    ("(git status) > FILE", "writes to a file"),
    ("git status | git diff > FILE", "writes to a file"),
    // `git diff --output=FILE`
    ("git diff --output=FILE", "--output"),
    ("git diff --output FILE", "--output"),
    ("git diff --outp=FILE", "--outp"),
    ("git diff HEAD --output=FILE -- src", "--output"),
    ("git diff '--output=FILE'", "--output"),
    ("git diff \"--output\"=FILE", "--output"),
    ("git diff --ext-diff", "--ext-diff"),
    ("git diff --no-index a b", "--no-index"),
    ("git diff --no-index /etc/passwd /dev/null", "--no-index"),
    ("git diff --textconv", "--textconv"),
    // `GIT_EXTERNAL_DIFF='touch X' git diff --no-index a b`, also behind `env`
    (
        "GIT_EXTERNAL_DIFF='touch X' git diff --no-index a b",
        "GIT_EXTERNAL_DIFF=",
    ),
    ("GIT_EXTERNAL_DIFF='touch X' git diff", "GIT_EXTERNAL_DIFF="),
    (
        "env GIT_EXTERNAL_DIFF='touch X' git diff --no-index a b",
        "GIT_EXTERNAL_DIFF=",
    ),
    (
        "env GIT_EXTERNAL_DIFF='touch X' git diff",
        "GIT_EXTERNAL_DIFF=",
    ),
    (
        "env -i GIT_EXTERNAL_DIFF='touch X' git diff",
        "GIT_EXTERNAL_DIFF=",
    ),
    (
        "/usr/bin/env GIT_EXTERNAL_DIFF='touch X' git diff",
        "GIT_EXTERNAL_DIFF=",
    ),
    ("env -- GIT_PAGER='touch X' git diff", "GIT_PAGER="),
    ("PATH=/tmp/evil:$PATH git status", "PATH="),
    ("PATH=/tmp/evil; git status", "sets a variable"),
    (
        "export PATH=/tmp/evil; git status",
        "changes shell variables",
    ),
    ("env -C /tmp/evil git status", "another directory"),
    // `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch X' git status`
    (
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch X' git status",
        "GIT_CONFIG_COUNT=",
    ),
    (
        "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch X' git status",
        "GIT_CONFIG_COUNT=",
    ),
    ("GIT_DIR=/tmp/evil git status", "GIT_DIR="),
    ("git -c core.fsmonitor='touch X' status", "`-c`"),
    ("git -c core.pager='touch X' diff", "`-c`"),
    ("git --config-env=core.fsmonitor=X status", "--config-env"),
    ("git -C /tmp/evil status", "`-C`"),
    ("git --git-dir=/tmp/evil/.git status", "--git-dir"),
    ("git --work-tree=/ diff", "--work-tree"),
    ("git --exec-path=/tmp/evil diff", "--exec-path"),
    // `git diff ${X:-$(touch X)}`
    ("git diff ${X:-$(touch X)}", "runs a command"),
    ("git diff ${X:-`touch X`}", "runs a command"),
    ("git diff \"${X:-$(touch X)}\"", "runs a command"),
    ("git diff $(touch X)", "runs a command"),
    ("git diff `touch X`", "runs a command"),
    ("git diff \"$(touch X)\"", "runs a command"),
    ("git diff a$(touch X)b", "runs a command"),
    ("git diff $X", "expands a variable"),
    ("git diff ${X}", "expands a variable"),
    ("git diff <(touch X)", "runs a command"),
    ("git diff >(touch X)", "runs a command"),
    ("git diff *", "glob"),
    ("git diff {a,b}", "brace"),
    // `git diff $(( $(touch X) 0 ))`
    ("git diff $(( $(touch X) 0 ))", "could not parse"),
    ("git diff $(( $(touch X) + 0 ))", "arithmetic"),
    ("git diff $((1+1))", "arithmetic"),
    ("git diff $(( a[$(touch X)] ))", "arithmetic"),
    ("[[ 1 -eq 'a[$(touch X)]' ]] && git status", "arithmetic"),
    ("(( a[$(touch X)] )); git status", "arithmetic"),
    // More of the class.
    ("git status; touch X", "asks before exec tools run"),
    ("git status && touch X", "asks before exec tools run"),
    ("git status | sh", "runs a string as code"),
    ("git() { touch X; }; git status", "shell function"),
    ("git status <<EOF\n$(touch X)\nEOF", "here-document"),
    ("git diff <<< \"$(touch X)\"", "here-string"),
    ("sh -c 'git status; touch X'", "asks before exec tools run"),
    ("git status 'unterminated", "could not parse"),
    ("xargs git diff", "xargs"),
    ("git difftool", "runs other programs"),
    ("git diffx", "alias"),
    // Issue 21: a path outside the work tree, and denied commands said as code.
    ("git diff /dev/null ~/.ssh/id_rsa", "outside the work tree"),
    ("git diff ../../.ssh/id_rsa", "outside the work tree"),
    ("echo 'rm -rf x' | sh", "runs a string as code"),
    (
        "python3 -c 'import shutil; shutil.rmtree(\"x\")'",
        "runs a string as code",
    ),
    ("git -c alias.x='!rm -rf x' x", "runs a string as code"),
    ("perl -e 'system(\"rm -rf x\")'", "runs a string as code"),
];

#[test]
fn every_finding_of_the_issue_asks_and_says_why() {
    let policy = issue_policy();
    for (command, why) in GRANTED_BEFORE {
        assert_asks(&policy, command, why);
    }
}

#[test]
fn plain_forms_are_still_granted() {
    let policy = issue_policy();
    for command in [
        "git status",
        "git diff",
        "git diff --stat HEAD~1 -- src",
        "git diff 2>/dev/null",
        "git diff >/dev/null 2>&1",
        "git diff 2>&1 >&2",
        "git status && git diff --cached",
        "'git' \"diff\" --name-only",
        "timeout 10 git status",
        "nohup git diff",
        "sh -c 'git status && git diff'",
        "git diff < /dev/null",
        "cat <<'EOF' | git diff --stat\nnot $(run)\nEOF",
    ] {
        let (decision, by) = decide(&policy, command);
        // `cat` is not covered here: only lines made of covered commands are allowed.
        if command.starts_with("cat") {
            assert!(
                matches!(decision, Decision::Ask(_)),
                "{command}: {decision:?}"
            );
            continue;
        }
        assert_eq!(decision, Decision::Allow, "{command}: {by:?}");
    }
}

#[test]
fn the_reviewers_read_only_bash_refuses_the_same_lines_and_find_actions() {
    let nothing_else = |_: &[String]| false;
    let refusal = |command: &str| read_only_refusal(&parse(command), &nothing_else);
    for (command, _) in GRANTED_BEFORE {
        assert!(refusal(command).is_some(), "{command} counted as read-only");
    }
    for command in [
        "find . -fprint0 FILE",
        "find . -fprint FILE",
        "find . -fprintf FILE %p",
        "find . -fls FILE",
        "find . -delete",
        "find . -exec touch X ';'",
        "find . -execdir touch X +",
        "find . -ok rm {} ;",
        "sed -i s/a/b/ f",
        "sed --in-place s/a/b/ f",
        "sed -n 'w out' f",
        "sed 's/a/b/w out' f",
        "sed -n '1e touch X' f",
        // The script glued to its flag, and three-letter abbreviations (found in review).
        "sed '--expression=1e touch X' f",
        "sed '-e1e touch X' f",
        "sed -ne1e\\ touch\\ X f",
        "sed --exp='1e touch X' f",
        "sed --i s/a/b/ f",
        "sort --o=FILE f",
        "sort -o FILE f",
        "sort --output=FILE f",
        "sort -uo FILE f",
        "tee FILE",
        "rg --pre ./x pattern",
        "rg --pre=./x pattern",
        "tree -o FILE",
        "uniq a FILE",
        "awk '{ system(\"touch X\") }' f",
        "git log --output=FILE",
        "git show --ext-diff",
        "git grep -O pattern",
        "git log --unknown-flag",
        "git branch evil",
        "git commit -m x",
        "git checkout -- .",
        "cat /proc/$PPID/environ",
        "npm test",
        "less +!touch\\ X f",
        "date -s 2020-01-01",
    ] {
        assert!(refusal(command).is_some(), "{command} counted as read-only");
    }
    for command in [
        "ls -la",
        "cat a | grep -n x | wc -l",
        "find . -name '*.rs' -type f",
        "git status --short",
        "git log --oneline -n 5 --stat -- src",
        "git diff --cached --name-only",
        "git show HEAD~1:src/main.rs",
        "git blame -L 1,10 src/main.rs",
        "rg -n 'fn main' src",
        "sed -n 10,20p src/main.rs",
        "sed -n 's/a/b/p' f",
        "sort -u f | uniq -c",
        "head -n 5 f 2>/dev/null",
        "git branch --show-current",
    ] {
        assert_eq!(refusal(command), None, "{command}");
    }
    assert!(
        refusal("find . -fprint0 FILE")
            .unwrap()
            .contains("`-fprint0` runs commands or writes files"),
        "{:?}",
        refusal("find . -fprint0 FILE")
    );
}

/// Every spelling of `rm -rf` a deny rule `bash(rm -rf:*)` must stop.
const RM_RF_SPELLINGS: &[&str] = &[
    // Found in review: the shortest abbreviations, and wrappers' long options with a value.
    "rm --r --f x",
    "nice --adjustment 5 rm -rf x",
    "nice --adj 5 rm -rf x",
    "timeout --signal KILL 60 rm -rf x",
    "timeout --kill-after 5 60 rm -rf x",
    "sudo --user root rm -rf x",
    "stdbuf --output L rm -rf x",
    "ionice --class 3 rm -rf x",
    "rm -rf x",
    "rm -fr x",
    "rm -r -f x",
    "rm -f -r x",
    "rm -Rf x",
    "rm -fR x",
    "rm -R -f x",
    "rm -vfr x",
    "rm -r -v -f x",
    "rm --recursive --force x",
    "rm --force --recursive x",
    "rm -r --force x",
    "rm --recursive -f x",
    "rm --rec --for x",
    "rm -rf -- x",
    "rm x -rf",
    "/bin/rm -rf x",
    "/usr/bin/rm -fr x",
    "./rm -rf x",
    "\\rm -rf x",
    "'rm' -rf x",
    "\"rm\" -rf x",
    "r\"\"m -rf x",
    "r'm' -rf x",
    "$'rm' -rf x",
    "$'\\x72m' -rf x",
    "rm '-rf' x",
    "rm \"-fr\" x",
    "sudo rm -rf x",
    "sudo -u root rm -rf x",
    "env rm -rf x",
    "env -i PATH=/bin rm -rf x",
    "nohup rm -rf x",
    "nice -n 5 rm -rf x",
    "timeout 5 rm -rf x",
    "timeout -s KILL 5 rm -rf x",
    "command rm -rf x",
    "exec rm -rf x",
    "time rm -rf x",
    "stdbuf -o0 rm -rf x",
    "setsid rm -rf x",
    "xargs rm -rf",
    "echo x | xargs -n 1 rm -rf",
    "find . -exec rm -rf {} ';'",
    "find . -execdir rm -fr {} +",
    "echo $(rm -rf x)",
    "echo \"$(rm -rf x)\"",
    "echo `rm -rf x`",
    "true ${X:-$(rm -rf x)}",
    "true \"${X:-$(rm -rf x)}\"",
    "echo $(( $(rm -rf x) 0 ))",
    "echo $(( $(rm -rf x) + 0 ))",
    "cat <(rm -rf x)",
    "echo >(rm -rf x)",
    "cat <<EOF\n$(rm -rf x)\nEOF",
    "cat <<< \"$(rm -rf x)\"",
    "X=$(rm -rf x)",
    "X=$(rm -rf x) ls",
    "sh -c 'rm -rf x'",
    "bash -c \"rm -rf x\"",
    "bash -lc 'cd / && rm -rf x'",
    "/bin/sh -c 'rm -fr x'",
    "sh -c \"sh -c 'rm -r -f x'\"",
    "eval 'rm -rf x'",
    "eval rm -rf x",
    "env -S 'rm -rf x'",
    "bash <<'EOF'\nrm -rf x\nEOF",
    "sh <<< 'rm -rf x'",
    "(rm -rf x)",
    "{ rm -rf x; }",
    "if true; then rm -rf x; fi",
    "while false; do rm -rf x; done",
    "for f in a; do rm -rf $f; done",
    "case a in a) rm -rf x;; esac",
    "f() { rm -rf x; }; f",
    "ls; rm -rf x",
    "ls && rm -rf x",
    "ls || rm -rf x",
    "ls | rm -rf x",
    "ls & rm -rf x",
    "! rm -rf x",
    "rm -rf x > /dev/null 2>&1",
    "ls\nrm -rf x",
    "rm -rf $DIR",
    "rm $FLAGS x",
    "$RM -rf x",
    "$(echo rm) -rf x",
    "rm -rf x 'unterminated",
    "eval \"$X\"",
];

/// Commands a `bash(rm -rf:*)` deny rule leaves alone.
const NOT_RM_RF: &[&str] = &[
    "rm -f x",
    "rm -r x",
    "rm x",
    "rm -f -- -r",
    "echo rm -rf x",
    "git commit -m 'rm -rf x'",
    "grep -rf patterns .",
    "cat <<'EOF'\nrm -rf x\nEOF",
    "ls # rm -rf x",
];

#[test]
fn deny_rules_match_every_spelling_anywhere_in_the_line() {
    for mode in [
        PermissionMode::Ask,
        PermissionMode::WorkspaceWrite,
        PermissionMode::Bypass,
    ] {
        let rules = RuleSet {
            allow: vec!["bash".to_string()],
            ask: Vec::new(),
            deny: vec!["bash(rm -rf:*)".to_string()],
        };
        let switches = BypassSwitches {
            config_allows: true,
            flag_given: true,
        };
        let policy = PermissionPolicy::new(mode, &rules, switches).unwrap();
        for command in RM_RF_SPELLINGS {
            let (decision, by) = decide(&policy, command);
            assert!(
                matches!(&decision, Decision::Deny(r) if r.contains("bash(rm -rf:*)")),
                "{command} in {mode:?}: {decision:?} by {by:?}"
            );
        }
        for command in NOT_RM_RF {
            let (decision, _) = decide(&policy, command);
            assert_eq!(decision, Decision::Allow, "{command} in {mode:?}");
        }
    }
}

#[test]
fn deny_rules_see_through_git_options_and_flag_spellings() {
    let policy = policy(
        PermissionMode::Bypass,
        &["bash"],
        &["bash(git push --force:*)", "bash(git reset --hard:*)"],
    );
    for command in [
        "git push --force origin main",
        "git push -f origin main",
        "git push origin main --force",
        "git push --force-with-lease",
        "git -C . push -f",
        "git -c user.name=x push -f",
        "git --no-pager push --force",
        "/usr/bin/git push -f",
        "git reset --hard HEAD~3",
        "git reset HEAD~3 --hard",
        "sh -c 'git reset --hard'",
    ] {
        assert_denied(&policy, command);
    }
    for command in [
        "git push origin main",
        "git reset --soft HEAD~1",
        "git commit -m push",
    ] {
        let (decision, _) = decide(&policy, command);
        assert_eq!(decision, Decision::Allow, "{command}");
    }
}

#[test]
fn crew_init_rules_are_safe_as_shipped() {
    let policy = template_policy();
    for (command, why) in GRANTED_BEFORE {
        assert_asks(&policy, command, why);
    }
    for command in RM_RF_SPELLINGS {
        assert_denied(&policy, command);
    }
    for command in ["git push", "git -C . push origin", "sh -c 'git push -f'"] {
        assert_denied(&policy, command);
    }
    // Still useful: the everyday read-only git commands run without asking.
    for command in [
        "git status",
        "git diff",
        "git diff --stat",
        "git diff HEAD~1 -- src",
        "git log --oneline -n 10",
        "git log -p -- src/main.rs",
        "git show HEAD",
        "git status && git diff",
    ] {
        assert_eq!(decide(&policy, command).0, Decision::Allow, "{command}");
    }
    assert_eq!(
        decide(&policy, "eval \"$X\"").0,
        Decision::Deny(
            "denied by rule `bash(rm -rf:*)` (`\"$X\"`: `\"$X\"` is only known when it runs and \
             could complete it)"
                .to_string()
        )
    );
    assert_asks(
        &policy,
        "git diff --output=FILE",
        "`git diff` with `--output=FILE` writes its output to a file",
    );
}

/// Safe words around which the property test puts one dangerous construct.
fn plain_word() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9./_-]{0,8}"
}

/// A construct that keeps a command from being plain, with `w` a plain word inside it.
fn hazard(w: String) -> Vec<String> {
    vec![
        format!("$({w})"),
        format!("`{w}`"),
        format!("${{{w}}}"),
        format!("${{X:-$({w})}}"),
        format!("$(({w}))"),
        format!("$(( $({w}) 0 ))"),
        format!("<({w})"),
        format!(">({w})"),
        format!("\"$({w})\""),
        format!("\"`{w}`\""),
        format!("\"${{X:-{w}}}\""),
        format!("a$({w})"),
        format!("> {w}"),
        format!(">{w}"),
        format!(">> {w}"),
        format!("&> {w}"),
        format!(">| {w}"),
        format!("2> {w}"),
        format!("1>{w}"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// No line with `$(`, backticks, `${`, `$((`, `<(`, `>` into a file or an assignment before
    /// the command is ever granted by an allow rule, wherever the construct sits.
    #[test]
    fn no_dangerous_construct_is_ever_granted_by_an_allow_rule(
        program in prop::sample::select(vec!["git diff", "git status", "ls", "echo", "cat", "git log"]),
        before in prop::collection::vec(plain_word(), 0..3),
        after in prop::collection::vec(plain_word(), 0..3),
        inner in plain_word(),
        which in 0usize..19,
        assignment in prop::option::of(("[A-Z_][A-Z0-9_]{0,6}", plain_word())),
        via_env in any::<bool>(),
        joiner in prop::sample::select(vec![" ", "; ", " && ", " | "]),
    ) {
        let policy = policy(
            PermissionMode::Ask,
            &["bash(git diff:*)", "bash(git status:*)", "bash(ls:*)", "bash(echo:*)",
              "bash(cat:*)", "bash(git log:*)"],
            &[],
        );
        let construct = hazard(inner.clone()).swap_remove(which);
        let mut words = vec![program.to_string()];
        words.extend(before);
        words.push(construct.clone());
        words.extend(after.clone());
        let line = words.join(" ");
        let (decision, _) = decide(&policy, &line);
        prop_assert!(decision != Decision::Allow, "granted: {line}");
        // The same construct in a second command of the line.
        let compound = format!("ls{joiner}{line}");
        let (decision, _) = decide(&policy, &compound);
        prop_assert!(decision != Decision::Allow, "granted: {compound}");
        if let Some((name, value)) = assignment {
            let prefix = if via_env { "env " } else { "" };
            let line = format!("{prefix}{name}={value} {program} {}", after.join(" "));
            let (decision, _) = decide(&policy, &line);
            prop_assert!(decision != Decision::Allow, "granted: {line}");
        }
    }

    /// Deny rules: any bundle order and split of `-r`/`-f` (with other flags mixed in), by
    /// any path, anywhere in the line.
    #[test]
    fn every_flag_spelling_of_rm_rf_is_denied(
        flags in Just(vec!["r", "f", "v", "R"]).prop_shuffle(),
        split in 0usize..4,
        long in any::<bool>(),
        dir in prop::sample::select(vec!["", "/bin/", "/usr/bin/", "./"]),
        wrap in 0usize..5,
        target in plain_word(),
    ) {
        let flags: Vec<&str> = flags.into_iter().filter(|f| *f != "R" || !long).collect();
        let spelled = if long {
            flags.iter().map(|f| match *f {
                "r" => "--recursive".to_string(),
                "f" => "--force".to_string(),
                other => format!("-{other}"),
            }).collect::<Vec<_>>().join(" ")
        } else {
            let (a, b) = flags.split_at(split.min(flags.len()));
            [a, b].iter().filter(|p| !p.is_empty()).map(|p| format!("-{}", p.concat()))
                .collect::<Vec<_>>().join(" ")
        };
        let command = format!("{dir}rm {spelled} {target}");
        let line = match wrap {
            0 => command,
            1 => format!("echo $({command})"),
            2 => format!("sh -c '{command}'"),
            3 => format!("true ${{X:-$({command})}}"),
            _ => format!("sudo {command}"),
        };
        let policy = policy(PermissionMode::Bypass, &["bash"], &["bash(rm -rf:*)"]);
        let (decision, _) = decide(&policy, &line);
        prop_assert!(matches!(decision, Decision::Deny(_)), "not denied: {line}");
    }
}

#[test]
fn a_reviewers_own_prefixes_never_grant_an_escape_hatch() {
    // As a reviewer whose test command is `git diff`: the plain form runs, hatches do not.
    let git_diff = |argv: &[String]| argv.len() >= 2 && argv[0] == "git" && argv[1] == "diff";
    let refusal = |command: &str| read_only_refusal(&parse(command), &git_diff);
    assert_eq!(refusal("git diff --stat"), None);
    for command in [
        "git diff --output=FILE",
        "git diff --ext-diff",
        "git diff --no-index /etc/passwd x",
    ] {
        assert!(
            refusal(command).is_some(),
            "{command} granted by the prefix"
        );
    }
}
