//! `crew cc-teammate`: what a Claude Code lead launches for each teammate once `crew claude
//! setup` named it in `CLAUDE_CODE_TEAMMATE_COMMAND`. It reads the launch (arguments and
//! environment), shows what is unusual about it, refuses a Claude Code version crew has not
//! recorded (naming it, here and in the lead's inbox), and runs the real `claude` for that
//! teammate in a git worktree of its own (`.worktrees/NAME` on branch `crew/NAME`, from the
//! lead's branch), so teammates no longer share the lead's checkout. When `claude` ends (done,
//! shut down by the lead, or its pane closed) what it left in the worktree becomes a commit on
//! its branch, kept whatever became of the lead, and said here, in `.crew/logs/cc-teammates.log`
//! and to the lead; crew exits as `claude` did, so the lead sees its teammate stop as it would.
//! Outside a repository it can make a worktree in, `claude` runs in the lead's folder, as
//! Claude Code would run it (said too).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::anyhow;

use crate::cli::agents_found::{on_path, version_of};
use crate::cli::project::find_upwards;
use crew_git::{Author, Worktree, Worktrees, current_branch, exclude_from_git};
use crew_store::Workspace;
use crew_team::claude_team::{
    Mirror, claude_home,
    gate::{HookCall, TeammateGate, shell_word},
    mirror_root,
    teammate::{LaunchError, TeammateLaunch, check_version},
};

/// Runs the launch; returns when the teammate's `claude` ended or could not start.
pub fn run(args: &[String], merge_when_done: bool) -> ExitCode {
    let launch = match TeammateLaunch::parse(args, |name| std::env::var(name).ok()) {
        Ok(launch) => launch,
        Err(e) => {
            eprintln!("crew cc-teammate: {e} (arguments: {})", args.join(" "));
            return ExitCode::from(2);
        }
    };
    for note in launch.notes() {
        eprintln!("crew cc-teammate: {note}");
    }
    let home = claude_home();
    let error = match start(&launch, home.as_ref(), merge_when_done) {
        Ok(code) => return code,
        Err(e) => e,
    };
    let code = if error.downcast_ref::<LaunchError>().is_some() {
        3
    } else {
        1
    };
    eprintln!("crew cc-teammate: {error:#}");
    tell_lead(
        &launch,
        home.as_ref(),
        &format!("crew did not start teammate {}: {error:#}", launch.name),
    );
    ExitCode::from(code)
}

/// `text` into the lead's inbox, or why it could not be.
fn tell_lead(launch: &TeammateLaunch, home: Option<&PathBuf>, text: &str) {
    let Some(home) = home else {
        return;
    };
    match launch.tell_lead(home, text) {
        Ok(true) => {}
        Ok(false) => eprintln!(
            "crew cc-teammate: team {} has no folder in {} (its lead exited?): nobody told",
            launch.team,
            home.display()
        ),
        Err(e) => eprintln!("crew cc-teammate: the lead could not be told: {e}"),
    }
}

