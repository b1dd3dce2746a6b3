//! crew-config's integration tests — crew.toml's model entries, and the shipped permission rules as
//! an attacker meets them — as one test binary, a module per area.

mod model_spec;
mod tools_bash_analysis;
