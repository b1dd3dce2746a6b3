//! Permission rules parsed from strings: `tool`, `tool(exact)`, `tool(prefix:*)` and globs
//! (`write(src/**)`, `bash(git *)`).

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use crate::paths::normalize_lexically;
use crate::permissions::bash_subject::{self, Command, basename};
use crate::permissions::normalized_argv::NormalizedArgv;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule `{rule}`: {reason}")]
pub struct RuleError {
    pub rule: String,
    pub reason: String,
}

/// One parsed rule; `raw` is kept to say which rule decided.
#[derive(Debug, Clone)]
pub struct Rule {
    raw: String,
    tool: String,
    matcher: Matcher,
}

#[derive(Debug, Clone)]
enum Matcher {
    Any,
    Exact(Spec),
    Prefix(Spec),
    Glob {
        /// For paths: `*` stays within one directory.
        path: GlobMatcher,
        /// For command lines: `*` matches anything.
        text: GlobMatcher,
    },
}

#[derive(Debug, Clone)]
struct Spec {
    text: String,
    /// The words of the specifier when it reads as one shell command of plain words.
    words: Option<Vec<String>>,
    /// Those words normalised, for deny and ask rules.
    shape: Option<NormalizedArgv>,
}

impl Spec {
    fn new(text: &str) -> Self {
        let parsed = bash_subject::parse(text);
        let command = match parsed.commands.as_slice() {
            [command] if parsed.error.is_none() && command.refusal().is_none() => Some(command),
            _ => None,
        };
        Self {
            text: text.to_string(),
            words: command.map(Command::argv),
            shape: command.map(|c| NormalizedArgv::new(&c.words)),
        }
    }
}

impl std::str::FromStr for Rule {
    type Err = RuleError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &str| RuleError {
            rule: raw.to_string(),
            reason: reason.to_string(),
        };
        let text = raw.trim();
        let (tool, inner) = match text.split_once('(') {
            None => (text, None),
            Some((tool, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| fail("missing `)` at the end"))?;
                (tool.trim(), Some(inner.trim()))
            }
        };
        if tool.is_empty() {
            return Err(fail("missing tool name"));
        }
        if !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(fail("a tool name has only letters, digits, `_` and `-`"));
        }
        let matcher = match inner {
            None => Matcher::Any,
            Some("") => {
                return Err(fail(
                    "empty parentheses; write the tool name alone to match every call",
                ));
            }
            Some(inner) => match inner.strip_suffix(":*") {
                Some("") => return Err(fail("empty prefix before `:*`")),
                Some(prefix) => Matcher::Prefix(Spec::new(prefix.trim_end())),
                None if inner.contains(['*', '?', '[', '{']) => {
                    let build = |literal_separator: bool| {
                        GlobBuilder::new(inner)
                            .literal_separator(literal_separator)
                            .build()
                            .map(|g| g.compile_matcher())
                            .map_err(|e| fail(&format!("bad glob: {e}")))
                    };
                    Matcher::Glob {
                        path: build(true)?,
                        text: build(false)?,
                    }
                }
                None => Matcher::Exact(Spec::new(inner)),
            },
        };
        Ok(Self {
            raw: text.to_string(),
            tool: tool.to_string(),
            matcher,
        })
    }
}

impl Rule {
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Tool names compare without case, so rules written as `Bash(...)` still apply.
    pub fn applies_to_tool(&self, tool: &str) -> bool {
        self.tool.eq_ignore_ascii_case(tool)
    }

    /// True for a bare tool name, which matches every call of the tool.
    pub fn is_any(&self) -> bool {
        matches!(self.matcher, Matcher::Any)
    }

    /// Matches one command (its words). A rule's program name without `/` also matches the
    /// program called by path: `rm:*` covers `/bin/rm -rf x`.
    pub fn matches_command(&self, words: &[String]) -> bool {
        match &self.matcher {
            Matcher::Any => true,
            Matcher::Exact(spec) => spec
                .words
                .as_deref()
                .is_some_and(|w| w.len() == words.len() && words_match(w, words)),
            Matcher::Prefix(spec) => spec
                .words
                .as_deref()
                .is_some_and(|w| w.len() <= words.len() && words_match(w, &words[..w.len()])),
            Matcher::Glob { text, .. } => text.is_match(words.join(" ")),
        }
    }

