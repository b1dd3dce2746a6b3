//! Permission modes, rules, the bash subject parser and the policy that combines them.

pub mod bash_subject;
mod code_strings;
mod command_words;
mod escape_hatches;
pub mod mode;
mod normalized_argv;
pub mod policy;
pub mod read_only;
pub mod rule;

pub use mode::{PermissionMode, UnknownMode};
pub use policy::{
    BypassSwitches, DecidedBy, Decision, HookPermission, PermissionOutcome, PermissionPolicy,
    PermissionQuery, PolicyError, RuleSet,
};
pub use rule::{Rule, RuleError};
