//! The command line, as clap sees it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use crew_protocol::{AgentName, InvalidName, TaskId};

#[derive(Debug, Parser)]
#[command(
    name = "crew",
    version,
    about = "A terminal workbench for teams of coding agents"
)]
pub struct Cli {
    /// Run as if started in DIR.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Work on the team kept in this PostgreSQL store (`postgres://you@host:port/db`, the
    /// password from PGPASSWORD or ~/.pgpass), from any machine: every task command, send,
    /// inbox, requests, respond, status; and, in your checkout, review.
    #[arg(long, global = true, value_name = "URL")]
    pub store: Option<String>,
    /// Without a command: `crew up`, the workbench on this repository's team.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented crew.toml and keep crew's runtime folders out of git.
    Init(InitArgs),
    /// The task graph in .tasks/.
    #[command(subcommand)]
    Task(TaskCommand),
    /// Append a typed message to an agent's inbox.
    Send(SendArgs),
    /// Read an inbox (unread messages, advancing the owner's cursor).
    Inbox(InboxArgs),
    /// Every request with its state: pending, approved, rejected, expired.
    Requests(RequestsArgs),
    /// Answer a request: the answer goes to the asker with the same request id.
    Respond(RespondArgs),
    /// Each agent's state, pid, current task, heartbeat, turns and tokens.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Ask every worker to shut down, wait for them (bounded), then end the stragglers.
    Down {
        /// Seconds to wait for workers to stop on their own.
        #[arg(long, default_value_t = 15)]
        timeout: u64,
        #[arg(long)]
        json: bool,
    },
    /// Interrupt an agent: its model call and running tool stop, it keeps its task and waits
    /// for your next message (`crew send --from user --to NAME ...`), which continues it.
    Interrupt { name: AgentName },
    /// Each writing teammate's git worktree: list, diff, merge, discard.
    #[command(subcommand)]
    Worktree(WorktreeCommand),
    /// Tasks waiting for review: list, show, diff, merge, approve into the merge queue, send
    /// back with a note, discard.
    #[command(subcommand)]
    Review(ReviewCommand),
    /// The merge queue of approved tasks: list, pause, resume, remove, retry.
    #[command(subcommand)]
    Queue(QueueCommand),
    /// The skills agents are offered (.crew/skills, .claude/skills, the user's folder).
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// The agents' memories (.crew/memory/NAME/ and the team's .crew/memory/team/).
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// The team store on a PostgreSQL server (`postgres://user@host:port/db`, a password from
    /// PGPASSWORD): `migrate` its schema, or show its `status`. crew itself still uses .tasks/.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Open the full-screen workbench.
    Ui(UiArgs),
    /// Serve an agent's team tools over MCP on stdin/stdout (for Claude Code or any MCP client).
    Mcp(McpArgs),
    /// Open the workbench on another tool's agent team, read-mostly.
    #[command(subcommand)]
    Attach(AttachCommand),
    /// Run the team: the lead here, one process per teammate.
    Up(UpArgs),
    /// Run one teammate (the supervisor starts these), or `restart NAME` a dead one.
    Worker(WorkerArgs),
    /// Print an agent's turn transcript (.crew/transcripts/NAME/SESSION.jsonl) readably.
    Replay { file: PathBuf },
    /// A scratch repository with a scripted demo team (a simulator, no model needed).
    Demo(DemoArgs),
    /// Internal: run a command confined by a sandbox policy (crew wraps agents' commands in it).
    #[command(name = "sandbox-exec", hide = true)]
    SandboxExec(SandboxExecArgs),
    /// Claude Code's own agent teams with crew: `setup` this repository (or `setup --undo`).
    #[command(subcommand)]
    Claude(ClaudeCommand),
    /// Internal: what a Claude Code lead launches for a teammate (CLAUDE_CODE_TEAMMATE_COMMAND).
    #[command(name = "cc-teammate", hide = true)]
    CcTeammate(CcTeammateArgs),
    /// Internal: the PreToolUse hook `crew cc-teammate` gives a Claude Code teammate (crew's
    /// policy and approvals for its tool calls; its "completed" into crew's review).
    #[command(name = "cc-teammate-hook", hide = true)]
    CcTeammateHook(CcTeammateHookArgs),
}

