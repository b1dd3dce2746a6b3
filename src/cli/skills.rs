//! `crew skills list`: the skills agents are offered, where each came from, and which one wins
//! a name clash.

use serde_json::json;

use crate::cli::args::SkillsCommand;
use crate::cli::exit::CliError;
use crate::cli::output;
use crate::cli::project::Project;
use crew_agent::instructions::user_crew_dir;
use crew_tools::SkillCatalogue;
use crew_tools::skills::Skill;

pub fn run(project: &Project, cmd: SkillsCommand) -> anyhow::Result<()> {
    match cmd {
        SkillsCommand::List { json } => list(project, json),
    }
}

fn list(project: &Project, as_json: bool) -> anyhow::Result<()> {
    let folders = SkillCatalogue::folders(project.workspace.root(), user_crew_dir().as_deref());
    let catalogue = SkillCatalogue::discover(&folders);
    let winner = |skill: &Skill| {
        catalogue
            .skills()
            .iter()
            .find(|s| s.name == skill.name)
            .map(|s| s.source.as_str())
    };
    if as_json {
        let entry = |skill: &Skill| {
            json!({
                "name": skill.name,
                "description": skill.description,
                "source": skill.source.as_str(),
                "path": skill.dir,
                "offered": skill.offered,
            })
        };
        output::json(&json!({
            "folders": folders.iter().map(|(source, dir)| json!({"source": source.as_str(), "path": dir})).collect::<Vec<_>>(),
            "skills": catalogue.skills().iter().map(entry).collect::<Vec<_>>(),
            "shadowed": catalogue.shadowed().iter().map(|s| {
                let mut e = entry(s);
                e["shadowed_by"] = json!(winner(s));
                e
            }).collect::<Vec<_>>(),
            "broken": catalogue.broken().iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        }))?;
    } else {
        if catalogue.skills().is_empty() && catalogue.shadowed().is_empty() {
            println!(
                "no skills; crew looks in {}",
                folders
                    .iter()
                    .map(|(_, dir)| dir.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for skill in catalogue.skills() {
            println!(
                "{:<24} {:<15} {}{}",
                output::one_line(&skill.name),
                skill.source.as_str(),
                output::one_line(&skill.description),
                if skill.offered {
                    ""
                } else {
                    " (not offered to agents: disable-model-invocation)"
                }
            );
        }
        for skill in catalogue.shadowed() {
            println!(
                "{:<24} {:<15} (shadowed: the {} skill of that name wins) {}",
                output::one_line(&skill.name),
                skill.source.as_str(),
                winner(skill).unwrap_or("?"),
                output::one_line(&skill.dir.display().to_string())
            );
        }
        for error in catalogue.broken() {
            eprintln!(
                "crew: skill not usable: {}",
                output::one_line(&error.to_string())
            );
        }
    }
    if catalogue.broken().is_empty() {
        Ok(())
    } else {
        Err(CliError::Refused(format!(
            "{} skill folder(s) could not be read (see above)",
            catalogue.broken().len()
        ))
        .into())
    }
}
