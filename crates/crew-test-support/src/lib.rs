//! What crew's tests share across crates: the one way to wait for another thread or process
//! ([`wait`], always there) and, behind a feature named after each layer, the fixtures that
//! layer's tests and the layers above it use. A dev-dependency only: crates turn on just the
//! features their tests need, so a low layer's tests never build the high layers' libraries.
//! The screen's harness is a crate of its own, `crew-tui-test-support`. What needs the built
//! `crew` binary (`CARGO_BIN_EXE_crew` exists only in the root package's
//! tests) lives in the root's `tests/support/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // in a fixture a failure is the report
#![allow(clippy::new_without_default)] // a fixture's `new` makes a scratch folder: not a default

use std::path::{Path, PathBuf};

pub mod wait;

#[cfg(feature = "agent")]
pub mod agent;
#[cfg(feature = "git")]
pub mod git;
#[cfg(feature = "model")]
pub mod model;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "tools")]
pub mod tools;

/// A file of crew's source tree (`assets/…`, `tests/fixtures/…`), wherever the test runs from.
pub fn source_path(rel: &str) -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    // This crate is crates/crew-test-support: the tree's root is two folders up.
    here.ancestors().nth(2).unwrap_or(here).join(rel)
}
