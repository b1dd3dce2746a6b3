//! `crew demo`: a scratch repository holding a tiny real project (a shell arithmetic library
//! with its own test command) and a scripted team that plans, builds in parallel worktrees, asks
//! for permission to run the tests, documents, reviews and merges.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Serialize;

use crate::verdict;
use crew_git::{Author, GitError, exclude_from_git, init_with_files};
use crew_store::MessageKind;
use crew_store::requests::RequestState;
use crew_store::workspace::RUNTIME_FOLDERS;
use crew_store::{AgentName, CacheTokens, StoreError, TaskId, Workspace};

pub const GOAL: &str = "Add `sub` and `mul` to the calc library with tests, document them in README.md, and have the reviewer run the project's tests.";

const PROJECT: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../../assets/demo/project/README.md"),
    ),
    (
        "test.sh",
        include_str!("../../../assets/demo/project/test.sh"),
    ),
    (
        "lib/add.sh",
        include_str!("../../../assets/demo/project/lib/add.sh"),
    ),
    (
        "tests/add_test.sh",
        include_str!("../../../assets/demo/project/tests/add_test.sh"),
    ),
];

/// The demo team: a lead, two implementers and a reviewer, all played by the built-in `demo`
/// scenario. Edits are allowed in worktrees; commands ask, so the tests need a permission.
pub(crate) const CREW_TOML: &str = r#"# The crew demo team. Every agent is the scripted simulator (scenario "demo"), not a model.
[team]
name = "demo"
base_branch = "main"
test_command = "sh test.sh"

[lead]
name = "lead"
model = { provider = "scripted", scenario = "demo" }

[[teammate]]
name = "alice"
role = "implementer"
writes = true
model = { provider = "scripted", scenario = "demo" }

[[teammate]]
name = "bob"
role = "implementer"
writes = true
model = { provider = "scripted", scenario = "demo" }

[[teammate]]
name = "carol"
role = "reviewer"
model = { provider = "scripted", scenario = "demo" }

[permissions]
# File edits are allowed (inside each worktree); every command asks a person, who has ten
# minutes to answer before the request expires into a denial.
mode = "accept-edits"
deny = ["bash(rm -rf:*)", "bash(git push:*)"]

[worker]
idle_poll_secs = 5
# As long as a request waits for you: a teammate idle while you review must still be there for
# the work your merge unblocks (the reviewer, here).
idle_timeout_secs = 600
heartbeat_secs = 1
request_timeout_secs = 600

[worktree]
# Finished tasks wait in the review queue for you (ctrl-r); `crew demo --headless` merges them
# itself (`--merge auto`), or approves them into the merge queue (`--merge queue`).
merge_when_done = false

[merge_queue]
# Tasks you approve (A in the review queue) land only once `sh test.sh` passes on what would
# land; up to 4 are tested together (ctrl-r ctrl-r shows the queue).
batch = 4
"#;

/// Creates the scratch repository at `dir` (which must be empty or absent).
pub fn build(dir: &Path) -> Result<(), GitError> {
    let mut files: Vec<(&str, &str)> = PROJECT.to_vec();
    files.push(("crew.toml", CREW_TOML));
    init_with_files(
        dir,
        "main",
        &files,
        &Author::new("crew demo", "demo@crew.invalid"),
        "calc: a tiny shell arithmetic library",
    )?;
    exclude_from_git(dir, RUNTIME_FOLDERS)?;
    let marker = dir.join(MARKER);
    let written = marker
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            std::fs::write(
                &marker,
                "crew demo made this folder: its team is the offline simulator's demo.\n",
            )
        });
    written.map_err(|source| GitError::Io {
        path: marker.clone(),
        source,
    })?;
    Ok(())
}

/// Marks a folder `crew demo` made, where the simulator's demo scenario may run unasked.
pub const MARKER: &str = ".crew/demo-folder";

/// Whether `root` is a folder `crew demo` made.
pub fn is_demo_folder(root: &Path) -> bool {
    root.join(MARKER).is_file()
}

/// Whether the project's tests pass in `dir`, with what they printed.
pub fn tests_pass(dir: &Path) -> (bool, String) {
    match Command::new("sh").arg("test.sh").current_dir(dir).output() {
        Ok(out) => (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        ),
        Err(e) => (false, format!("could not run sh test.sh: {e}")),
    }
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub dir: String,
    pub goal_reached: bool,
    /// Some agent was crew's offline simulator (`provider = "scripted"`), not a model.
    pub simulator: bool,
    pub approve: String,
    pub tests: String,
    pub tasks: BTreeMap<String, usize>,
    pub messages: BTreeMap<String, usize>,
    pub requests: BTreeMap<String, usize>,
    pub merges: Vec<String>,
    /// Each reviewer task's verdict: `pass`, `fail`, `partial`, or `no verdict` (never a pass).
    pub verdicts: BTreeMap<TaskId, String>,
    pub agents: BTreeMap<AgentName, AgentUsage>,
    pub wall_seconds: f64,
    /// What happened because of refusals, in words.
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct AgentUsage {
    pub state: String,
    pub turns: u64,
    pub tokens: u64,
    /// US dollars, when the provider reports a cost or crew.toml gives a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Prompt-cache input tokens read and written.
    #[serde(skip_serializing_if = "CacheTokens::is_empty")]
    pub cache: CacheTokens,
}

/// Counts everything the run left in the store.
pub fn summarise(
    workspace: &Workspace,
    request_timeout: std::time::Duration,
    agents: &[AgentName],
    approve: &str,
    wall_seconds: f64,
) -> Result<Summary, StoreError> {
    let mut tasks = BTreeMap::new();
    let all = workspace.tasks().load_all()?.tasks;
    for task in &all {
        *tasks.entry(task.status.to_string()).or_insert(0) += 1;
    }
    let verdicts = verdict::of_reviews(&all);
    let messages_all = workspace.mailboxes().all_messages()?;
    let mut messages = BTreeMap::new();
    for m in &messages_all {
        *messages.entry(m.kind.to_string()).or_insert(0) += 1;
    }
    let merges: Vec<String> = messages_all
        .iter()
        .filter_map(|m| m.text.as_deref())
        .filter(|t| t.contains(" merged into ") || t.contains("not merged"))
        .map(str::to_string)
        .collect();
    let mut requests = BTreeMap::new();
    let mut notes = Vec::new();
    for r in workspace.mailboxes().requests(request_timeout)? {
        *requests
            .entry(format!("{} {}", r.kind, r.state.as_str()))
            .or_insert(0) += 1;
        if r.kind == MessageKind::PermissionRequest && r.state == RequestState::Rejected {
            notes.push(format!(
                "{} was refused {:?}; it finished its task without running it and said so",
                r.from,
                r.text.as_deref().unwrap_or("")
            ));
        }
    }
    let mut usage = BTreeMap::new();
    for name in agents {
        if let Some(status) = workspace.agents().read(name)? {
            usage.insert(
                name.clone(),
                AgentUsage {
                    state: status.state.as_str().to_string(),
                    turns: status.turns,
                    tokens: status.tokens,
                    cost_usd: status.cost_micros.map(|m| m as f64 / 1e6),
                    cache: status.cache,
                },
            );
        }
    }
    let (_, tests) = tests_pass(workspace.root());
    Ok(Summary {
        dir: workspace.root().display().to_string(),
        goal_reached: false,
        simulator: false,
        approve: approve.to_string(),
        tests,
        tasks,
        messages,
        requests,
        merges,
        verdicts,
        agents: usage,
        wall_seconds,
        notes,
    })
}
