//! `crew cc-teammate`: what a Claude Code lead launches for each teammate once `crew claude
//! setup` named it in `CLAUDE_CODE_TEAMMATE_COMMAND`. It reads the launch (arguments and
//! environment), shows what is unusual about it, refuses a Claude Code version crew has not
//! recorded (naming it, here and in the lead's inbox), and then becomes the real `claude` for
//! that teammate (exec: the same process, so the lead sees it run and stop as its own).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::anyhow;

use crate::cli::agents_found::{on_path, version_of};
use crew_team::claude_team::{
    claude_home,
    teammate::{LaunchError, TeammateLaunch, check_version},
};

/// Runs the launch; returns only when the teammate could not be started.
pub fn run(args: &[String]) -> ExitCode {
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
    let Err(error) = start(&launch, home.as_ref());
    let code = if error.downcast_ref::<LaunchError>().is_some() {
        3
    } else {
        1
    };
    let text = format!("crew did not start teammate {}: {error:#}", launch.name);
    eprintln!("crew cc-teammate: {error:#}");
    if let Some(home) = &home {
        match launch.tell_lead(home, &text) {
            Ok(true) => {}
            Ok(false) => eprintln!(
                "crew cc-teammate: team {} has no folder in {} (its lead exited?): nobody told",
                launch.team,
                home.display()
            ),
            Err(e) => eprintln!("crew cc-teammate: the lead could not be told: {e}"),
        }
    }
    ExitCode::from(code)
}

/// Checks the versions and becomes `claude`; returns only its error.
fn start(
    launch: &TeammateLaunch,
    home: Option<&PathBuf>,
) -> anyhow::Result<std::convert::Infallible> {
    let claude = on_path("claude").ok_or_else(|| {
        anyhow!("no `claude` on PATH to run the teammate with (crew runs Claude Code's own CLI)")
    })?;
    let version = version_of(&claude).map_err(|why| anyhow!(why))?;
    check_version(&version, &format!("`{} --version`", claude.display()))?;
    if let Some(lead) = home.and_then(|home| launch.lead_version(home)) {
        check_version(&lead, "the lead's session file")?;
    }
    eprintln!(
        "crew cc-teammate: {} of team {} runs Claude Code {version}",
        launch.name, launch.team
    );
    let error = std::process::Command::new(&claude)
        .args(launch.to_args())
        .exec();
    Err(anyhow!("cannot start {}: {error}", claude.display()))
}
