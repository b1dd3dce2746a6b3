//! Role instructions: the rules part of an agent's static prompt, assembled from sections in a
//! stable order — the general rules, the team protocol, then the role's duties (how to work,
//! verify and report). All of it depends only on the role and the files behind it, so the
//! cacheable prefix stays byte-identical across turns and jobs.
//!
//! A role's duties ship in `assets/roles/<role>.md`; a repository overrides them with
//! `.crew/roles/<role>.md`, or with a path in crew.toml's `[roles]` table (which wins).

use std::path::{Path, PathBuf};

use crew_agent::context::DEFAULT_RULES;
use crew_config::TeamConfig;

/// The roles crew ships duties for.
pub const ROLES: &[(&str, &str)] = &[
    ("lead", include_str!("../../../assets/roles/lead.md")),
    ("planner", include_str!("../../../assets/roles/planner.md")),
    (
        "implementer",
        include_str!("../../../assets/roles/implementer.md"),
    ),
    (
        "reviewer",
        include_str!("../../../assets/roles/reviewer.md"),
    ),
    (
        "explorer",
        include_str!("../../../assets/roles/explorer.md"),
    ),
];

/// How the team works together; the same for every role.
const TEAM_PROTOCOL: &str = "\
# Team protocol
- Work reaches you as a task (a packet with its goal, scope and acceptance checks) or as a \
message in your inbox. Your reply to a task is its result, which the lead reads.
- Coordinate only through the team tools (tasks and messages); teammates cannot see your \
screen. Ask the lead with send_message when you are blocked or the task is unclear.
- The person may interrupt you; the conversation then continues with their next message.
- Your conversation lasts: what you said and did earlier in it still holds.";

#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    #[error("{}: [roles] {role} = {path:?}: {role:?} is not a role (roles: {})", config.display(), names())]
    UnknownRole {
        config: PathBuf,
        role: String,
        path: String,
    },
    #[error("{}: cannot read the {role} role's instructions {}: {source}", config.display(), path.display())]
    Read {
        config: PathBuf,
        role: String,
        path: PathBuf,
        source: std::io::Error,
    },
}

fn names() -> String {
    ROLES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// Checks crew.toml's `[roles]` table: every key a role, every file readable.
pub fn check(config: &TeamConfig, repo_root: &Path) -> Result<(), RoleError> {
    for (role, path) in &config.roles {
        if !ROLES.iter().any(|(n, _)| n == role) {
            return Err(RoleError::UnknownRole {
                config: config.path.clone(),
                role: role.clone(),
                path: path.get_ref().clone(),
            });
        }
        duties(config, repo_root, role)?;
    }
    Ok(())
}

/// The duties of `role`: crew.toml's `[roles]` file, else `.crew/roles/<role>.md`, else the
/// shipped text (none for a role crew does not know).
pub fn duties(config: &TeamConfig, repo_root: &Path, role: &str) -> Result<String, RoleError> {
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).map_err(|source| RoleError::Read {
            config: config.path.clone(),
            role: role.to_string(),
            path,
            source,
        })
    };
    if let Some(path) = config.roles.get(role) {
        return read(repo_root.join(path.get_ref()));
    }
    let local = repo_root.join(".crew/roles").join(format!("{role}.md"));
    if local.is_file() {
        return read(local);
    }
    Ok(ROLES
        .iter()
        .find(|(n, _)| *n == role)
        .map_or(String::new(), |(_, text)| (*text).to_string()))
}

/// The rules section of `role`'s static prompt: general rules, team protocol, role duties.
pub fn assemble(role: &str, duties: &str) -> String {
    let mut out = format!("{DEFAULT_RULES}\n\n{TEAM_PROTOCOL}");
    let duties = duties.trim();
    if !duties.is_empty() {
        out.push_str(&format!("\n\n# Your role: {role}\n{duties}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> TeamConfig {
        let text = format!(
            "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = {{ provider = \"scripted\" }}\n{extra}"
        );
        TeamConfig::parse(Path::new("crew.toml"), &text).unwrap()
    }

    #[test]
    fn each_role_has_its_duties_after_the_rules_and_the_protocol() {
        let dir = tempfile::tempdir().unwrap();
        let config = config("");
        for (role, _) in ROLES {
            let text = assemble(role, &duties(&config, dir.path(), role).unwrap());
            let at = |needle: &str| text.find(needle).unwrap_or(usize::MAX);
            assert!(at("# Rules") < at("# Team protocol"), "{role}");
            assert!(
                at("# Team protocol") < at(&format!("# Your role: {role}")),
                "{role}"
            );
        }
        let reviewer = assemble(
            "reviewer",
            &duties(&config, dir.path(), "reviewer").unwrap(),
        );
        assert!(reviewer.contains("VERDICT: PASS"));
        let implementer = duties(&config, dir.path(), "implementer").unwrap();
        assert!(implementer.contains("Run every acceptance check"));
        assert!(duties(&config, dir.path(), "juggler").unwrap().is_empty());
    }

    #[test]
    fn a_repository_overrides_a_role_and_crew_toml_wins_over_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".crew/roles")).unwrap();
        std::fs::write(dir.path().join(".crew/roles/reviewer.md"), "Be strict.").unwrap();
        std::fs::write(dir.path().join("mine.md"), "Be kind.").unwrap();
        let plain = config("");
        assert_eq!(
            duties(&plain, dir.path(), "reviewer").unwrap(),
            "Be strict."
        );
        let pointed = config("\n[roles]\nreviewer = \"mine.md\"\n");
        assert_eq!(
            duties(&pointed, dir.path(), "reviewer").unwrap(),
            "Be kind."
        );
        check(&pointed, dir.path()).unwrap();

        let unknown = config("\n[roles]\njuggler = \"mine.md\"\n");
        let error = check(&unknown, dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("[roles] juggler = \"mine.md\": \"juggler\" is not a role"),
            "{error}"
        );
        let missing = config("\n[roles]\nlead = \"gone.md\"\n");
        let error = check(&missing, dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("cannot read the lead role's instructions") && error.contains("gone.md"),
            "{error}"
        );
    }
}