/// Checks the versions, runs `claude` and keeps its work; `claude`'s exit code.
fn start(
    launch: &TeammateLaunch,
    home: Option<&PathBuf>,
    merge_when_done: bool,
) -> anyhow::Result<ExitCode> {
    let claude = on_path("claude").ok_or_else(|| {
        anyhow!("no `claude` on PATH to run the teammate with (crew runs Claude Code's own CLI)")
    })?;
    let version = version_of(&claude).map_err(|why| anyhow!(why))?;
    check_version(&version, &format!("`{} --version`", claude.display()))?;
    if let Some(lead) = home.and_then(|home| launch.lead_version(home)) {
        check_version(&lead, "the lead's session file")?;
    }
    let mut command = std::process::Command::new(&claude);
    command.args(launch.to_args());
    let cwd = std::env::current_dir()?;
    let (trees, worktree) = match own_worktree(&cwd, launch) {
        Ok(place) => place,
        Err(e) => {
            eprintln!(
                "crew cc-teammate: {} of team {} runs Claude Code {version} in the lead's folder \
                 (no worktree of its own: {e:#})",
                launch.name, launch.team
            );
            return Err(anyhow!(
                "cannot start {}: {}",
                claude.display(),
                command.exec()
            ));
        }
    };
    eprintln!(
        "crew cc-teammate: {} of team {} runs Claude Code {version} in {} (branch {})",
        launch.name,
        launch.team,
        worktree.path.display(),
        worktree.branch
    );
    // The teammate's commands' private temporary folder, while its `claude` runs.
    let temp = tempfile::Builder::new().prefix("crew-cc-tmp-").tempdir();
    let temp_path = temp
        .as_ref()
        .ok()
        .and_then(|t| t.path().canonicalize().ok());
    let hook = HookSettings {
        worktree: &worktree.path,
        temp: temp_path.as_deref(),
        merge_when_done,
    };
    match home.map(|home| gate_settings(home, launch, &trees, &hook)) {
        Some(Ok(settings)) => {
            command
                .args(crew_team::work::PERSONS_SETTINGS_ONLY)
                .arg("--settings")
                .arg(settings);
            eprintln!(
                "crew cc-teammate: its tool calls go through crew's permissions and its \
                 completed tasks through crew's review{}: `crew attach claude {}`",
                if merge_when_done {
                    " (merged at once: --merge auto)"
                } else {
                    ""
                },
                launch.team
            );
        }
        Some(Err(e)) => eprintln!(
            "crew cc-teammate: {} runs without crew's permissions and review ({e:#}); Claude \
             Code's own prompts ask",
            launch.name
        ),
        None => eprintln!(
            "crew cc-teammate: no Claude Code folder ($CLAUDE_CONFIG_DIR, $HOME): {} runs \
             without crew's permissions and review",
            launch.name
        ),
    }
    let mut child = command
        .current_dir(&worktree.path)
        .spawn()
        .map_err(|e| anyhow!("cannot start {}: {e}", claude.display()))?;
    forward_stops_to(child.id());
    let status = child.wait()?;
    drop(temp);
    let kept = keep_work(&trees, &worktree, launch);
    log(&trees, &kept);
    eprintln!("crew cc-teammate: {kept}");
    tell_lead(launch, home, &kept);
    Ok(ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1),
    ))
}

/// What the teammate's hook is told beyond its team and name.
struct HookSettings<'a> {
    worktree: &'a Path,
    /// Its commands' private temporary folder (see `TeammateGate::temp`).
    temp: Option<&'a Path>,
    merge_when_done: bool,
}

/// crew's workspace for the team, linked to the repository, with the teammate on it; and the
/// `--settings` that hook its tool calls to `crew cc-teammate-hook`.
fn gate_settings(
    home: &Path,
    launch: &TeammateLaunch,
    trees: &Worktrees,
    hook: &HookSettings<'_>,
) -> anyhow::Result<String> {
    let root = mirror_root(&launch.team)?;
    let mut mirror = Mirror::open(home, &launch.team, &root)?;
    mirror.link(trees.root())?;
    mirror.sync()?;
    mirror.admit(&launch.name)?;
    let exe = std::env::current_exe()?;
    let mut command = format!(
        "{} cc-teammate-hook --team {} --name {} --worktree {}",
        shell_word(&exe.display().to_string()),
        shell_word(&launch.team),
        shell_word(&launch.name),
        shell_word(&hook.worktree.display().to_string()),
    );
    if let Some(temp) = hook.temp {
        command.push_str(&format!(
            " --tmp {}",
            shell_word(&temp.display().to_string())
        ));
    }
    if hook.merge_when_done {
        command.push_str(" --merge-when-done");
    }
    // Past the request's own timeout, so crew's denial is what Claude Code hears.
    let config = crew_config::TeamConfig::load(&root.join(crew_config::FILE_NAME))?;
    let timeout = config.request_timeout().as_secs() + 30;
    // After each call too: what it gave goes into the teammate's pane on crew's screen.
    let settings = serde_json::json!({
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [
                {"type": "command", "command": command, "timeout": timeout}
            ]}],
            "PostToolUse": [{"matcher": "*", "hooks": [
                {"type": "command", "command": command, "timeout": 30}
            ]}]
        }
    });
    Ok(settings.to_string())
}

