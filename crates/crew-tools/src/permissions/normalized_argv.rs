//! The normalised argv deny and ask rules compare: the program without its directory, flags as
//! a set (bundles split, long spellings mapped to short ones, order ignored) and the other
//! words in order. `rm -fr`, `rm -r -f`, `rm -Rf`, `/bin/rm --recursive --force` are one shape.
//! After `--` every word is an operand: `rm -f -- -r` removes a file named `-r`.

use std::collections::BTreeSet;

use super::bash_subject::Word;
use super::command_words::basename;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizedArgv {
    /// `None` when the program name is only known when the line runs.
    pub program: Option<String>,
    pub flags: BTreeSet<String>,
    pub operands: Vec<Operand>,
    /// Some word is only known when the line runs; it could supply any flag or operand.
    pub has_opaque: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operand {
    pub text: String,
    /// Right after a flag, so possibly that flag's argument (`git -C dir push`).
    pub after_flag: bool,
    /// Only known when the line runs: it may be any words.
    pub opaque: bool,
}

/// Long options and the short flag they mean, per program (`*` for any program).
const LONG_TO_SHORT: &[(&str, &str, char)] = &[
    ("*", "--recursive", 'r'),
    ("*", "--force", 'f'),
    ("rm", "--dir", 'd'),
    ("rm", "--interactive", 'i'),
    ("rm", "--verbose", 'v'),
    ("git", "--all", 'a'),
    ("git", "--delete", 'd'),
    ("chmod", "--verbose", 'v'),
];
/// Short flags that are another spelling of a canonical one.
const SHORT_ALIASES: &[(&str, char, char)] = &[
    ("rm", 'R', 'r'),
    ("cp", 'R', 'r'),
    ("chmod", 'R', 'r'),
    ("chown", 'R', 'r'),
    ("chgrp", 'R', 'r'),
];

impl NormalizedArgv {
    pub fn new(words: &[Word]) -> Self {
        let program = words
            .first()
            .filter(|w| w.opaque.is_none())
            .map(|w| basename(&w.text).to_string());
        let name = program.clone().unwrap_or_default();
        let mut flags = BTreeSet::new();
        let mut operands = Vec::new();
        let mut has_opaque = words.first().is_some_and(|w| w.opaque.is_some());
        let mut after_dashdash = false;
        let mut after_flag = false;
        for word in words.iter().skip(1) {
            let text = word.text.as_str();
            if word.opaque.is_some() {
                has_opaque = true;
                operands.push(Operand {
                    text: word.text.clone(),
                    after_flag,
                    opaque: true,
                });
                after_flag = false;
                continue;
            }
            if after_dashdash || !text.starts_with('-') || text == "-" {
                operands.push(Operand {
                    text: text.to_string(),
                    after_flag,
                    opaque: false,
                });
                after_flag = false;
                continue;
            }
            after_flag = true;
            if text == "--" {
                after_dashdash = true;
            } else if let Some(long) = text.strip_prefix("--") {
                flags.insert(long_flag(&name, long.split('=').next().unwrap_or(long)));
            } else {
                for c in text.chars().skip(1) {
                    flags.insert(format!("-{}", short_alias(&name, c)));
                }
            }
        }
        Self {
            program,
            flags,
            operands,
            has_opaque,
        }
    }

    /// True when this command has (at least) the rule's shape; `exact` also wants no extra
    /// operands. Opaque words count as whatever is missing: a deny rule errs towards matching.
    pub fn covers(&self, rule: &NormalizedArgv, exact: bool) -> bool {
        let program_ok = match (&self.program, &rule.program) {
            (Some(have), Some(want)) => have == want,
            _ => true,
        };
        if !program_ok {
            return false;
        }
        let missing_flags = rule.flags.iter().any(|f| !self.has_flag(f));
        if missing_flags && !self.has_opaque {
            return false;
        }
        let mut operands = self.operands.iter();
        for want in &rule.operands {
            let found = operands
                .by_ref()
                .find(|have| have.opaque || have.text == want.text || !have.after_flag);
            match found {
                Some(have) if have.opaque => return true,
                Some(have) if have.text == want.text => {}
                _ => return false,
            }
        }
        !exact || self.has_opaque || operands.all(|rest| rest.after_flag)
    }

    /// A long flag also covers its longer forms (`--force` and `--force-with-lease`).
    fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(flag)
            || (flag.starts_with("--") && self.flags.iter().any(|f| f.starts_with(flag)))
    }
}

/// `--recursive` is `-r`; an abbreviation (`--rec`, as getopt accepts) too.
fn long_flag(program: &str, long: &str) -> String {
    let full = format!("--{long}");
    // A longer form (`--force-with-lease`) counts as the flag it extends: deny errs to match.
    LONG_TO_SHORT
        .iter()
        .filter(|(p, _, _)| *p == "*" || *p == program)
        .find(|(_, name, _)| {
            !long.is_empty() && (name.starts_with(&full) || full.starts_with(&format!("{name}-")))
        })
        .map_or(full, |(_, _, short)| {
            format!("-{}", short_alias(program, *short))
        })
}

fn short_alias(program: &str, c: char) -> char {
    SHORT_ALIASES
        .iter()
        .find(|(p, from, _)| *p == program && *from == c)
        .map_or(c, |(_, _, to)| *to)
}
