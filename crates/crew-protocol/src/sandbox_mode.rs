//! The sandbox setting from configuration (`[permissions] sandbox`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Full confinement where the kernel offers it; elsewhere every command asks.
    /// `"namespaces"` (the old opt-in value) means the same.
    #[default]
    #[serde(alias = "namespaces")]
    Auto,
    /// Commands run with the rights of the crew process.
    Off,
}
