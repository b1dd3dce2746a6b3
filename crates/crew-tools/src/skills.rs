//! Skills: folders holding a `SKILL.md` (front matter `name` and `description`, a Markdown
//! body, optional files beside it), in Claude Code's format so its skills work unchanged. They
//! come from the project's `.crew/skills/` and `.claude/skills/` and the person's
//! `~/.config/crew/skills/`; on a name clash the first of those wins. The catalogue (names and
//! one-line descriptions, sorted) is in the static prompt; `skill_load` brings a body, or one of
//! its files, in on demand.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolFuture, ToolKind, ToolOutput};
use crate::typed::TypedTool;
use crew_store::{StoreError, front_matter};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Characters of a description in the catalogue; the rest is cut with `…`.
const CATALOGUE_DESCRIPTION_CHARS: usize = 250;
/// Skills listed in the prompt; the rest are counted.
const CATALOGUE_SKILLS: usize = 100;
/// Bytes of a `SKILL.md` or of a skill's file that `skill_load` returns.
const LOAD_BYTES: usize = 100 * 1024;
/// Files of a skill folder `skill_load` lists.
const LISTED_FILES: usize = 50;

/// Where a skill came from, in the order that wins a name clash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkillSource {
    /// `.crew/skills/` in the repository.
    Crew,
    /// `.claude/skills/` in the repository (Claude Code's project skills).
    Claude,
    /// `~/.config/crew/skills/` (or under `$XDG_CONFIG_HOME`).
    User,
}

impl SkillSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillSource::Crew => ".crew/skills",
            SkillSource::Claude => ".claude/skills",
            SkillSource::User => "user",
        }
    }
}

/// `SKILL.md`'s front matter; Claude Code's other fields (`allowed-tools`, `license`, …) are
/// accepted and ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Header {
    name: Option<String>,
    description: Option<String>,
    /// Claude Code's switch for a skill only a person invokes: kept out of the catalogue.
    #[serde(default)]
    disable_model_invocation: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    /// One line, as the catalogue shows it.
    pub description: String,
    pub source: SkillSource,
    /// The skill's folder.
    pub dir: PathBuf,
    /// Whether agents are offered it (Claude Code's `disable-model-invocation: true` says no).
    pub offered: bool,
}

impl Skill {
    /// The body of `SKILL.md` (front matter dropped, at most [`LOAD_BYTES`]) and the other
    /// files of the folder, relative to it.
    pub fn load(&self) -> Result<(String, Vec<String>), StoreError> {
        let path = self.dir.join(SKILL_FILE);
        let (_, body) = read_skill_file(&path)?;
        let mut files = Vec::new();
        list_files(&self.dir, &self.dir, &mut files);
        files.sort();
        files.retain(|f| f != SKILL_FILE);
        Ok((body, files))
    }
}

/// Every skill found, the winners sorted by name.
#[derive(Debug, Default)]
pub struct SkillCatalogue {
    skills: Vec<Skill>,
    /// Skills hidden by one of the same name from a folder that wins.
    shadowed: Vec<Skill>,
    /// Skill folders whose `SKILL.md` could not be used, by path and reason.
    broken: Vec<StoreError>,
}

impl SkillCatalogue {
    /// The folders searched, in the order that wins a clash: `<repo>/.crew/skills`,
    /// `<repo>/.claude/skills`, then `<user>/skills` when the person has a crew config folder.
    pub fn folders(repo_root: &Path, user_config: Option<&Path>) -> Vec<(SkillSource, PathBuf)> {
        let mut folders = vec![
            (SkillSource::Crew, repo_root.join(".crew/skills")),
            (SkillSource::Claude, repo_root.join(".claude/skills")),
        ];
        if let Some(user) = user_config {
            folders.push((SkillSource::User, user.join("skills")));
        }
        folders
    }

    /// Reads every `<folder>/<skill>/SKILL.md`; a missing folder is simply empty.
    pub fn discover(folders: &[(SkillSource, PathBuf)]) -> Self {
        let mut catalogue = SkillCatalogue::default();
        for (source, folder) in folders {
            let Ok(entries) = std::fs::read_dir(folder) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join(SKILL_FILE).is_file())
                .collect();
            dirs.sort();
            for dir in dirs {
                match read_skill(*source, &dir) {
                    Ok(skill) => {
                        if catalogue.skills.iter().any(|s| s.name == skill.name) {
                            catalogue.shadowed.push(skill);
                        } else {
                            catalogue.skills.push(skill);
                        }
                    }
                    Err(e) => catalogue.broken.push(e),
                }
            }
        }
        catalogue.skills.sort_by(|a, b| a.name.cmp(&b.name));
        catalogue
    }

    /// The skills in use, by name.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// Skills hidden by one of the same name that wins.
    pub fn shadowed(&self) -> &[Skill] {
        &self.shadowed
    }

    pub fn broken(&self) -> &[StoreError] {
        &self.broken
    }

    /// The skill `name` if agents are offered it.
    pub fn offered(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name && s.offered)
    }

    /// The catalogue for the static prompt (sorted, so byte-stable); `None` when there is no
    /// skill to offer.
    pub fn prompt_section(&self) -> Option<String> {
        let offered: Vec<&Skill> = self.skills.iter().filter(|s| s.offered).collect();
        if offered.is_empty() {
            return None;
        }
        let mut out = String::from(
            "# Skills\nSkills are instructions for particular jobs. When your work matches one \
             below, call skill_load with its name first and follow what it says.",
        );
        for skill in offered.iter().take(CATALOGUE_SKILLS) {
            out.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
        if offered.len() > CATALOGUE_SKILLS {
            out.push_str(&format!(
                "\n- ({} more skills not listed)",
                offered.len() - CATALOGUE_SKILLS
            ));
        }
        Some(out)
    }
}

