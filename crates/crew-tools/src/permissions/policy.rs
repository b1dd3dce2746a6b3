//! The permission decision for one call, in the seeds' trust order:
//! workspace boundary → deny (rule, then hook) → ask (rule, then hook) → hook allow → allow
//! rules → mode default. Nothing after a deny can turn it into an allow, and a hook's allow
//! loses to every deny and ask the settings hold: a hook can tighten, not loosen, the rules.
//! A command that runs a string as code (`code_strings`) asks right after the denies while
//! any deny rule exists, and no allow rule but the bare tool rule grants it.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::paths::{relative_to, resolve_within};
use crate::permissions::bash_subject::{self, ParsedCommand};
use crate::permissions::code_strings::runs_code;
use crate::permissions::escape_hatches::escape_hatch;
use crate::permissions::mode::{PermissionMode, default_decision, settle_ask};
use crate::permissions::read_only::read_only_refusal;
use crate::permissions::rule::{Rule, RuleError};
use crate::tool::{Subject, ToolKind};

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
    /// The command runs a string as code, which deny rules cannot see into.
    CodeString,
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
    Commands(ParsedCommand),
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

    /// As [`Self::remember`], for a rule as a person wrote it; one that does not parse is logged
    /// and dropped (the call it came with is still allowed once).
    pub fn remember_written(&self, rule: &str) {
        match rule.parse::<Rule>() {
            Ok(rule) => self.remember(rule),
            Err(e) => tracing::warn!(error = %e, "\"always allow\" rule not remembered"),
        }
    }

    pub fn decide(
        &self,
        query: &PermissionQuery<'_>,
        hook: Option<&HookPermission>,
    ) -> PermissionOutcome {
        let mut outcome = self.decide_in_order(query, hook);
        if let Decision::Ask(reason) = outcome.decision {
            outcome.decision = settle_ask(self.mode, reason);
        }
        outcome
    }

    fn decide_in_order(
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
        if let Some((rule, detail)) = first_match(&self.deny, query.tool, &resolved) {
            return PermissionOutcome::new(
                Decision::Deny(format!("denied by rule `{rule}`{detail}")),
                DecidedBy::DenyRule(rule),
            );
        }
        if let Some(HookPermission::Deny(reason)) = hook {
            return PermissionOutcome::new(Decision::Deny(reason.clone()), DecidedBy::Hook);
        }
        if !self.deny.is_empty()
            && let Resolved::Commands(parsed) = &resolved
            && let Some(why) = parsed.commands.iter().find_map(|c| runs_code(&c.argv()))
        {
            // Neither a hook nor an allow rule may open it: a deny rule cannot read the string.
            return PermissionOutcome::new(
                Decision::Ask(format!("{why}; deny rules cannot see into it, so asking")),
                DecidedBy::CodeString,
            );
        }
        if let Some((rule, detail)) = first_match(&self.ask, query.tool, &resolved) {
            return PermissionOutcome::new(
                Decision::Ask(format!("rule `{rule}` asks first{detail}")),
                DecidedBy::AskRule(rule),
            );
        }
        match hook {
            Some(HookPermission::Ask(reason)) => {
                return PermissionOutcome::new(Decision::Ask(reason.clone()), DecidedBy::Hook);
            }
            Some(HookPermission::Allow) => {
                return PermissionOutcome::new(Decision::Allow, DecidedBy::Hook);
            }
            Some(HookPermission::Deny(_)) | None => {}
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
        let refusal = match allow_match(&allow_rules, query.tool, &resolved) {
            Ok(rule) => return PermissionOutcome::new(Decision::Allow, DecidedBy::AllowRule(rule)),
            Err(refusal) => refusal,
        };
        if let Resolved::Commands(parsed) = &resolved
            && let Some(error) = &parsed.error
        {
            // Specific rules could not be checked, so not even a permissive mode may allow it.
            return PermissionOutcome::new(
                Decision::Ask(format!(
                    "could not parse the command ({error}); no rule can vouch for it"
                )),
                DecidedBy::UnparsedCommand,
            );
        }
        if self.mode == PermissionMode::Plan
            && let Resolved::Commands(parsed) = &resolved
            && read_only_refusal(parsed, &|_| false).is_none()
        {
            // Planning means looking around: commands that only read run before approval too.
            return PermissionOutcome::new(Decision::Allow, DecidedBy::Mode(self.mode));
        }
        if let (Decision::Ask(reason), Some(refusal)) =
            (default_decision(self.mode, query.kind), refusal)
        {
            return PermissionOutcome::new(
                Decision::Ask(format!(
                    "{refusal}; no allow rule can grant that, so asking ({reason})"
                )),
                DecidedBy::Mode(self.mode),
            );
        }
        PermissionOutcome::new(
            default_decision(self.mode, query.kind),
            DecidedBy::Mode(self.mode),
        )
    }
}

