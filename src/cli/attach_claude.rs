//! `crew attach claude [TEAM]`: the workbench on a Claude Code agent team.

use crate::cli::args::UiArgs;
use crew_team::claude_team::{self, AttachError, Mirror};

pub fn claude(team: Option<&str>, ui: UiArgs) -> anyhow::Result<()> {
    let home = claude_team::claude_home().ok_or(AttachError::NoClaudeHome)?;
    let team = claude_team::choose_team(&home, team)?;
    let root = claude_team::mirror_root(&team)?;
    let mut mirror = Mirror::open(&home, &team, &root)?;
    mirror.sync()?;
    let version = mirror
        .version()
        .unwrap_or_else(|| "version unknown".to_string());
    // Teammates crew runs in the person's repository are reviewed here too (the screen may
    // start before crew runs the first of them).
    let may = if crew_store::Workspace::new(&root).is_linked() {
        "answers and reviews"
    } else {
        "answers (and reviews, once crew runs a teammate)"
    };
    let header = format!(
        "Claude Code {version} team {team} · {may} · log {}",
        root.display()
    );
    let _watcher = mirror.watch()?;
    crew_tui::run(
        &root,
        crew_tui::Options {
            theme: ui.theme,
            keymap: ui.keymap,
            attached: Some(header),
        },
    )
}
