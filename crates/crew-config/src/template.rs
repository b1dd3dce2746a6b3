//! The commented `crew.toml` that `crew init` writes.

/// The model `crew init` gives an agent: what it found on this machine or was told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitModel {
    pub provider: String,
    pub model: Option<String>,
    pub base_url: Option<String>,
}

impl InitModel {
    /// `{ provider = "…", model = "…", base_url = "…" }`, the values quoted as TOML strings.
    fn inline(&self) -> String {
        let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
        let mut fields = vec![format!("provider = {}", quote(&self.provider))];
        if let Some(model) = &self.model {
            fields.push(format!("model = {}", quote(model)));
        }
        if let Some(url) = &self.base_url {
            fields.push(format!("base_url = {}", quote(url)));
        }
        format!("{{ {} }}", fields.join(", "))
    }
}

/// Which models the starting team gets; `None` writes the agent without one (and says how to
/// add one), so `crew up` refuses rather than play the simulator.
#[derive(Debug, Clone, Default)]
pub struct InitModels {
    pub lead: Option<InitModel>,
    pub teammates: Option<InitModel>,
}

/// What an agent without a model reads instead of a `model` line.
const NO_MODEL: &str = "# No model yet; `crew up` refuses until there is one. One of:
#   model = { provider = \"claude-code\" }       # Claude Code on PATH (its own login)
#   model = { provider = \"codex\" }             # Codex on PATH (`codex app-server`; teammates only)
#   model = { provider = \"anthropic\", model = \"claude-sonnet-4-5\" }   # needs ANTHROPIC_API_KEY
#   model = { provider = \"openai\", model = \"gpt-4.1\" }                # needs OPENAI_API_KEY
#   model = { provider = \"openai\", model = \"qwen2.5-coder\", base_url = \"http://127.0.0.1:11434/v1\" }  # a local server
# (`crew demo` runs the offline simulator in a folder of its own.)";

/// The same for a teammate, pointing at the lead's list.
const NO_MODEL_TEAMMATE: &str =
    "# No model yet; `crew up` refuses until there is one (the choices are under [lead]).";