fn resolve(query: &PermissionQuery<'_>) -> Result<Resolved, String> {
    Ok(match query.subject {
        Subject::None => Resolved::None,
        Subject::Command(command) => Resolved::Commands(bash_subject::parse(command)),
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

/// The first deny or ask rule matching the subject: for a command line, any command anywhere
/// in it by its normalised argv (see `Rule::matches_normalized`). Returns the rule and, for a
/// command, which one matched.
fn first_match(rules: &[Rule], tool: &str, subject: &Resolved) -> Option<(String, String)> {
    let mut rules = rules.iter().filter(|r| r.applies_to_tool(tool));
    match subject {
        Resolved::None => rules
            .find(|r| r.is_any())
            .map(|r| (r.raw().to_string(), String::new())),
        Resolved::Path(absolute, relative) => {
            let forms = path_forms(absolute, relative);
            rules
                .find(|r| r.matches_path(&forms))
                .map(|r| (r.raw().to_string(), String::new()))
        }
        Resolved::Commands(parsed) => rules.find_map(|r| {
            if r.is_any() {
                return Some((r.raw().to_string(), String::new()));
            }
            let command = parsed.commands.iter().find(|c| r.matches_normalized(c))?;
            let argv = command.argv().join(" ");
            let detail = match command.words.iter().find(|w| w.opaque.is_some()) {
                Some(word) => format!(
                    " (`{argv}`: `{}` is only known when it runs and could complete it)",
                    word.text
                ),
                None => format!(" (`{argv}`)"),
            };
            Some((r.raw().to_string(), detail))
        }),
    }
}

/// The allow rule(s) granting the subject (joined with ", " when several cover a compound
/// line), or why none may (`None` when simply no rule covers it). A command line is granted
/// only when it parses and every command in it is plain words, uses no escape hatch of its
/// program and is covered by a rule; the bare tool rule grants everything.
fn allow_match(rules: &[Rule], tool: &str, subject: &Resolved) -> Result<String, Option<String>> {
    let rules: Vec<&Rule> = rules.iter().filter(|r| r.applies_to_tool(tool)).collect();
    if let Some(any) = rules.iter().find(|r| r.is_any()) {
        return Ok(any.raw().to_string());
    }
    let found = match subject {
        Resolved::None => None,
        Resolved::Path(absolute, relative) => {
            let forms = path_forms(absolute, relative);
            rules
                .iter()
                .find(|r| r.matches_path(&forms))
                .map(|r| r.raw().to_string())
        }
        Resolved::Commands(parsed) => {
            if let Some(refusal) = parsed.refusal() {
                return Err(Some(refusal));
            }
            let mut matched: Vec<&str> = Vec::new();
            for command in &parsed.commands {
                let argv = command.argv();
                if let Some(why) = escape_hatch(&argv).or_else(|| runs_code(&argv)) {
                    return Err(Some(why));
                }
                let rule = rules
                    .iter()
                    .find(|r| r.matches_command(&argv))
                    .ok_or(None)?;
                if !matched.contains(&rule.raw()) {
                    matched.push(rule.raw());
                }
            }
            (!matched.is_empty()).then(|| matched.join(", "))
        }
    };
    found.ok_or(None)
}

fn path_forms<'p>(absolute: &'p Path, relative: &'p Option<PathBuf>) -> Vec<&'p Path> {
    relative
        .iter()
        .map(PathBuf::as_path)
        .chain([absolute])
        .collect()
}
