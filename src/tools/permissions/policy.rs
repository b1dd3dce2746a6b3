//! The permission decision for one call, in a fixed order:
//! workspace boundary and deny rules → hook decision → ask rules → allow rules → mode default.
//! Nothing after a deny can turn it into an allow; a hook may deny or ask, and its allow
//! still loses to a deny rule.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::tools::paths::{relative_to, resolve_within};
use crate::tools::permissions::bash_subject;
use crate::tools::permissions::mode::PermissionMode;
use crate::tools::permissions::rule::{Rule, RuleError};
use crate::tools::tool::{Subject, ToolKind};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "decision", content = "reason")]
pub enum Decision {
    Allow,
    Deny(String),
    Ask(String),
}

/// Who decided, for the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "by", content = "detail")]
pub enum DecidedBy {
    /// A path outside the workspace (or escaping it through a link).
    Workspace,
    DenyRule(String),
    Hook,
    /// The command could not be split into commands, so no rule could vouch for it.
    UnparsedCommand,
    AskRule(String),
    AllowRule(String),
    Mode(PermissionMode),
    /// A person or headless policy answered an ask.
    Prompter,
    /// An ask with no prompter to answer it: denied.
    NoPrompter,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionOutcome {
    pub decision: Decision,
    pub decided_by: DecidedBy,
}

impl PermissionOutcome {
    pub fn new(decision: Decision, decided_by: DecidedBy) -> Self {
        Self {
            decision,
            decided_by,
        }
    }
}

/// A PreToolUse hook's `permissionDecision`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookPermission {
    Allow,
    Deny(String),
    Ask(String),
}

/// Rule strings as configuration holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuleSet {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

/// Both switches `bypass` needs: configuration allows it, and the user asked for it now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BypassSwitches {
    pub config_allows: bool,
    pub flag_given: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error(
        "bypass mode needs both `allow_bypass = true` in configuration and the command-line flag"
    )]
    BypassNotAllowed,
}

/// What one call asks permission for.
#[derive(Debug, Clone, Copy)]
pub struct PermissionQuery<'a> {
    pub tool: &'a str,
    pub kind: ToolKind,
    pub subject: &'a Subject,
    /// Where paths may point; the first root is the workspace, against which relative paths
    /// resolve and rules match.
    pub roots: &'a [&'a Path],
}

#[derive(Debug)]
pub struct PermissionPolicy {
    mode: PermissionMode,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
    /// Allow rules added during the session ("always allow").
    remembered: Mutex<Vec<Rule>>,
}

/// The subject as rules see it.
enum Resolved {
    None,
    Commands(Vec<Vec<String>>),
    Unparsed(String),
    Path(PathBuf, Option<PathBuf>),
}

impl PermissionPolicy {
    pub fn new(
        mode: PermissionMode,
        rules: &RuleSet,
        bypass: BypassSwitches,
    ) -> Result<Self, PolicyError> {
        if mode == PermissionMode::Bypass && !(bypass.config_allows && bypass.flag_given) {
            return Err(PolicyError::BypassNotAllowed);
        }
        let parse = |list: &[String]| {
            list.iter()
                .map(|r| r.parse::<Rule>())
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            mode,
            deny: parse(&rules.deny)?,
            ask: parse(&rules.ask)?,
            allow: parse(&rules.allow)?,
            remembered: Mutex::new(Vec::new()),
        })
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// Adds an allow rule for the rest of the session (an "always allow" answer).
    pub fn remember(&self, rule: Rule) {
        self.remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(rule);
    }

