//! Permission modes, rules, the bash subject parser and the policy that combines them.

pub mod bash_subject;
pub mod mode;
pub mod policy;
pub mod rule;

pub use mode::PermissionMode;
pub use policy::{
    BypassSwitches, DecidedBy, Decision, HookPermission, PermissionOutcome, PermissionPolicy,
    PermissionQuery, PolicyError, RuleSet,
};
pub use rule::{Rule, RuleError};