/// A starting team for `team_name`, working on `base_branch`, with `models`.
pub fn init_template(team_name: &str, base_branch: &str, models: &InitModels) -> String {
    let line = |model: &Option<InitModel>, none: &str| match model {
        Some(m) => format!("model = {}", m.inline()),
        None => none.to_string(),
    };
    let lead_model = line(&models.lead, NO_MODEL);
    let mate_model = line(&models.teammates, NO_MODEL_TEAMMATE);
    format!(
        r#"# crew.toml — the team that works on this repository. Commit it.
# Names (team and agents) are lowercase: a-z first, then a-z 0-9 _ - (at most 32).

[team]
name = "{team_name}"
# Worktrees branch from here and merges land here.
base_branch = "{base_branch}"
# The project's test command; reviewers may run it (their bash is otherwise read-only).
# test_command = "cargo test"

# The lead plans, hands out tasks and answers its teammates. It gets team tools and read-only tools.
[lead]
name = "lead"
# provider: claude-code | codex (teammates only) | anthropic | openai (any chat-completions
# server) | command (teammates only: any CLI, cmd = [...]) | scripted (the offline simulator)
{lead_model}

# Teammates: role is explorer | planner | reviewer | implementer.
# writes = true gives the teammate its own git worktree at .worktrees/<name>.
[[teammate]]
name = "alice"
role = "implementer"
writes = true
{mate_model}

[[teammate]]
name = "bob"
role = "implementer"
writes = true
# Must send a plan and have it approved before it gets any write tool (mode = "plan" below
# asks that of every teammate).
plan_mode_required = false
{mate_model}

[[teammate]]
name = "carol"
role = "reviewer"
writes = false
{mate_model}
# Keys come from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY), never from this file.
# With price = {{ input = 3.0, output = 15.0 }} (US dollars per million tokens) the screen shows
# a cost for providers that do not report one.
# A local model server (llama.cpp, Ollama, vLLM, LM Studio):
# model = {{ provider = "openai", model = "NAME", base_url = "http://127.0.0.1:8080/v1" }}
# with, if need be: context_window = 8192 (tokens, used when the server does not say its own;
# crew asks llama.cpp's /props, Ollama's /api/show and /v1/models), max_output_tokens = 2048
# (the most one reply may have; default 16384, lowered to a quarter of a known window), and
# stream = false (whole replies, for a server whose streamed tool calls are broken).

[permissions]
# read-only | workspace-write | ask | accept-edits | bypass | plan | dont-ask
# plan: teammates only read (and run read-only commands) until the lead approves their plan,
#   then work as in accept-edits. dont-ask: for unattended runs; whatever would ask you is
#   denied at once (allow rules still open what they name).
mode = "ask"
# Rules: "tool", "tool(exact input)", "tool(prefix:*)", or a path glob for file tools.
# Deny beats everything (hooks included); then ask; then a hook's allow; then allow rules;
# then the mode's default.
# A bash allow rule grants only a line whose every command is plain words it covers: no
# `VAR=…` before a command, no `>` into a file, no `$(…)`, `${{…}}`, `$((…))`, backticks, `<(…)`
# or globs, and none of the program's escape hatches (for git: `-c`, `-C`, `--output`,
# `--ext-diff`, `--no-index`, aliases…). Anything else asks, saying why.
# Deny and ask rules match every command anywhere in the line however it is spelled
# (`rm -fr`, `rm -r -f`, `/bin/rm --recursive --force`, inside `$(…)`, `sh -c`, `xargs`…).
allow = ["read", "glob", "grep", "bash(git status)", "bash(git diff:*)", "bash(git log:*)", "bash(git show:*)"]
ask = []
deny = ["bash(rm -rf:*)", "bash(git push:*)"]
# bypass mode also needs --dangerously-bypass on the command line.
allow_bypass = false
# "auto": every command runs confined (writes only in the teammate's worktree and a private
# temp folder, .git and crew's files read-only, no network, no view of other processes); where
# the kernel lacks a piece, every command asks you. "off" gives all of that up. Per agent,
# `network = true` lets its commands use the network. Commands get only PATH, HOME, the locale,
# the terminal and toolchain variables; list more here:
# env = ["MY_TOOL_SETTING"]
sandbox = "auto"

# Hooks: commands run at an agent's events, with the event as JSON on stdin. A hook may block
# (exit 2, stderr the reason), ask, rewrite the input, add context or stop the agent
# ({{"continue": false}}); its allow never overrides a deny or ask rule. Hooks run in the
# agent's sandbox with its worktree read-only, and for a teammate that writes (and so could
# rewrite the script) a hook's allow is ignored: it can ask or deny, not allow.
# [[hooks]]
# event = "PreToolUse"        # PreToolUse | PostToolUse | PostToolUseFailure | Stop |
#                             # SubagentStop | UserPromptSubmit | SessionStart | PreCompact |
#                             # Notification
# matcher = "bash"            # a regex over the tool name (SessionStart: source, PreCompact:
#                             # trigger, Notification: type, SubagentStop: the role)
# command = "./scripts/check-command.sh"
# timeout_secs = 10

# Subagents: every agent has an `agent` tool that runs a subagent for one piece of work and
# gets back only its report: explore (read-only), verify (runs checks, ends with a VERDICT),
# general. It starts fresh or as a fork of the caller's conversation (sharing its prompt cache).
# [subagents]
# enabled = true
# max_turns = 20              # model calls per subagent
# roles = ["explore", "verify", "general"]

# After old turns are summarised or folded away, the files read or changed last come back
# (bounded), and a small model call checks the agent still knows its task (else the summary
# is undone).
# [compaction]
# reattach_files = 5
# reattach_file_bytes = 8192
# reattach_total_bytes = 32768
# probe = true

# Budget: once the whole team has spent this much, workers take no new work and ask you (in the
# approvals pane) to raise it or stop. `budget = {{ ... }}` on one agent limits that agent alone;
# wall_secs bounds one job of an agent.
# [budget]
# max_turns = 500             # model calls
# max_tokens = 5000000
# max_usd = 20.0              # needs a provider that reports cost, or a price in `model`
# wall_secs = 1800

# The merge queue: tasks you approve (A in the review queue, `crew review approve ID`) are
# merged only once `test_command` passes on the tree merging them would make. Up to `batch` are
# tested together; a red batch is bisected to find the task that breaks it.
# [merge_queue]
# batch = 4
# timeout_secs = 1800

# Role instructions: each role's duties ship with crew; replace one with a file of yours (or put
# it in .crew/roles/ROLE.md).
# [roles]
# implementer = "docs/implementer.md"

# Memory: every agent keeps typed memories (user, feedback, project, reference) with its
# memory_write, memory_read and memory_forget tools, in .crew/memory/<agent>/ and the team's
# .crew/memory/team/; an index is in its prompt, stale ones (naming a path that is gone) marked.
# See them with `crew memory list --agent NAME` or M on the screen. A Stop or PostToolUseFailure
# hook keeps one by printing {{"memory": {{"name": …, "type": …, "description": …, "body": …}}}}.
# deny = ["memory_write"] above keeps agents from writing any.
# Skills: SKILL.md folders in .crew/skills/, .claude/skills/ (Claude Code's work unchanged) and
# ~/.config/crew/skills/; their names and descriptions are in every agent's prompt and skill_load
# loads one. `crew skills list` shows them and which one wins a name clash.
# [limits]
# memory_bytes = 16384        # one memory's body
# memories_per_scope = 200    # memories of one agent, and of the team
# max_task_bytes = 104857600  # new and changed files crew commits for one task (0: no limit)
# max_processes = 4096        # processes and threads of one command (0: no limit)
# max_file_bytes = 8589934592 # the largest file a command writes (0: no limit)
# max_memory_bytes = 0        # address space of each process of a command (0: no limit)

[worker]
# An idle worker looks at its inbox and the tasks when files change, and at least this often.
idle_poll_secs = 5
# After this long with nothing to do, a worker shuts down and tells the lead (not while the
# lead is in a turn, nor while a task it may get waits on blockers being worked on).
idle_timeout_secs = 60
heartbeat_secs = 2
# On a PostgreSQL store (a team across machines): a host silent this long loses the tasks it
# holds, which go back to the queue (at least three heartbeats; default 30).
# lease_secs = 30
# A request with no answer after this long is expired (a permission request: denied).
request_timeout_secs = 300

[worktree]
# Copied from the main checkout into each writing teammate's worktree when it is made.
copy = []
# Linked (not copied) into each worktree, e.g. ["node_modules"].
link = []
# A writing teammate's finished task is committed as `task_N: <subject>` and waits in review
# (`crew review`, or ctrl-r on the screen); its dependents start once it is merged.
# Merge each task as soon as it is done instead (changes to crew.toml, .crew/, hook scripts or
# CI files still wait for you).
merge_when_done = false
# A reviewer teammate that reviews (and tests) each task as it enters review, before you.
# review_by = "carol"
# Send a task the reviewer fails back to its teammate without waiting for you.
auto_send_back_on_fail = false
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TeamConfig;
    use std::path::Path;

    #[test]
    fn the_template_parses_and_names_four_agents() {
        let config = TeamConfig::parse(
            Path::new("crew.toml"),
            &init_template("web", "main", &InitModels::default()),
        )
        .unwrap();
        let names: Vec<_> = config.agents().map(|a| a.name.get_ref().clone()).collect();
        assert_eq!(names, ["lead", "alice", "bob", "carol"]);
        assert_eq!(config.role_of("carol"), Some("reviewer"));
        assert_eq!(config.worker.idle_timeout_secs, 60);
        let text = init_template("web", "main", &InitModels::default());
        for mentioned in [
            "memory_write",
            "SKILL.md",
            "crew skills list",
            "plan",
            "dont-ask",
        ] {
            assert!(text.contains(mentioned), "{mentioned}");
        }
    }

    #[test]
    fn hooks_are_read_from_crew_toml() {
        let text = format!(
            "{}\n[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"bash\"\ncommand = \"./check.sh\"\n",
            init_template("web", "main", &InitModels::default())
        );
        let config = TeamConfig::parse(Path::new("crew.toml"), &text).unwrap();
        assert_eq!(config.hooks.len(), 1);
        assert_eq!(config.hooks[0].command, "./check.sh");
        let bad = format!(
            "{}\n[[hooks]]\nevent = \"Sometimes\"\ncommand = \"x\"\n",
            init_template("web", "main", &InitModels::default())
        );
        let err = TeamConfig::parse(Path::new("crew.toml"), &bad)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("crew.toml:"), "{err}");
        assert!(err.contains("Sometimes"), "{err}");
    }

    #[test]
    fn subagents_and_compaction_are_read_from_crew_toml_and_bad_values_named() {
        use crew_agent::{SubagentRole, SubagentSettings};
        let template = init_template("web", "main", &InitModels::default());
        let config = TeamConfig::parse(Path::new("crew.toml"), &template).unwrap();
        assert_eq!(config.subagents, SubagentSettings::default());
        assert!(config.compaction.probe);
        // Uncommenting the template's sections gives the defaults it shows.
        let on = template
            .replace("# [subagents]", "[subagents]")
            .replace("# enabled = true", "enabled = true")
            .replace("# max_turns = 20 ", "max_turns = 20 ")
            .replace("# roles = [", "roles = [")
            .replace("# [compaction]", "[compaction]")
            .replace("# reattach_files = 5", "reattach_files = 5")
            .replace("# probe = true", "probe = false");
        let config = TeamConfig::parse(Path::new("crew.toml"), &on).unwrap();
        assert_eq!(config.subagents.roles, SubagentRole::ALL);
        assert_eq!(config.subagents.max_turns.get(), 20);
        assert!(!config.compaction.thresholds().probe);
        for (bad, named) in [
            ("roles = [\"explore\", \"deploy\"]", "deploy"),
            ("max_turns = 0", "expected a nonzero"),
            ("turns = 3", "turns"),
        ] {
            let text = format!("{template}\n[subagents]\n{bad}\n");
            let err = TeamConfig::parse(Path::new("crew.toml"), &text)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("crew.toml:"), "{err}");
            assert!(err.contains(named), "{err}");
        }
    }

    #[test]
    fn the_sandbox_is_on_by_default_and_its_setting_is_checked() {
        use crew_protocol::SandboxMode;
        let template = init_template("web", "main", &InitModels::default());
        let config = TeamConfig::parse(Path::new("crew.toml"), &template).unwrap();
        assert_eq!(config.permissions.sandbox, SandboxMode::Auto);
        assert!(config.agents().all(|a| !a.network));
        let without = template.replace("sandbox = \"auto\"\n", "");
        let config = TeamConfig::parse(Path::new("crew.toml"), &without).unwrap();
        assert_eq!(config.permissions.sandbox, SandboxMode::Auto);
        // The old opt-in value asked for confinement: it means the same as "auto".
        let old = template.replace("sandbox = \"auto\"", "sandbox = \"namespaces\"");
        let config = TeamConfig::parse(Path::new("crew.toml"), &old).unwrap();
        assert_eq!(config.permissions.sandbox, SandboxMode::Auto);
        let off = template.replace("sandbox = \"auto\"", "sandbox = \"off\"");
        let config = TeamConfig::parse(Path::new("crew.toml"), &off).unwrap();
        assert_eq!(config.permissions.sandbox, SandboxMode::Off);
        let bad = template.replace("sandbox = \"auto\"", "sandbox = \"maybe\"");
        let err = TeamConfig::parse(Path::new("crew.toml"), &bad)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("crew.toml:"), "{err}");
        assert!(err.contains("maybe") && err.contains("auto"), "{err}");
        let network = template.replacen(
            "role = \"reviewer\"",
            "role = \"reviewer\"\nnetwork = true",
            1,
        );
        let config = TeamConfig::parse(Path::new("crew.toml"), &network).unwrap();
        assert!(config.agents().any(|a| a.network));
    }
}