/// `crew cc-teammate-hook`: one tool call of a teammate, answered on stdout as Claude Code's
/// `PreToolUse` hooks answer. A call crew cannot judge is refused (exit 2, the reason on
/// stderr, which Claude Code shows the model), never let through unjudged.
pub fn hook(args: &crate::cli::args::CcTeammateHookArgs) -> anyhow::Result<()> {
    let mut input = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut input)?;
    let refuse = |why: String| -> anyhow::Result<()> {
        eprintln!("crew: {why}");
        std::process::exit(2)
    };
    let call = match HookCall::parse(&input) {
        Ok(call) => call,
        Err(e) => return refuse(e),
    };
    let Some(home) = claude_home() else {
        return refuse("no Claude Code folder ($CLAUDE_CONFIG_DIR, $HOME)".to_string());
    };
    let root = match mirror_root(&args.team) {
        Ok(root) => root,
        Err(e) => return refuse(e.to_string()),
    };
    let gate = TeammateGate {
        home,
        team: args.team.clone(),
        teammate: args.name.clone(),
        workspace: Workspace::new(root),
        worktree: args.worktree.clone(),
        temp: args.tmp.clone(),
        merge_when_done: args.merge_when_done,
    };
    let answer = gate.answer(&call);
    if let Some(reason) = answer.reason() {
        tracing::info!(tool = %call.tool_name, %reason, "cc-teammate-hook");
    }
    if let Some(json) = answer.to_json() {
        println!("{json}");
    }
    Ok(())
}

/// `.worktrees/NAME` on `crew/NAME`, from the branch the lead's checkout is on.
fn own_worktree(cwd: &Path, launch: &TeammateLaunch) -> anyhow::Result<(Worktrees, Worktree)> {
    let root = find_upwards(cwd, ".git")
        .ok_or_else(|| anyhow!("{} is not inside a git repository", cwd.display()))?;
    let base = current_branch(&root).unwrap_or_else(|| "main".to_string());
    // As `crew init` does: the worktrees and crew's folder stay out of the lead's `git status`.
    exclude_from_git(&root, &[".worktrees", ".crew"])?;
    let trees = Worktrees::open(&root)?;
    let worktree = trees.ensure(launch.crew_name().as_str(), &base, &[], &[])?;
    Ok((trees, worktree))
}

/// What `claude` left in the worktree, committed on its branch; says what became of it.
fn keep_work(trees: &Worktrees, worktree: &Worktree, launch: &TeammateLaunch) -> String {
    let name = &worktree.name;
    let before = trees.head_of(name).ok();
    let message = format!(
        "{}: work of Claude Code teammate {}",
        launch.name, launch.agent_id
    );
    match trees.commit_work(name, &message, &Author::crew(name)) {
        Ok(head) if Some(&head) != before.as_ref() => format!(
            "{}'s work is kept as commit {} on branch {} (it reaches the lead's checkout when \
             the person merges it: `git merge {}`)",
            launch.name,
            &head[..head.len().min(12)],
            worktree.branch,
            worktree.branch
        ),
        Ok(_) => format!(
            "{} left nothing uncommitted in {}",
            launch.name,
            worktree.path.display()
        ),
        Err(e) => format!(
            "{}'s work could not be committed ({e}); it stays uncommitted in {}",
            launch.name,
            worktree.path.display()
        ),
    }
}

/// A line in `.crew/logs/cc-teammates.log`, which outlives the teammate's pane.
fn log(trees: &Worktrees, line: &str) {
    let dir = trees.root().join(".crew/logs");
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("cc-teammates.log"))?;
        writeln!(file, "{} {line}", crew_store::task::now_rfc3339())
    });
    if let Err(e) = written {
        eprintln!("crew cc-teammate: {}: {e}", dir.display());
    }
}

/// The teammate's `claude`, for [`forward`].
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, signal) };
    }
}

/// A hang-up or termination aimed at this process goes to `claude`, and crew waits for it to end
/// (to keep its work) instead of ending first; ctrl-c reaches `claude` from the terminal itself.
fn forward_stops_to(pid: u32) {
    CHILD.store(i32::try_from(pid).unwrap_or(0), Ordering::Relaxed);
    let handler = forward as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: setting signal dispositions, after `claude` started (it keeps the defaults); the
    // handler only reads an atomic and calls kill.
    unsafe {
        libc::signal(libc::SIGHUP, handler);
        libc::signal(libc::SIGTERM, handler);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
}