    pub fn decide(
        &self,
        query: &PermissionQuery<'_>,
        hook: Option<&HookPermission>,
    ) -> PermissionOutcome {
        let resolved = match resolve(query) {
            Ok(resolved) => resolved,
            Err(reason) => {
                return PermissionOutcome::new(Decision::Deny(reason), DecidedBy::Workspace);
            }
        };
        if let Some(rule) = first_match(&self.deny, query.tool, &resolved, Quantifier::Any) {
            return PermissionOutcome::new(
                Decision::Deny(format!("denied by rule `{rule}`")),
                DecidedBy::DenyRule(rule),
            );
        }
        match hook {
            Some(HookPermission::Deny(reason)) => {
                return PermissionOutcome::new(Decision::Deny(reason.clone()), DecidedBy::Hook);
            }
            Some(HookPermission::Ask(reason)) => {
                return PermissionOutcome::new(Decision::Ask(reason.clone()), DecidedBy::Hook);
            }
            Some(HookPermission::Allow) => {
                return PermissionOutcome::new(Decision::Allow, DecidedBy::Hook);
            }
            None => {}
        }
        if let Some(rule) = first_match(&self.ask, query.tool, &resolved, Quantifier::Any) {
            return PermissionOutcome::new(
                Decision::Ask(format!("rule `{rule}` asks first")),
                DecidedBy::AskRule(rule),
            );
        }
        let remembered = self
            .remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let allow_rules: Vec<Rule> = self
            .allow
            .iter()
            .chain(remembered.iter())
            .cloned()
            .collect();
        drop(remembered);
        if let Some(rule) = first_match(&allow_rules, query.tool, &resolved, Quantifier::Every) {
            return PermissionOutcome::new(Decision::Allow, DecidedBy::AllowRule(rule));
        }
        if let Resolved::Unparsed(reason) = &resolved {
            // Specific rules could not be checked, so not even a permissive mode may allow it.
            return PermissionOutcome::new(
                Decision::Ask(format!(
                    "could not parse the command ({reason}); no rule can vouch for it"
                )),
                DecidedBy::UnparsedCommand,
            );
        }
        PermissionOutcome::new(
            self.mode.default_decision(query.kind),
            DecidedBy::Mode(self.mode),
        )
    }
}

fn resolve(query: &PermissionQuery<'_>) -> Result<Resolved, String> {
    Ok(match query.subject {
        Subject::None => Resolved::None,
        Subject::Command(command) => match bash_subject::parse(command) {
            Ok(parsed) => Resolved::Commands(parsed.commands),
            Err(e) => Resolved::Unparsed(e.to_string()),
        },
        Subject::Path(raw) => {
            let absolute = resolve_within(query.roots, raw).map_err(|e| e.to_string())?;
            let relative = query
                .roots
                .first()
                .and_then(|ws| relative_to(&absolute, ws));
            Resolved::Path(absolute, relative)
        }
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Quantifier {
    /// Deny and ask: one matching command is enough.
    Any,
    /// Allow: every command of a compound line must be covered (by any allow rules).
    Every,
}

/// The raw text of the rule(s) that match, joined with ", " when several cover a compound line.
fn first_match(
    rules: &[Rule],
    tool: &str,
    subject: &Resolved,
    quantifier: Quantifier,
) -> Option<String> {
    let mut rules = rules.iter().filter(|r| r.applies_to_tool(tool));
    match subject {
        Resolved::None | Resolved::Unparsed(_) => {
            rules.find(|r| r.is_any()).map(|r| r.raw().to_string())
        }
        Resolved::Path(absolute, relative) => {
            let forms: Vec<&Path> = relative
                .iter()
                .map(PathBuf::as_path)
                .chain([absolute.as_path()])
                .collect();
            rules
                .find(|r| r.matches_path(&forms))
                .map(|r| r.raw().to_string())
        }
        Resolved::Commands(commands) => {
            let rules: Vec<&Rule> = rules.collect();
            if let Some(any) = rules.iter().find(|r| r.is_any()) {
                return Some(any.raw().to_string());
            }
            let mut matched: Vec<&str> = Vec::new();
            for command in commands {
                match rules.iter().find(|r| r.matches_command(command)) {
                    Some(rule) if quantifier == Quantifier::Any => {
                        return Some(rule.raw().to_string());
                    }
                    Some(rule) => {
                        if !matched.contains(&rule.raw()) {
                            matched.push(rule.raw());
                        }
                    }
                    None if quantifier == Quantifier::Every => return None,
                    None => {}
                }
            }
            (!matched.is_empty()).then(|| matched.join(", "))
        }
    }
}
