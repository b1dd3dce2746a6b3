//! A reviewer's report ends with `VERDICT: PASS | FAIL | PARTIAL`, and shows the commands it
//! ran with what they printed, as `$ command` lines followed by their output.

use serde::{Deserialize, Serialize};

pub use crew_protocol::Verdict;

/// The verdict of `report`. The last line that starts with `VERDICT:` decides (any case,
/// markdown emphasis, heading or quote marks around it allowed); when its word is not exactly
/// one of PASS, FAIL, PARTIAL, or there is no such line, there is no verdict.
pub fn parse(report: &str) -> Option<Verdict> {
    let word = report.lines().rev().find_map(verdict_word)?;
    match word.to_ascii_uppercase().as_str() {
        "PASS" => Some(Verdict::Pass),
        "FAIL" => Some(Verdict::Fail),
        "PARTIAL" => Some(Verdict::Partial),
        _ => None,
    }
}

/// How a finished job's report counts (invariant 8): a reviewer's task passes only on an explicit
/// PASS or PARTIAL. Whether it succeeded, and the summary to record when it has no verdict (any
/// other report is recorded as it is).
pub fn judge(reviewer_task: bool, completed: bool, report: &str) -> (bool, Option<String>) {
    if !reviewer_task {
        return (completed, None);
    }
    match parse(report) {
        None if completed => (
            false,
            Some(format!(
                "no verdict (the report has no VERDICT: PASS|FAIL|PARTIAL line): {}",
                report.trim()
            )),
        ),
        verdict => (
            completed && !matches!(verdict, None | Some(Verdict::Fail)),
            None,
        ),
    }
}

/// Each finished reviewer task's verdict, shown as `label` says.
pub fn of_reviews(
    tasks: &[crew_store::Task],
) -> std::collections::BTreeMap<crew_store::TaskId, String> {
    tasks
        .iter()
        .filter(|t| {
            t.role.as_deref() == Some("reviewer")
                && matches!(
                    t.status,
                    crew_store::Status::Completed | crew_store::Status::Failed
                )
        })
        .map(|t| {
            let verdict = t.result.as_deref().and_then(parse);
            (t.id, label(verdict).to_string())
        })
        .collect()
}

/// How a verdict is shown: no verdict is said as such, never as a pass.
pub fn label(verdict: Option<Verdict>) -> &'static str {
    match verdict {
        Some(Verdict::Pass) => "pass",
        Some(Verdict::Fail) => "fail",
        Some(Verdict::Partial) => "partial",
        None => "no verdict",
    }
}

/// What follows `VERDICT:` on a verdict line, trimmed of decoration.
fn verdict_word(line: &str) -> Option<&str> {
    let line = strip_decoration(line);
    let (label, rest) = line.split_once(':')?;
    if !label.trim().eq_ignore_ascii_case("verdict") {
        return None;
    }
    Some(strip_decoration(rest).trim_end_matches(['.', '!']))
}

fn strip_decoration(text: &str) -> &str {
    text.trim()
        .trim_matches(|c: char| matches!(c, '*' | '_' | '`' | '#' | '>') || c.is_whitespace())
}

/// One command the reviewer says it ran, and what it printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRun {
    pub command: String,
    pub output: String,
}

/// The `$ command` lines of `report`, each with the lines after it up to the next command,
/// a blank line, a code fence or the verdict line.
pub fn commands(report: &str) -> Vec<CommandRun> {
    let mut runs: Vec<CommandRun> = Vec::new();
    let mut open = false;
    for line in report.lines() {
        let trimmed = line.trim();
        if let Some(command) = trimmed.strip_prefix("$ ") {
            runs.push(CommandRun {
                command: command.trim().to_string(),
                output: String::new(),
            });
            open = true;
        } else if trimmed.is_empty() || trimmed.starts_with("```") || verdict_word(line).is_some() {
            open = false;
        } else if open && let Some(run) = runs.last_mut() {
            if !run.output.is_empty() {
                run.output.push('\n');
            }
            run.output.push_str(line);
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_reviewers_task_passes_only_on_an_explicit_verdict() {
        assert_eq!(judge(false, true, "done"), (true, None));
        assert_eq!(judge(true, true, "ok\nVERDICT: PASS"), (true, None));
        assert_eq!(judge(true, true, "VERDICT: PARTIAL"), (true, None));
        assert_eq!(judge(true, true, "VERDICT: FAIL"), (false, None));
        assert_eq!(judge(true, false, "VERDICT: PASS"), (false, None));
        let (passed, summary) = judge(true, true, "looks fine to me");
        assert!(!passed);
        assert!(summary.unwrap().starts_with("no verdict"));
    }

    use super::*;

    #[test]
    fn the_last_verdict_line_decides_in_any_case() {
        assert_eq!(parse("looks fine\nVERDICT: PASS"), Some(Verdict::Pass));
        assert_eq!(parse("verdict: fail\n"), Some(Verdict::Fail));
        assert_eq!(parse("**Verdict: Partial**"), Some(Verdict::Partial));
        assert_eq!(parse("## VERDICT: PASS."), Some(Verdict::Pass));
        assert_eq!(
            parse("VERDICT: FAIL\nre-ran after the fix\nVERDICT: PASS\n"),
            Some(Verdict::Pass)
        );
        assert_eq!(
            parse("VERDICT: PASS\nVERDICT: FAIL"),
            Some(Verdict::Fail),
            "the last one wins"
        );
    }

    #[test]
    fn anything_else_is_no_verdict() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("all tests pass"), None);
        assert_eq!(parse("VERDICT: PASS | FAIL | PARTIAL"), None);
        assert_eq!(parse("VERDICT: probably fine"), None);
        assert_eq!(parse("VERDICT:"), None);
        assert_eq!(parse("The VERDICT: PASS is what I expect"), None);
        assert_eq!(
            parse("VERDICT: PASS\nVERDICT: maybe"),
            None,
            "an unreadable last verdict is not replaced by an earlier one"
        );
    }

    #[test]
    fn commands_and_their_output_are_extracted() {
        let report = "I checked the build.\n\n```\n$ cargo test\nrunning 3 tests\n\
                      test result: ok. 3 passed\n```\n\n$ git diff --stat\n src/a.rs | 2 +-\n\n\
                      $ true\nVERDICT: PASS\n";
        assert_eq!(
            commands(report),
            vec![
                CommandRun {
                    command: "cargo test".into(),
                    output: "running 3 tests\ntest result: ok. 3 passed".into(),
                },
                CommandRun {
                    command: "git diff --stat".into(),
                    output: " src/a.rs | 2 +-".into(),
                },
                CommandRun {
                    command: "true".into(),
                    output: String::new(),
                },
            ]
        );
        assert!(commands("no commands here").is_empty());
    }
}
