//! How a Claude Code lead launches a teammate in `teammateMode: "tmux"`, as recorded from
//! Claude Code 2.1.197 (`CLAUDE_CODE_TEAMMATE_COMMAND` names the program that stands in for
//! `claude`): `--agent-id NAME@TEAM --agent-name NAME --team-name TEAM --agent-color C
//! --parent-session-id UUID [--plan-mode-required] --model M`, with `CLAUDECODE=1` and
//! `CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1` in the environment. The flags are an experimental
//! feature's and change between releases, so arguments crew does not know are kept (in order)
//! and passed on, never fatal; what is missing or inconsistent is refused naming the flag.

use std::fs;
use std::path::Path;

use super::files::TeamFile;
use super::{AttachError, inbox_write};

/// The Claude Code versions whose team launch crew has recorded.
pub const RECORDED_VERSIONS: &[&str] = &["2.1.197"];

/// The environment variables a lead sets for every teammate it launches.
pub const TEAMMATE_ENV: &[&str] = &["CLAUDECODE", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LaunchError {
    #[error("Claude Code launched a teammate without `{0}`")]
    Missing(&'static str),
    #[error("`{0}` needs a value")]
    NoValue(&'static str),
    #[error("`{flag}` {value:?} is not a folder name")]
    BadName { flag: &'static str, value: String },
    #[error("`--agent-id` {agent_id:?} is not `--agent-name`@`--team-name` ({name:?}@{team:?})")]
    Inconsistent {
        agent_id: String,
        name: String,
        team: String,
    },
    #[error(
        "Claude Code {version} ({source_of}) is a version crew has not recorded teams of; crew \
         knows {known}. Unset CLAUDE_CODE_TEAMMATE_COMMAND (`crew claude setup --undo`) to run \
         its teammates without crew"
    )]
    UnrecordedVersion {
        version: String,
        source_of: String,
        known: String,
    },
}

/// One teammate launch, as Claude Code asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeammateLaunch {
    /// `NAME@TEAM`.
    pub agent_id: String,
    pub name: String,
    pub team: String,
    pub color: Option<String>,
    /// The lead's session id.
    pub parent_session_id: String,
    pub plan_mode_required: bool,
    pub model: Option<String>,
    /// Arguments crew does not know, in the order given, passed on unchanged.
    pub unknown: Vec<String>,
    /// Of [`TEAMMATE_ENV`], those not set to `1`.
    pub env_missing: Vec<&'static str>,
}

/// Claude Code's flags that take a value, and the field each fills.
const VALUE_FLAGS: &[&str] = &[
    "--agent-id",
    "--agent-name",
    "--team-name",
    "--agent-color",
    "--parent-session-id",
    "--model",
];

const PLAN_MODE: &str = "--plan-mode-required";

impl TeammateLaunch {
    /// Reads the arguments after the program's name and the environment (`env(name)`).
    pub fn parse(
        args: &[String],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, LaunchError> {
        let mut values: [Option<String>; 6] = Default::default();
        let mut plan_mode_required = false;
        let mut unknown = Vec::new();
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            if arg == PLAN_MODE {
                plan_mode_required = true;
                continue;
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
                _ => (arg.as_str(), None),
            };
            let Some(slot) = VALUE_FLAGS.iter().position(|f| *f == flag) else {
                unknown.push(arg.clone());
                continue;
            };
            let value = match inline {
                Some(value) => value,
                None => rest
                    .next()
                    .filter(|v| !v.starts_with("--"))
                    .cloned()
                    .ok_or(LaunchError::NoValue(VALUE_FLAGS[slot]))?,
            };
            values[slot] = Some(value);
        }
        let [agent_id, name, team, color, parent_session_id, model] = values;
        let agent_id = agent_id.ok_or(LaunchError::Missing("--agent-id"))?;
        let name = folder_name("--agent-name", name)?;
        let team = folder_name("--team-name", team)?;
        let parent_session_id =
            parent_session_id.ok_or(LaunchError::Missing("--parent-session-id"))?;
        if agent_id != format!("{name}@{team}") {
            return Err(LaunchError::Inconsistent {
                agent_id,
                name,
                team,
            });
        }
        let env_missing = TEAMMATE_ENV
            .iter()
            .copied()
            .filter(|var| env(var).as_deref() != Some("1"))
            .collect();
        Ok(TeammateLaunch {
            agent_id,
            name,
            team,
            color,
            parent_session_id,
            plan_mode_required,
            model,
            unknown,
            env_missing,
        })
    }

    /// The arguments for the real `claude`, in the order Claude Code writes them, the unknown
    /// ones last.
    pub fn to_args(&self) -> Vec<String> {
        let mut out = vec![
            "--agent-id".to_string(),
            self.agent_id.clone(),
            "--agent-name".to_string(),
            self.name.clone(),
            "--team-name".to_string(),
            self.team.clone(),
        ];
        if let Some(color) = &self.color {
            out.extend(["--agent-color".to_string(), color.clone()]);
        }
        out.extend([
            "--parent-session-id".to_string(),
            self.parent_session_id.clone(),
        ]);
        if self.plan_mode_required {
            out.push(PLAN_MODE.to_string());
        }
        if let Some(model) = &self.model {
            out.extend(["--model".to_string(), model.clone()]);
        }
        out.extend(self.unknown.iter().cloned());
        out
    }

    /// What is unusual about this launch, one line each, to show (never fatal).
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.unknown.is_empty() {
            out.push(format!(
                "arguments crew does not know, passed on: {}",
                self.unknown.join(" ")
            ));
        }
        for var in &self.env_missing {
            out.push(format!(
                "{var}=1 is not set: Claude Code sets it for every teammate it launches"
            ));
        }
        out
    }

    /// The teammate's crew name (its worktree's and branch's): its Claude Code name made valid.
    pub fn crew_name(&self) -> crew_store::AgentName {
        super::files::crew_name(&self.name)
    }

    /// The Claude Code version of the lead, when its session file (in `claude_home`) says.
    pub fn lead_version(&self, claude_home: &Path) -> Option<String> {
        super::lead_version(claude_home, &self.parent_session_id)
    }

    /// Writes `text` into the team lead's inbox from this teammate, as Claude Code's teammates
    /// write, so the lead (and the person watching it) learns why the teammate is not there.
    /// `false`: the team's folder is gone (its lead exited), nobody to tell.
    pub fn tell_lead(&self, claude_home: &Path, text: &str) -> Result<bool, AttachError> {
        let dir = claude_home.join("teams").join(&self.team);
        let Ok(bytes) = fs::read(dir.join("config.json")) else {
            return Ok(false);
        };
        let lead = serde_json::from_slice::<TeamFile>(&bytes)
            .ok()
            .and_then(|t| t.lead_agent_id.split('@').next().map(str::to_string))
            .filter(|lead| folder_name("leadAgentId", Some(lead.clone())).is_ok())
            .unwrap_or_else(|| "team-lead".to_string());
        let inboxes = dir.join("inboxes");
        fs::create_dir_all(&inboxes).map_err(|source| AttachError::Io {
            path: inboxes.clone(),
            source,
        })?;
        inbox_write::append(&inboxes.join(format!("{lead}.json")), &self.name, text)?;
        Ok(true)
    }
}

