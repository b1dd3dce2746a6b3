//! Asking someone when the policy says "ask". The screen and the lead's inbox implement
//! `Prompter` elsewhere; the headless policies live here. Nothing approves by accident:
//! with no prompter, an ask is a deny.

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::Subject;

/// Everything a person needs to answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionAsk {
    pub tool: String,
    pub input: Value,
    pub subject: Subject,
    /// crew's policy reason for asking.
    pub reason: String,
    pub workspace: PathBuf,
    /// Why the agent says it wants this (its own description of the call, or its words just
    /// before it), shown beside crew's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "answer", content = "detail")]
pub enum PermissionAnswer {
    Allow,
    /// Allow, and add this rule (e.g. `bash(cargo test:*)`) for the rest of the session.
    AllowAlways(String),
    Deny(String),
}

pub trait Prompter: Send + Sync {
    fn ask(&self, req: PermissionAsk) -> BoxFuture<'static, PermissionAnswer>;
}

/// Headless: denies every ask.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

/// Headless: only what rules (and the mode) allow runs; every ask is denied, saying so.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowWhatRulesAllow;

fn deny(reason: String) -> BoxFuture<'static, PermissionAnswer> {
    Box::pin(std::future::ready(PermissionAnswer::Deny(reason)))
}

impl Prompter for DenyAll {
    fn ask(&self, req: PermissionAsk) -> BoxFuture<'static, PermissionAnswer> {
        deny(format!(
            "no one to ask (headless, deny-all): {}",
            req.reason
        ))
    }
}

impl Prompter for AllowWhatRulesAllow {
    fn ask(&self, req: PermissionAsk) -> BoxFuture<'static, PermissionAnswer> {
        deny(format!(
            "headless: only calls allowed by rules run; add an allow rule for `{}` to permit this ({})",
            req.tool, req.reason
        ))
    }
}