#[derive(Debug, Args)]
pub struct CcTeammateHookArgs {
    /// The Claude Code team.
    #[arg(long)]
    pub team: String,
    /// The teammate's Claude Code name.
    #[arg(long)]
    pub name: String,
    /// The teammate's worktree.
    #[arg(long)]
    pub worktree: PathBuf,
    /// The teammate's private temporary folder: its Bash commands run in crew's sandbox.
    #[arg(long)]
    pub tmp: Option<PathBuf>,
    /// A completed task is merged at once rather than waiting for the person.
    #[arg(long)]
    pub merge_when_done: bool,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Bring the store's schema to this crew's version and print it (a store a newer crew
    /// migrated is refused, both versions named).
    Migrate { url: String },
    /// The store's schema version, this crew's, and how many tasks and messages it holds.
    Status { url: String },
    /// Give agent NAME a database role of its own (run as the person, the store's owner):
    /// whoever logs in with it can do only what that agent may, whatever SQL it sends.
    AddAgent {
        url: String,
        name: String,
        /// The agent writes no code (explorer, reviewer, planner, lead): it completes its own
        /// tasks. Without it, the agent's tasks are completed only by the person's merge.
        #[arg(long)]
        no_code: bool,
        /// The agent is the team's lead: it assigns tasks and edits any pending task's subject,
        /// description and blockers (any other agent edits only its own task's description).
        #[arg(long)]
        lead: bool,
        /// The environment variable holding the role's password (never on the command line);
        /// without it the role has none, and the server's own auth (peer, cert) decides.
        #[arg(long, value_name = "VAR")]
        password_env: Option<String>,
    },
    /// The agents that have a database role on the store.
    Agents { url: String },
    /// Publish this repository's team (crew.toml: its text, names and `[limits]`) to the
    /// store, for hosts that join it; once published, a message to or from a name not on the
    /// team is refused there, as on files.
    Publish { url: String },
    /// Everything a team needs in a new store, in one go (run in your repository, as its
    /// owner): the schema migrated, the team published, and a database role for each agent on
    /// crew.toml with the rights crew.toml gives it (a writing teammate's tasks completed only
    /// by your merge; the lead assigns and edits tasks). Run again after editing crew.toml.
    Setup { url: String },
}

#[derive(Debug, Subcommand)]
pub enum ClaudeCommand {
    /// Make a Claude Code lead in this repository launch its teammates through crew: writes
    /// `teammateMode` and `env` into .claude/settings.local.json (this repository only).
    Setup {
        /// Put back exactly what the setup changed (settings changed since are left).
        #[arg(long)]
        undo: bool,
        /// Who merges a teammate's completed task: `manual` (the person, from crew's review
        /// queue) or `auto` (at once; conflicts and changes to crew.toml, .crew/, hooks or CI
        /// still wait for the person).
        #[arg(long, value_enum, default_value_t = MergeArg::Manual, conflicts_with = "undo")]
        merge: MergeArg,
    },
}

#[derive(Debug, Args)]
pub struct CcTeammateArgs {
    /// Merge each completed task at once (`crew claude setup --merge auto` writes it into the
    /// launcher).
    #[arg(long)]
    pub merge_when_done: bool,
    /// Claude Code's teammate arguments (`--agent-id NAME@TEAM --agent-name NAME ...`), all kept.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// The policy as JSON (`tools::sandbox::SandboxPolicy`).
    #[arg(long)]
    pub policy: String,
    /// Set everything up, run nothing, print what the kernel offers as JSON.
    #[arg(long)]
    pub probe: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ApprovePolicy {
    Allow,
    Deny,
}

/// Who merges a task's commits once it is in review, when no screen is open.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum MergeArg {
    /// Merged at once (conflicts and changes to crew.toml, .crew/, hooks or CI still wait).
    Auto,
    /// Reviews wait for `crew review merge ID` (or send-back / discard) from another terminal.
    #[default]
    Manual,
    /// Every review is approved into the merge queue: merged only once the tests pass on what
    /// would land (changes to crew.toml, .crew/, hooks or CI still wait).
    Queue,
}

#[derive(Debug, Args, Default)]
pub struct UpArgs {
    /// Without the screen: progress lines on stdout.
    #[arg(long)]
    pub headless: bool,
    /// Answer every permission request this way (without it, requests wait and expire as denials).
    #[arg(long, value_enum)]
    pub approve: Option<ApprovePolicy>,
    /// The lead's goal, sent as a message from you.
    #[arg(long)]
    pub goal: Option<String>,
    /// Stop when every task is completed or failed (none running, none waiting for review);
    /// also when the lead's turn fails or ends with no task created (exit 4, with the reason).
    #[arg(long)]
    pub until_done: bool,
    /// Headless: the progress as JSON lines, one object per event with a `type` field.
    #[arg(long)]
    pub json: bool,
    /// Who merges finished tasks' commits (headless): `auto`, or `manual` with `crew review`.
    #[arg(long, value_enum, default_value = "manual")]
    pub merge: MergeArg,
    /// Allow the `bypass` permission mode (crew.toml must allow it too).
    #[arg(long)]
    pub dangerously_bypass: bool,
    /// Run agents on the offline simulator's demo scenario even here (it plays crew's
    /// calculator demo whatever the repository or goal).
    #[arg(long)]
    pub simulator: bool,
    /// With --store: the teammates that run on this machine beside the lead (the others join
    /// from their own hosts with `crew worker --join`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub here: Vec<AgentName>,
    /// Internal: be the team's daemon (`crew up` starts it detached from the terminal).
    #[arg(long, hide = true, conflicts_with = "headless")]
    pub daemon: bool,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The agent of crew.toml the client speaks as; its role decides the tools.
    #[arg(long = "as", value_name = "NAME")]
    pub name: AgentName,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[arg(long)]
    pub name: Option<AgentName>,
    #[arg(long)]
    pub dangerously_bypass: bool,
    /// Join the team kept in this PostgreSQL store from this machine
    /// (`postgres://AGENT@host:port/db`, the agent's own role; its password from PGPASSWORD):
    /// the team's crew.toml is the one published there, the code comes from its `[team]
    /// remote`, cloned here.
    #[arg(long, value_name = "URL")]
    pub join: Option<String>,
    /// With --join: where this host keeps its clone of the team's remote (default: a folder
    /// named after the team, here). Made on the first run, brought up to date after.
    #[arg(long, value_name = "DIR", requires = "join")]
    pub into: Option<PathBuf>,
    #[command(subcommand)]
    pub action: Option<WorkerAction>,
}

#[derive(Debug, Subcommand)]
pub enum WorkerAction {
    /// Start a dead or shut-down teammate again, in the background.
    Restart { name: AgentName },
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to build the scratch repository (default: a new temporary folder, kept).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Run to the end without the screen and print a JSON summary (without it: the workbench,
    /// where you answer the team's permission requests).
    #[arg(long)]
    pub headless: bool,
    /// How the demo answers permission requests.
    #[arg(long, value_enum, default_value = "allow")]
    pub approve: ApprovePolicy,
    /// How the headless demo merges its reviews.
    #[arg(long, value_enum, default_value = "auto")]
    pub merge: DemoMerge,
}

/// How `crew demo --headless` merges.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum DemoMerge {
    /// Each review is merged as it comes.
    #[default]
    Auto,
    /// As a person would with the merge queue: once nothing is being worked on, every review
    /// waiting is approved at once, and the queue tests them together before they land.
    Queue,
}

#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// Every teammate worktree with its branch, ahead/behind and dirty files.
    List {
        #[arg(long)]
        json: bool,
    },
    /// The base branch against the worktree, uncommitted and untracked files included.
    Diff {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Commits the worktree's changes and merges its branch into the base branch (exit 3 on conflicts).
    Merge {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Deletes the worktree and its branch.
    Discard {
        name: String,
        /// Don't ask.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Every skill with where it came from; on a name clash, which one wins.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// An agent's memories and the team's, stale ones marked (against the repository root).
    List {
        /// Whose memories, besides the team's (default: the lead).
        #[arg(long)]
        agent: Option<AgentName>,
        #[arg(long)]
        json: bool,
    },
    /// One memory's body (the agent's own first, then the team's).
    Show {
        name: String,
        #[arg(long)]
        agent: Option<AgentName>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// Every task in review: who, which task, files and +/- counts, conflicts, age.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One task in review with its summary, files, conflicts and warnings.
    Show {
        id: TaskId,
        #[arg(long)]
        json: bool,
    },
    /// Only that task's commits, against the merge base.
    Diff {
        id: TaskId,
        #[arg(long)]
        json: bool,
    },
    /// Merge the task's commits into the base branch: it becomes completed (exit 3 on conflicts).
    Merge {
        id: TaskId,
        #[arg(long)]
        json: bool,
    },
    /// Approve the task's diff into the merge queue: it merges once the team's tests pass on
    /// the base with it (and the approved tasks ahead of it) merged in.
    Approve {
        id: TaskId,
        #[arg(long)]
        json: bool,
    },
    /// Back to the same teammate, which gets the note and continues.
    SendBack {
        id: TaskId,
        #[arg(long)]
        note: String,
        #[arg(long)]
        json: bool,
    },
    /// Take the task's changes back out of its teammate's branch; the task fails with the reason.
    Discard {
        id: TaskId,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// The queue in order (state, time), its test runs and throughput.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Stop starting test runs (one going on finishes).
    Pause {
        #[arg(long)]
        json: bool,
    },
    /// Start testing again.
    Resume {
        #[arg(long)]
        json: bool,
    },
    /// Take a task out of the queue; it stays in review.
    Remove {
        id: TaskId,
        #[arg(long)]
        json: bool,
    },
    /// Put a failed task (still in review) back into the queue at its place.
    Retry {
        id: TaskId,
        #[arg(long)]
        json: bool,
    },
    /// Run the queue of a team on PostgreSQL in this checkout until interrupted (`crew --store
    /// URL queue run`; the screen there runs it too). A team on files has its queue run by its
    /// own process.
    Run,
}

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Theme: default, light, high-contrast, or a file in $XDG_CONFIG_HOME/crew/themes.
    #[arg(long, default_value = "default")]
    pub theme: String,
    /// Keymap: default, vim, or a file in $XDG_CONFIG_HOME/crew/keymaps.
    #[arg(long, default_value = "default")]
    pub keymap: String,
}

#[derive(Debug, Subcommand)]
pub enum AttachCommand {
    /// A Claude Code agent team (~/.claude/teams/TEAM, ~/.claude/tasks/TEAM): members as
    /// teammates, tasks as the graph, every inbox message kept in crew's own log, teammates'
    /// permission requests answerable from the approvals pane.
    Claude {
        /// The team (a folder of ~/.claude/teams); default: the only one.
        team: Option<String>,
        #[command(flatten)]
        ui: UiArgs,
    },
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Team name (default: the repository folder's name, made valid).
    #[arg(long)]
    pub team: Option<String>,
    /// Base branch (default: the branch checked out now, else main).
    #[arg(long)]
    pub base: Option<String>,
    /// The agents' provider (default: the first found of Claude Code, Codex, an Anthropic or
    /// OpenAI key, a local OpenAI-compatible server).
    #[arg(long, value_enum)]
    pub provider: Option<InitProvider>,
    /// The model's name (default: the provider's usual one, or the local server's first).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// An OpenAI-compatible server (`--provider openai`), e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Take the first choice without asking.
    #[arg(long)]
    pub yes: bool,
}

/// The providers `crew init` can set up (`scripted` is `crew demo`'s; `command` is by hand).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitProvider {
    ClaudeCode,
    Codex,
    Anthropic,
    Openai,
}

impl InitProvider {
    /// The name crew.toml spells it with.
    pub fn name(self) -> &'static str {
        match self {
            InitProvider::ClaudeCode => "claude-code",
            InitProvider::Codex => "codex",
            InitProvider::Anthropic => "anthropic",
            InitProvider::Openai => "openai",
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Add a task; prints its id.
    Add {
        subject: String,
        #[arg(long)]
        desc: Option<String>,
        #[arg(long = "blocked-by", value_name = "ID")]
        blocked_by: Vec<TaskId>,
        /// Only an agent with this role may claim it.
        #[arg(long)]
        role: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Change a task's subject, description or dependencies.
    Update {
        id: TaskId,
        #[arg(long)]
        subject: Option<String>,
        #[arg(long)]
        desc: Option<String>,
        /// Replaces the task's blockers (repeat for several).
        #[arg(
            long = "blocked-by",
            value_name = "ID",
            conflicts_with = "clear_blocked_by"
        )]
        blocked_by: Vec<TaskId>,
        /// Removes every blocker.
        #[arg(long)]
        clear_blocked_by: bool,
        #[arg(long)]
        json: bool,
    },
    /// Every task, oldest first.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One task in full.
    Show {
        id: TaskId,
        #[arg(long)]
        json: bool,
    },
    /// The dependency graph in layers, with what is done, running, claimable or blocked.
    Graph {
        #[arg(long)]
        json: bool,
    },
    /// Claim a task (or the oldest claimable one with --next) for an agent.
    Claim {
        #[arg(required_unless_present = "next", conflicts_with = "next")]
        id: Option<TaskId>,
        #[arg(long)]
        next: bool,
        #[arg(long = "as", value_name = "NAME")]
        who: AgentName,
        /// Claim as this role (default: the agent's role in crew.toml).
        #[arg(long)]
        role: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Give a claimed task back (owner only).
    Release(OwnerArgs),
    /// Hand a task to a teammate (only it may then claim it), taking it from its owner if need
    /// be; --nobody puts it back in the pool.
    Assign {
        id: TaskId,
        #[arg(required_unless_present = "nobody", conflicts_with = "nobody")]
        to: Option<AgentName>,
        #[arg(long)]
        nobody: bool,
        #[arg(long)]
        json: bool,
    },
    /// Mark a claimed task completed (owner only).
    Done {
        #[command(flatten)]
        owner: OwnerArgs,
        #[arg(long)]
        result: Option<String>,
    },
    /// Mark a claimed task failed (owner only).
    Fail {
        #[command(flatten)]
        owner: OwnerArgs,
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Args)]
pub struct OwnerArgs {
    pub id: TaskId,
    #[arg(long = "as", value_name = "NAME")]
    pub who: AgentName,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    #[arg(long, value_parser = sender)]
    pub from: AgentName,
    #[arg(long, value_parser = recipient)]
    pub to: AgentName,
    /// message, task_assignment, status_update, shutdown_request, ... (default: message)
    #[arg(long = "type", default_value_t)]
    pub kind: crew_store::MessageKind,
    /// Needs an answer: gives the message a new request id and prints it.
    #[arg(long)]
    pub request: bool,
    /// With --request: seconds until the request expires (default from crew.toml).
    #[arg(long, requires = "request")]
    pub timeout: Option<u64>,
    pub text: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    pub name: AgentName,
    /// Every message, not only the unread ones.
    #[arg(long)]
    pub all: bool,
    /// Read without moving the cursor.
    #[arg(long)]
    pub peek: bool,
    /// Keep printing new messages as they arrive (one JSON line each with --json).
    #[arg(long)]
    pub follow: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RequestsArgs {
    /// Only requests still waiting for an answer.
    #[arg(long)]
    pub pending: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Answer {
    Approve,
    Reject,
}

#[derive(Debug, Args)]
pub struct RespondArgs {
    pub request_id: String,
    #[arg(long = "as", value_name = "NAME")]
    pub who: AgentName,
    pub answer: Answer,
    #[arg(long)]
    pub note: Option<String>,
    #[arg(long)]
    pub json: bool,
}

/// `--from`, named so in its refusal.
fn sender(value: &str) -> Result<AgentName, InvalidName> {
    AgentName::parse_as("sender", value)
}

/// `--to`, named so in its refusal.
fn recipient(value: &str) -> Result<AgentName, InvalidName> {
    AgentName::parse_as("recipient", value)
}
