//! `crew-bench bash`: the cost of deciding a bash line against rules (parse with
//! tree-sitter-bash, walk, match allow/deny rules), per line, over typical and hostile lines.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use crew_tools::Subject;
use crew_tools::ToolKind;
use crew_tools::permissions::{
    BypassSwitches, PermissionMode, PermissionPolicy, PermissionQuery, RuleSet,
};

use crate::stats::{percentile, round3};

const LINES: &[&str] = &[
    "git status",
    "git diff --stat HEAD~1 -- src",
    "cargo test --lib team 2>&1 | tail -20",
    "git diff > FILE",
    "GIT_EXTERNAL_DIFF='touch X' git diff --no-index a b",
    "git diff ${X:-$(touch X)}",
    "sh -c \"sh -c 'rm -fr /tmp/x'\"",
    "find . -name '*.rs' -exec grep -n 'fn main' {} + | head",
    "for f in $(ls); do if [ -f \"$f\" ]; then wc -l \"$f\"; fi; done > counts.txt",
    "cat <<EOF | bash\necho $(whoami)\nrm -rf build\nEOF",
];

pub fn run(rounds: usize, as_json: bool) -> anyhow::Result<()> {
    let rules = RuleSet {
        allow: ["bash(git status)", "bash(git diff:*)", "bash(cargo test:*)"]
            .map(String::from)
            .to_vec(),
        ask: Vec::new(),
        deny: ["bash(rm -rf:*)", "bash(git push:*)"]
            .map(String::from)
            .to_vec(),
    };
    let policy = PermissionPolicy::new(PermissionMode::Ask, &rules, BypassSwitches::default())?;
    let roots = [Path::new("/work")];
    let mut micros = Vec::with_capacity(rounds * LINES.len());
    for round in 0..rounds + 10 {
        for line in LINES {
            let subject = Subject::Command(line.to_string());
            let query = PermissionQuery {
                tool: "bash",
                kind: ToolKind::Exec,
                subject: &subject,
                roots: &roots,
            };
            let start = Instant::now();
            std::hint::black_box(policy.decide(&query, None));
            // The first rounds warm caches and are not counted.
            if round >= 10 {
                micros.push(start.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    micros.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&micros, 0.50), percentile(&micros, 0.99));
    if as_json {
        let report = json!({
            "decisions": micros.len(),
            "distinct_lines": LINES.len(),
            "p50_us": round3(p50),
            "p99_us": round3(p99),
        });
        println!("{report}");
    } else {
        println!(
            "{} decisions over {} lines: p50 {p50:.1} µs, p99 {p99:.1} µs per line",
            micros.len(),
            LINES.len()
        );
    }
    Ok(())
}
