//! The one way tests wait for something another thread or process does: poll a condition until
//! it holds, failing with what was awaited once the budget is spent. A passing wait returns as
//! soon as its condition holds, so the budget only bounds a failure; it is generous because a
//! loaded 2-core CI box can stall a process for seconds.

use std::time::{Duration, Instant};

/// How long a wait may take before the test fails.
pub const BUDGET: Duration = Duration::from_secs(60);

/// How often the condition is checked.
const EVERY: Duration = Duration::from_millis(25);

/// Polls `check` until it gives a value; panics naming `what` after `budget`.
pub fn eventually<T>(what: &str, budget: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    eventually_showing(what, budget, || check().ok_or_else(String::new))
}

/// As [`eventually`], for a condition that can say what it saw instead (a screen, a task): the
/// failure shows the last of those, which tells a slow run from a wrong one.
pub fn eventually_showing<T>(
    what: &str,
    budget: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + budget;
    loop {
        let seen = match check() {
            Ok(v) => return v,
            Err(seen) => seen,
        };
        assert!(
            Instant::now() < deadline,
            "timed out after {budget:?} waiting for {what}{}",
            if seen.is_empty() {
                String::new()
            } else {
                format!("; last seen:\n{seen}")
            }
        );
        std::thread::sleep(EVERY);
    }
}

/// `eventually` with the default budget.
pub fn poll<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    eventually(what, BUDGET, check)
}

/// For async tests: whether `check` holds within `budget`, yielding to the runtime between
/// checks instead of blocking its thread (the caller asserts, or acts on a `false`).
#[cfg(feature = "async")]
pub async fn eventually_async(budget: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + budget;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(EVERY).await;
    }
    check()
}
