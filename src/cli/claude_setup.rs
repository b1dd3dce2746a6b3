//! `crew claude setup [--undo]`: this repository's Claude Code leads launch their teammates
//! through crew (`crew_team::claude_team::setup`), and back.

use std::path::Path;

use anyhow::anyhow;
use serde_json::Value;

use crate::cli::args::MergeArg;
use crate::cli::project::find_upwards;
use crew_team::claude_team::setup::{self, Change, SETTINGS};

pub fn run(start: &Path, undo: bool, merge: MergeArg) -> anyhow::Result<()> {
    let root = find_upwards(start, ".git").ok_or_else(|| {
        anyhow!(
            "{} is not inside a git repository; the setup is for one repository",
            start.display()
        )
    })?;
    let settings = root.join(SETTINGS);
    if undo {
        let undone = setup::undo(&root)?;
        println!("{}:", settings.display());
        for change in &undone.restored {
            println!("  {}", said(change, "put back to"));
        }
        for change in &undone.kept {
            println!(
                "  {}: left as {} (changed since the setup)",
                change.key,
                value(change.after.as_ref())
            );
        }
        for path in &undone.removed {
            println!("removed {}", path.display());
        }
        return Ok(());
    }
    let merge_when_done = match merge {
        MergeArg::Manual => false,
        MergeArg::Auto => true,
        MergeArg::Queue => {
            anyhow::bail!(
                "--merge queue needs the merge queue of `crew up`, which a Claude Code team does \
                 not run: use --merge manual (the person merges from crew's review queue) or \
                 --merge auto"
            )
        }
    };
    let exe = std::env::current_exe()?;
    let changes = setup::apply(&root, &exe, merge_when_done)?;
    if changes.is_empty() {
        println!("{}: already set up; nothing changed", settings.display());
    } else {
        println!("{}:", settings.display());
        for change in &changes {
            println!("  {}", said(change, "set to"));
        }
    }
    println!(
        "{} runs `{} cc-teammate` for each teammate a Claude Code lead here starts.\n\
         Start `claude` here as usual; undo with `crew claude setup --undo`.",
        root.join(setup::LAUNCHER).display(),
        exe.display()
    );
    if merge_when_done {
        println!(
            "--merge auto: a teammate's completed task is merged at once (conflicts and changes \
             to crew.toml, .crew/, hooks or CI still wait in `crew attach claude`'s review queue)"
        );
    } else {
        println!(
            "A teammate's completed task waits in the review queue of `crew attach claude` until \
             you merge it (`crew claude setup --merge auto` merges at once)"
        );
    }
    Ok(())
}

fn said(change: &Change, verb: &str) -> String {
    format!(
        "{}: {verb} {} (was {})",
        change.key,
        value(change.after.as_ref()),
        value(change.before.as_ref())
    )
}

fn value(value: Option<&Value>) -> String {
    value.map_or_else(|| "unset".to_string(), Value::to_string)
}