/// The front matter and body of a `SKILL.md`, the body bounded. A file without front matter is
/// all body (Claude Code takes those too).
fn read_skill_file(path: &Path) -> Result<(Header, String), StoreError> {
    let text = read_bounded(path)?;
    if !text.trim_start_matches('\u{feff}').starts_with("---") {
        return Ok((Header::default(), text));
    }
    front_matter::parse(path, &text)
}

/// A UTF-8 file, cut at [`LOAD_BYTES`] with a note; no more than that is read.
fn read_bounded(path: &Path) -> Result<String, StoreError> {
    use std::io::Read;
    let io = |e| StoreError::io(path, e);
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut bytes = Vec::new();
    file.take(LOAD_BYTES as u64)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text.to_string(),
        // A cut inside a character: keep what decodes.
        Err(e) if e.error_len().is_none() => {
            String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into()
        }
        Err(_) => return Err(StoreError::malformed(path, "not UTF-8 text")),
    };
    Ok(if (bytes.len() as u64) < size {
        format!("{text}\n[… cut: the file is {size} bytes; shown up to {LOAD_BYTES}]")
    } else {
        text
    })
}

fn read_skill(source: SkillSource, dir: &Path) -> Result<Skill, StoreError> {
    let path = dir.join(SKILL_FILE);
    let (header, body) = read_skill_file(&path)?;
    let folder = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let name = header.name.unwrap_or(folder);
    check_skill_name(&name).map_err(|reason| {
        StoreError::malformed(&path, format!("front matter: name: {name:?}: {reason}"))
    })?;
    // As in Claude Code, no description means the body's first paragraph.
    let description = header
        .description
        .filter(|d| !d.trim().is_empty())
        .or_else(|| {
            body.lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
        })
        .ok_or_else(|| {
            StoreError::malformed(
                &path,
                "front matter: description: missing, and the body has no paragraph to use instead",
            )
        })?;
    Ok(Skill {
        name,
        description: one_line(&description, CATALOGUE_DESCRIPTION_CHARS),
        source,
        dir: dir.to_path_buf(),
        offered: !header.disable_model_invocation,
    })
}

/// Claude Code's rule: lowercase letters, digits and hyphens, at most 64 characters.
fn check_skill_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 64 {
        Err("a name has 1 to 64 characters")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        Err("only a-z, 0-9, '-' and '_' are allowed")
    } else {
        Ok(())
    }
}

/// Whitespace collapsed, cut at `max` characters with `…`.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        joined
    } else {
        let cut: String = joined.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}

/// Regular files under `dir` (no hidden ones, no links followed), relative to `root`, at most
/// [`LISTED_FILES`].
fn list_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if out.len() >= LISTED_FILES {
            return;
        }
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_none_or(|n| n.starts_with('.'));
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if hidden {
            continue;
        }
        if meta.is_dir() {
            list_files(root, &path, out);
        } else if meta.is_file()
            && let Ok(relative) = path.strip_prefix(root)
        {
            out.push(relative.to_string_lossy().into_owned());
        }
    }
}

/// A file of the skill folder named by the model: relative, inside the folder once links are
/// resolved, a regular file.
fn skill_file(skill: &Skill, file: &str) -> Result<PathBuf, ToolError> {
    let refuse =
        |why: &str| ToolError::Refused(format!("skill {} file {file:?}: {why}", skill.name));
    let relative = Path::new(file);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(refuse(
            "give a path relative to the skill's folder, without `..`",
        ));
    }
    let dir = skill
        .dir
        .canonicalize()
        .map_err(|e| ToolError::io(&skill.dir, e))?;
    let path = dir
        .join(relative)
        .canonicalize()
        .map_err(|_| refuse("no such file in the skill's folder"))?;
    if !path.starts_with(&dir) {
        return Err(refuse("it leads outside the skill's folder"));
    }
    if !path.is_file() {
        return Err(refuse("not a file"));
    }
    Ok(path)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillLoadInput {
    /// The skill's name, as the catalogue lists it.
    pub name: String,
    /// A file of the skill, as skill_load listed it: returned instead of the instructions.
    pub file: Option<String>,
}

