//! `crew.toml`: the team, permissions and worker timings.