    /// Matches one command generously, as deny and ask rules do: by its normalised argv
    /// (flag bundles and order, long spellings, the program by path), and words only known
    /// when the line runs count as whatever the rule needs.
    pub fn matches_normalized(&self, command: &Command) -> bool {
        if command.words.is_empty() {
            return false;
        }
        match &self.matcher {
            Matcher::Any => true,
            Matcher::Exact(spec) | Matcher::Prefix(spec) => {
                let exact = matches!(self.matcher, Matcher::Exact(_));
                spec.shape
                    .as_ref()
                    .is_some_and(|rule| NormalizedArgv::new(&command.words).covers(rule, exact))
            }
            Matcher::Glob { text, .. } => {
                let mut argv = command.argv();
                let by_path = text.is_match(argv.join(" "));
                argv[0] = basename(&argv[0]).to_string();
                by_path || text.is_match(argv.join(" "))
            }
        }
    }

    /// Matches a path given in its forms (relative to the workspace, absolute).
    pub fn matches_path(&self, forms: &[&Path]) -> bool {
        forms.iter().any(|form| match &self.matcher {
            Matcher::Any => true,
            Matcher::Exact(spec) => normalize_lexically(Path::new(&spec.text)) == *form,
            Matcher::Prefix(spec) => form.starts_with(normalize_lexically(Path::new(&spec.text))),
            Matcher::Glob { path, .. } => path.is_match(form),
        })
    }
}

fn words_match(rule: &[String], command: &[String]) -> bool {
    match (rule.split_first(), command.split_first()) {
        (Some((r0, r_rest)), Some((c0, c_rest))) => {
            let program = r0 == c0 || (!r0.contains('/') && basename(c0) == r0);
            program && r_rest == c_rest
        }
        _ => rule.is_empty() && command.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn bad_rules_name_the_rule() {
        for bad in [
            "",
            "bash(",
            "bash()",
            "bash(git:*",
            "(ls)",
            "ba sh",
            "write(src/[)",
            "bash(:*)",
        ] {
            let err = bad.parse::<Rule>().unwrap_err();
            assert_eq!(err.rule, bad);
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn command_matching_table() {
        let table = [
            ("bash", "rm -rf /", true),
            ("bash(git status)", "git status", true),
            ("bash(git status)", "git status --short", false),
            ("bash(git:*)", "git push origin main", true),
            ("bash(git:*)", "git", true),
            ("bash(git:*)", "gitk", false),
            ("bash(npm run test:*)", "npm run test -- --watch", true),
            ("bash(npm run test:*)", "npm run build", false),
            ("bash(rm:*)", "/bin/rm -rf /tmp/x", true),
            ("bash(./run.sh)", "./run.sh", true),
            ("bash(./run.sh)", "run.sh", false),
            ("bash(cargo * --release)", "cargo build --release", true),
            ("bash(cargo * --release)", "cargo build", false),
        ];
        for (rule, command, want) in table {
            let rule: Rule = rule.parse().unwrap();
            assert_eq!(
                rule.matches_command(&words(command)),
                want,
                "{} vs {command}",
                rule.raw()
            );
        }
    }

    #[test]
    fn path_matching_table() {
        let table = [
            ("write(src/**)", "src/a/b.rs", true),
            ("write(src/**)", "tests/a.rs", false),
            ("write(src/*.rs)", "src/a/b.rs", false),
            ("write(src/*.rs)", "src/main.rs", true),
            ("write(./README.md)", "README.md", true),
            ("write(docs/../README.md)", "README.md", true),
            ("read(secrets:*)", "secrets/prod.env", true),
            ("read(secrets:*)", "secretsauce", false),
            ("read(**/.env)", ".env", true),
            ("read(**/.env)", "conf/.env", true),
        ];
        for (rule, path, want) in table {
            let rule: Rule = rule.parse().unwrap();
            assert_eq!(
                rule.matches_path(&[Path::new(path)]),
                want,
                "{} vs {path}",
                rule.raw()
            );
        }
    }

    #[test]
    fn tool_names_compare_without_case() {
        let rule: Rule = "Bash(ls:*)".parse().unwrap();
        assert!(rule.applies_to_tool("bash"));
        assert!(!rule.applies_to_tool("read"));
        assert!(!rule.is_any());
    }
}