/// The tool, for a registry.
pub fn skill_tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(SkillLoadTool)]
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SkillLoadTool;

impl TypedTool for SkillLoadTool {
    type Input = SkillLoadInput;
    const NAME: &'static str = "skill_load";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Load a skill from the catalogue in your instructions: its instructions and the list of \
         its other files. With `file`, load one of those files instead."
    }

    fn is_concurrency_safe(&self, _input: &SkillLoadInput) -> bool {
        true
    }

    fn run(&self, input: SkillLoadInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let Some(skill) = ctx.skills.offered(&input.name) else {
                let names: Vec<&str> = ctx
                    .skills
                    .skills()
                    .iter()
                    .filter(|s| s.offered)
                    .map(|s| s.name.as_str())
                    .collect();
                return Err(ToolError::Refused(format!(
                    "no skill named {:?}; skills: {}",
                    input.name,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            };
            if let Some(file) = &input.file {
                let path = skill_file(skill, file)?;
                let text = read_bounded(&path).map_err(|e| ToolError::Refused(e.to_string()))?;
                return Ok(ToolOutput::ok(text));
            }
            let (body, files) = skill
                .load()
                .map_err(|e| ToolError::Refused(e.to_string()))?;
            let mut out = format!(
                "# Skill {} (from {})\n\n{body}",
                skill.name,
                skill.source.as_str()
            );
            if !files.is_empty() {
                out.push_str(&format!(
                    "\n\n# Files of this skill (load one with skill_load and `file`)\n{}",
                    files
                        .iter()
                        .map(|f| format!("- {f}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ));
            }
            Ok(ToolOutput::ok(out))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, folder: &str, text: &str) {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(SKILL_FILE), text).unwrap();
    }

    #[test]
    fn the_first_folder_wins_a_clash_and_the_catalogue_is_sorted() {
        let repo = tempfile::tempdir().unwrap();
        let user = tempfile::tempdir().unwrap();
        let r = repo.path();
        skill(
            r,
            ".crew/skills/deploy",
            "---\nname: deploy\ndescription: crew's deploy\n---\nbody",
        );
        skill(
            r,
            ".claude/skills/deploy",
            "---\nname: deploy\ndescription: claude's\n---\nbody",
        );
        skill(
            r,
            ".claude/skills/pdf",
            "---\nname: pdf\ndescription: >\n  Extract text\n  from PDFs.\nallowed-tools: Read, Grep\nlicense: MIT\n---\nbody",
        );
        skill(
            r,
            ".claude/skills/plain",
            "# Title\n\nFirst paragraph here.\n",
        );
        skill(
            r,
            ".claude/skills/manual",
            "---\ndescription: d\ndisable-model-invocation: true\n---\n",
        );
        skill(
            r,
            ".claude/skills/bad",
            "---\nname: Bad Name\ndescription: d\n---\n",
        );
        skill(
            user.path(),
            "skills/alpha",
            "---\ndescription: the user's\n---\n",
        );
        let catalogue = SkillCatalogue::discover(&SkillCatalogue::folders(r, Some(user.path())));
        let names: Vec<(&str, SkillSource)> = catalogue
            .skills()
            .iter()
            .map(|s| (s.name.as_str(), s.source))
            .collect();
        assert_eq!(
            names,
            [
                ("alpha", SkillSource::User),
                ("deploy", SkillSource::Crew),
                ("manual", SkillSource::Claude),
                ("pdf", SkillSource::Claude),
                ("plain", SkillSource::Claude),
            ]
        );
        assert_eq!(catalogue.shadowed()[0].source, SkillSource::Claude);
        let broken = catalogue.broken()[0].to_string();
        assert!(
            broken.contains("bad/SKILL.md") && broken.contains("name"),
            "{broken}"
        );
        let section = catalogue.prompt_section().unwrap();
        assert!(
            section.contains("\n- pdf: Extract text from PDFs."),
            "{section}"
        );
        assert!(section.contains("\n- plain: First paragraph here."));
        assert!(!section.contains("manual"));
        assert!(section.find("- alpha").unwrap() < section.find("- deploy").unwrap());
    }

    #[test]
    fn a_big_file_is_read_only_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.md");
        std::fs::write(&path, "é".repeat(LOAD_BYTES)).unwrap();
        let text = read_bounded(&path).unwrap();
        assert!(text.ends_with(&format!(
            "[… cut: the file is {} bytes; shown up to {LOAD_BYTES}]",
            2 * LOAD_BYTES
        )));
        assert!(text.len() < LOAD_BYTES + 100);
        std::fs::write(&path, b"\xff\xfe binary").unwrap();
        assert!(
            read_bounded(&path)
                .unwrap_err()
                .to_string()
                .contains("not UTF-8")
        );
    }
}
