//! Scenario files: an ordered list of rules, each with optional conditions and a reply.
//! The format is documented at the top of `assets/scenarios/echo.toml`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use crate::error::ModelError;
use crate::types::{ContentBlock, ModelRequest, Role};

/// A scenario that could not be loaded.
#[derive(Debug, Error)]
pub enum ScenarioError {
    #[error("cannot read scenario {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}{}: {message}", path.display(), location(*line, *column))]
    Parse {
        path: PathBuf,
        /// 1-based; 0 when the parser gave no position.
        line: usize,
        column: usize,
        message: String,
    },
}

fn location(line: usize, column: usize) -> String {
    let mut text = String::new();
    if line > 0 {
        // Writing to a String cannot fail.
        let _ = write!(text, ":{line}:{column}");
    }
    text
}

impl From<ScenarioError> for ModelError {
    fn from(error: ScenarioError) -> Self {
        ModelError::config(error.to_string())
    }
}

/// A parsed scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What the scenario is for (shown in logs only).
    #[serde(default)]
    pub description: String,
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
    /// Where it came from, for messages.
    #[serde(skip)]
    pub origin: PathBuf,
}

/// One rule: conditions (all optional, all must hold) and the reply.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub role: Option<String>,
    pub agent: Option<String>,
    pub task_contains: Option<String>,
    pub last_user_contains: Option<String>,
    /// Text of some earlier assistant message in the conversation (what the agent said before).
    pub history_contains: Option<String>,
    pub last_tool: Option<String>,
    pub last_result_contains: Option<String>,
    pub last_result_is_error: Option<bool>,
    pub turn: Option<usize>,
    /// How many times the rule may fire; unlimited when absent.
    pub times: Option<u32>,
    pub text: Option<String>,
    #[serde(default, rename = "tool_call")]
    pub tool_calls: Vec<ToolCall>,
    pub stop: Option<ScriptedStop>,
    pub error: Option<ScriptedError>,
}

/// A tool call in a reply.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// The stop reason a rule may force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedStop {
    EndTurn,
    ToolUse,
    MaxTokens,
}

/// A failure a rule may simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedError {
    Overloaded,
    RateLimited,
    PromptTooLong,
    /// Some text deltas, then a `Stream` error.
    Disconnect,
}

impl Scenario {
    /// Reads and parses a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses scenario text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, ScenarioError> {
        let mut scenario: Scenario = toml::from_str(text).map_err(|error| {
            let (line, column) = error
                .span()
                .map_or((0, 0), |span| line_column(text, span.start));
            ScenarioError::Parse {
                path: origin.to_path_buf(),
                line,
                column,
                message: error.message().trim().to_string(),
            }
        })?;
        scenario.origin = origin.to_path_buf();
        Ok(scenario)
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// What rules look at in a request: the messages since the last assistant message.
pub(super) struct Situation<'a> {
    req: &'a ModelRequest,
    turn: usize,
    user_text: String,
    /// `(tool name, content, is_error)` of the latest tool results.
    results: Vec<(&'a str, &'a str, bool)>,
}

impl<'a> Situation<'a> {
    pub(super) fn of(req: &'a ModelRequest) -> Self {
        let turn = req
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let since = req
            .messages
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .map_or(0, |i| i + 1);
        let latest = &req.messages[since..];
        let user_text = latest
            .iter()
            .map(|m| m.text())
            .collect::<Vec<_>>()
            .join("\n");
        let tool_name = |id: &str| -> &'a str {
            req.messages
                .iter()
                .flat_map(|m| m.tool_uses())
                .find(|(use_id, _, _)| *use_id == id)
                .map_or("", |(_, name, _)| name)
        };
        let results = latest
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|block| match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => Some((tool_name(tool_use_id), content.as_str(), *is_error)),
                _ => None,
            })
            .collect();
        Self {
            req,
            turn,
            user_text,
            results,
        }
    }

    pub(super) fn turn(&self) -> usize {
        self.turn
    }

    pub(super) fn request(&self) -> &'a ModelRequest {
        self.req
    }

    /// Text of the user messages since the last assistant message.
    pub(super) fn user_text(&self) -> &str {
        &self.user_text
    }

    /// The tool results since the last assistant message, joined.
    pub(super) fn result_text(&self) -> String {
        self.results
            .iter()
            .map(|(_, content, _)| *content)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Rule {
    /// Whether every condition the rule states holds (the `times` budget is checked by the
    /// provider).
    pub(super) fn matches(&self, s: &Situation<'_>) -> bool {
        let ctx = &s.req.context;
        let task = ctx.task.as_deref().unwrap_or("");
        let holds = |condition: &Option<String>, test: &dyn Fn(&str) -> bool| {
            condition.as_deref().is_none_or(test)
        };
        holds(&self.role, &|role| ctx.role == role)
            && holds(&self.agent, &|agent| ctx.agent == agent)
            && holds(&self.task_contains, &|needle| task.contains(needle))
            && holds(&self.last_user_contains, &|needle| {
                s.user_text.contains(needle)
            })
            && holds(&self.history_contains, &|needle| {
                s.req
                    .messages
                    .iter()
                    .any(|m| m.role == Role::Assistant && m.text().contains(needle))
            })
            && holds(&self.last_tool, &|name| {
                s.results.iter().any(|r| r.0 == name)
            })
            && holds(&self.last_result_contains, &|needle| {
                s.results.iter().any(|r| r.1.contains(needle))
            })
            && self
                .last_result_is_error
                .is_none_or(|want| s.results.iter().any(|r| r.2 == want))
            && self.turn.is_none_or(|turn| turn == s.turn)
    }
}