fn folder_name(flag: &'static str, value: Option<String>) -> Result<String, LaunchError> {
    let value = value.ok_or(LaunchError::Missing(flag))?;
    if value.is_empty() || value.starts_with('.') || value.contains(['/', '\\', '@']) {
        return Err(LaunchError::BadName { flag, value });
    }
    Ok(value)
}

/// Refuses a version crew has not recorded; `source_of` says where the version was read.
pub fn check_version(version: &str, source_of: &str) -> Result<(), LaunchError> {
    if RECORDED_VERSIONS.contains(&version) {
        return Ok(());
    }
    Err(LaunchError::UnrecordedVersion {
        version: version.to_string(),
        source_of: source_of.to_string(),
        known: RECORDED_VERSIONS.join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arguments and environment of both teammates of the recorded tmux-mode run.
    const SHIM_LOG: &str =
        include_str!("../../../../tests/fixtures/claude-team/teams-tmux/teammate-shim.log");

    /// One launch of the log: its arguments and its `NAME=value` variables.
    type Launch = (Vec<String>, Vec<(String, String)>);

    fn launches() -> Vec<Launch> {
        let mut out: Vec<Launch> = Vec::new();
        for line in SHIM_LOG.lines() {
            if line.starts_with("=== ") {
                out.push(Default::default());
            } else if let Some(last) = out.last_mut() {
                match line.strip_prefix("ARG: ") {
                    Some(arg) => last.0.push(arg.to_string()),
                    None => {
                        if let Some((k, v)) = line.split_once('=') {
                            last.1.push((k.to_string(), v.to_string()));
                        }
                    }
                }
            }
        }
        out
    }

    fn parse(args: &[String], env: &[(String, String)]) -> Result<TeammateLaunch, LaunchError> {
        TeammateLaunch::parse(args, |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn the_recorded_launches_parse_and_are_passed_on_unchanged() {
        let launches = launches();
        assert_eq!(launches.len(), 2);
        let worker1 = parse(&launches[0].0, &launches[0].1).unwrap();
        assert_eq!(
            worker1,
            TeammateLaunch {
                agent_id: "worker1@session-dd379740".into(),
                name: "worker1".into(),
                team: "session-dd379740".into(),
                color: Some("blue".into()),
                parent_session_id: "dd379740-b5fa-4cdf-85c2-79d5c9d1275d".into(),
                plan_mode_required: false,
                model: Some("claude-opus-4-8".into()),
                unknown: vec![],
                env_missing: vec![],
            }
        );
        assert!(worker1.notes().is_empty());
        let worker2 = parse(&launches[1].0, &launches[1].1).unwrap();
        assert_eq!(worker2.name, "worker2");
        assert_eq!(worker2.color.as_deref(), Some("green"));
        assert!(worker2.plan_mode_required);
        for (args, env) in &launches {
            assert_eq!(&parse(args, env).unwrap().to_args(), args);
        }
    }

    #[test]
    fn unknown_arguments_are_kept_in_order_and_shown_never_fatal() {
        let (mut args, env) = launches().remove(0);
        args.insert(2, "--future-flag".into());
        args.extend(strings(&["--effort", "high", "--agent-type=reviewer"]));
        let launch = parse(&args, &env).unwrap();
        assert_eq!(
            launch.unknown,
            strings(&["--future-flag", "--effort", "high", "--agent-type=reviewer"])
        );
        assert_eq!(launch.name, "worker1");
        let passed = launch.to_args();
        assert_eq!(
            &passed[passed.len() - 4..],
            &strings(&["--future-flag", "--effort", "high", "--agent-type=reviewer"])
        );
        assert_eq!(
            launch.notes(),
            vec![
                "arguments crew does not know, passed on: --future-flag --effort high --agent-type=reviewer"
            ]
        );
        // `--flag=value` is read as Claude Code's own flags too.
        let launch = parse(
            &strings(&[
                "--agent-id=w@t",
                "--agent-name=w",
                "--team-name=t",
                "--parent-session-id=u",
            ]),
            &env,
        )
        .unwrap();
        assert_eq!((launch.name.as_str(), launch.team.as_str()), ("w", "t"));
        assert_eq!(launch.color, None);
    }

    #[test]
    fn a_launch_without_the_team_environment_is_shown() {
        let (args, _) = launches().remove(0);
        let launch = parse(&args, &[("CLAUDECODE".into(), "1".into())]).unwrap();
        assert_eq!(
            launch.env_missing,
            vec!["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"]
        );
        assert_eq!(launch.notes().len(), 1);
        assert!(launch.notes()[0].starts_with("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1 is not set"));
    }

    #[test]
    fn missing_or_inconsistent_flags_are_refused_naming_the_flag() {
        let (args, env) = launches().remove(0);
        let without = |flag: &str| {
            let i = args.iter().position(|a| a == flag).unwrap();
            let mut out = args.clone();
            out.drain(i..i + 2);
            out
        };
        for flag in [
            "--agent-id",
            "--agent-name",
            "--team-name",
            "--parent-session-id",
        ] {
            let err = parse(&without(flag), &env).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("Claude Code launched a teammate without `{flag}`")
            );
        }
        let mut cut = args.clone();
        cut.truncate(cut.len() - 1);
        assert_eq!(
            parse(&cut, &env).unwrap_err(),
            LaunchError::NoValue("--model")
        );
        let mut other = args.clone();
        other[3] = "worker9".into();
        assert!(matches!(
            parse(&other, &env).unwrap_err(),
            LaunchError::Inconsistent { .. }
        ));
        let mut escape = args.clone();
        escape[5] = "../x".into();
        escape[1] = "worker1@../x".into();
        assert_eq!(
            parse(&escape, &env).unwrap_err().to_string(),
            "`--team-name` \"../x\" is not a folder name"
        );
    }

    #[test]
    fn a_version_crew_has_not_recorded_is_refused_naming_it() {
        check_version("2.1.197", "claude --version").unwrap();
        let err = check_version("2.2.0", "`claude --version`").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Claude Code 2.2.0 (`claude --version`) is a version crew has not recorded teams of; crew knows 2.1.197"),
            "{err}"
        );
    }
}
