//! `crew claude setup`: the settings that make a Claude Code lead in this repository launch its
//! teammates through crew (`teammateMode: "tmux"`, `env.CLAUDE_CODE_TEAMMATE_COMMAND`, and the
//! teams switch `env.CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS`), written into the repository's
//! `.claude/settings.local.json` only (the person's own settings, not committed), and undone
//! exactly: what each key was before is kept in `.crew/`, and a key the person changed since is
//! left as it is.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crew_store::atomic::write_atomic;

/// The settings file, under the repository's root.
pub const SETTINGS: &str = ".claude/settings.local.json";
/// What the setup changed, to undo it.
pub const RECORD: &str = ".crew/claude-teams-setup.json";
/// The program `CLAUDE_CODE_TEAMMATE_COMMAND` names: it runs `crew cc-teammate`. Claude Code
/// runs the variable's value as one program, so crew's subcommand needs a file of its own.
pub const LAUNCHER: &str = ".crew/bin/cc-teammate";

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not JSON ({source}); nothing was changed")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: {what} is not a JSON object; nothing was changed")]
    NotAnObject { path: PathBuf, what: String },
    #[error("crew has not set up Claude Code teams here ({0} does not exist); nothing to undo")]
    NotSetUp(PathBuf),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SetupError + '_ {
    move |source| SetupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One setting, as `a.b` (a key inside an object), its value before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub key: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// What `--undo` did.
#[derive(Debug, Default)]
pub struct Undone {
    /// Settings put back as they were.
    pub restored: Vec<Change>,
    /// Settings changed since the setup, left as they are now.
    pub kept: Vec<Change>,
    /// The files removed (the settings file when the setup created it, the launcher, the record).
    pub removed: Vec<PathBuf>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The settings file's bytes before the setup; `None`: there was none.
    original: Option<String>,
    changes: Vec<Change>,
}

/// Writes the settings and the launcher for `crew_exe` (whose teammates' completed tasks merge
/// at once with `merge_when_done`); returns the settings it changed (none when it was set up
/// already).
pub fn apply(
    root: &Path,
    crew_exe: &Path,
    merge_when_done: bool,
) -> Result<Vec<Change>, SetupError> {
    let settings_path = root.join(SETTINGS);
    let record_path = root.join(RECORD);
    let original = read_text(&settings_path)?;
    let mut settings = parse_object(&settings_path, original.as_deref())?;
    let earlier: Option<Record> = read_text(&record_path)?
        .map(|text| {
            serde_json::from_str(&text).map_err(|source| SetupError::Json {
                path: record_path.clone(),
                source,
            })
        })
        .transpose()?;
    let launcher = root.join(LAUNCHER);
    let wanted = [
        ("teammateMode", json!("tmux")),
        (
            "env.CLAUDE_CODE_TEAMMATE_COMMAND",
            json!(launcher.display().to_string()),
        ),
        ("env.CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", json!("1")),
    ];
    let mut changes = Vec::new();
    let mut recorded = Vec::new();
    for (key, value) in wanted {
        let now = get(&settings, key);
        // A second setup keeps what the first found, so the undo goes back to before both.
        let before = earlier
            .as_ref()
            .and_then(|r| r.changes.iter().find(|c| c.key == key))
            .map_or_else(|| now.clone(), |c| c.before.clone());
        if now.as_ref() != Some(&value) {
            set(&settings_path, &mut settings, key, Some(value.clone()))?;
            changes.push(Change {
                key: key.to_string(),
                before: now,
                after: Some(value.clone()),
            });
        }
        recorded.push(Change {
            key: key.to_string(),
            before,
            after: Some(value),
        });
    }
    let record = Record {
        original: earlier.map_or(original, |r| r.original),
        changes: recorded,
    };
    // Only now that every setting could be made is anything written.
    write_launcher(&launcher, crew_exe, merge_when_done)?;
    let record = serde_json::to_value(&record).map_err(|source| SetupError::Json {
        path: record_path.clone(),
        source,
    })?;
    write_json(&record_path, &record)?;
    if !changes.is_empty() {
        write_json(&settings_path, &Value::Object(settings))?;
    }
    Ok(changes)
}

/// Puts back what [`apply`] changed, except settings changed since.
pub fn undo(root: &Path) -> Result<Undone, SetupError> {
    let settings_path = root.join(SETTINGS);
    let record_path = root.join(RECORD);
    let text = read_text(&record_path)?.ok_or_else(|| SetupError::NotSetUp(record_path.clone()))?;
    let record: Record = serde_json::from_str(&text).map_err(|source| SetupError::Json {
        path: record_path.clone(),
        source,
    })?;
    let current = read_text(&settings_path)?;
    let mut settings = parse_object(&settings_path, current.as_deref())?;
    let mut undone = Undone::default();
    for change in &record.changes {
        let now = get(&settings, &change.key);
        if now == change.after {
            set(
                &settings_path,
                &mut settings,
                &change.key,
                change.before.clone(),
            )?;
            undone.restored.push(Change {
                key: change.key.clone(),
                before: now,
                after: change.before.clone(),
            });
        } else {
            undone.kept.push(Change {
                key: change.key.clone(),
                before: change.after.clone(),
                after: now,
            });
        }
    }
    let original = parse_object(&settings_path, record.original.as_deref())?;
    // An `env` the setup brought and that is empty again goes too.
    if !original.contains_key("env") && settings.get("env") == Some(&json!({})) {
        settings.remove("env");
    }
    if settings == original {
        // Byte for byte as it was (or gone, when the setup created it).
        match &record.original {
            Some(bytes) => {
                write_atomic(&settings_path, bytes.as_bytes()).map_err(io(&settings_path))?
            }
            None if settings_path.exists() => {
                fs::remove_file(&settings_path).map_err(io(&settings_path))?;
                undone.removed.push(settings_path.clone());
            }
            None => {}
        }
    } else if current.is_some() {
        write_json(&settings_path, &Value::Object(settings))?;
    }
    for path in [root.join(LAUNCHER), record_path] {
        if path.exists() {
            fs::remove_file(&path).map_err(io(&path))?;
            undone.removed.push(path);
        }
    }
    Ok(undone)
}

fn read_text(path: &Path) -> Result<Option<String>, SetupError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

fn parse_object(path: &Path, text: Option<&str>) -> Result<Map<String, Value>, SetupError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Map::new());
    };
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(SetupError::NotAnObject {
            path: path.to_path_buf(),
            what: "the file".into(),
        }),
        Err(source) => Err(SetupError::Json {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn get(settings: &Map<String, Value>, key: &str) -> Option<Value> {
    match key.split_once('.') {
        None => settings.get(key).cloned(),
        Some((outer, inner)) => settings.get(outer)?.get(inner).cloned(),
    }
}

fn set(
    path: &Path,
    settings: &mut Map<String, Value>,
    key: &str,
    value: Option<Value>,
) -> Result<(), SetupError> {
    let (map, key) = match key.split_once('.') {
        None => (settings, key),
        Some((outer, inner)) => {
            let entry = settings
                .entry(outer.to_string())
                .or_insert_with(|| json!({}));
            let Value::Object(map) = entry else {
                return Err(SetupError::NotAnObject {
                    path: path.to_path_buf(),
                    what: format!("`{outer}`"),
                });
            };
            (map, inner)
        }
    };
    match value {
        Some(value) => map.insert(key.to_string(), value),
        None => map.remove(key),
    };
    Ok(())
}

fn write_json(path: &Path, value: &Value) -> Result<(), SetupError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| SetupError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes).map_err(io(path))
}

/// `#!/bin/sh` running `crew_exe cc-teammate` with the launch's arguments.
fn write_launcher(path: &Path, crew_exe: &Path, merge_when_done: bool) -> Result<(), SetupError> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let quoted = crew_exe.display().to_string().replace('\'', r"'\''");
    let flag = if merge_when_done {
        " --merge-when-done"
    } else {
        ""
    };
    let text = format!(
        "#!/bin/sh\n# Written by `crew claude setup`; `crew claude setup --undo` removes it.\n\
         exec '{quoted}' cc-teammate{flag} \"$@\"\n"
    );
    write_atomic(path, text.as_bytes()).map_err(io(path))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(root: &Path) -> Value {
        serde_json::from_slice(&fs::read(root.join(SETTINGS)).unwrap()).unwrap()
    }

    #[test]
    fn a_setup_in_a_repository_without_settings_is_undone_to_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let changes = apply(root, Path::new("/opt/crew's/crew"), false).unwrap();
        assert_eq!(changes.len(), 3);
        let launcher = root.join(LAUNCHER).display().to_string();
        assert_eq!(
            settings(root),
            json!({"teammateMode": "tmux", "env": {
                "CLAUDE_CODE_TEAMMATE_COMMAND": launcher,
                "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}})
        );
        let script = fs::read_to_string(root.join(LAUNCHER)).unwrap();
        assert!(
            script.ends_with("exec '/opt/crew'\\''s/crew' cc-teammate \"$@\"\n"),
            "{script}"
        );
        // Twice is once; with `--merge auto` the launcher says so, and a later setup without
        // it takes it back.
        assert!(
            apply(root, Path::new("/opt/crew's/crew"), true)
                .unwrap()
                .is_empty()
        );
        let script = fs::read_to_string(root.join(LAUNCHER)).unwrap();
        assert!(
            script.ends_with("cc-teammate --merge-when-done \"$@\"\n"),
            "{script}"
        );
        assert!(
            apply(root, Path::new("/opt/crew's/crew"), false)
                .unwrap()
                .is_empty()
        );
        let script = fs::read_to_string(root.join(LAUNCHER)).unwrap();
        assert!(!script.contains("--merge-when-done"), "{script}");
        let undone = undo(root).unwrap();
        assert_eq!(undone.restored.len(), 3);
        assert!(undone.kept.is_empty());
        assert!(!root.join(SETTINGS).exists());
        assert!(!root.join(LAUNCHER).exists() && !root.join(RECORD).exists());
        assert!(matches!(undo(root), Err(SetupError::NotSetUp(_))));
    }

    #[test]
    fn the_persons_own_settings_come_back_byte_for_byte_and_later_edits_stay() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join(".claude")).unwrap();
        let own = "{\"permissions\":{\"allow\":[\"Bash(ls)\"]},  \"teammateMode\": \"in-process\",\n \"env\": {\"FOO\": \"1\"}}";
        fs::write(root.join(SETTINGS), own).unwrap();
        let changes = apply(root, Path::new("/bin/crew"), false).unwrap();
        assert_eq!(changes[0].before, Some(json!("in-process")));
        assert_eq!(settings(root)["env"]["FOO"], "1");
        assert_eq!(settings(root)["permissions"]["allow"][0], "Bash(ls)");
        undo(root).unwrap();
        assert_eq!(fs::read_to_string(root.join(SETTINGS)).unwrap(), own);

        // A key the person changed after the setup is theirs: left, and said.
        apply(root, Path::new("/bin/crew"), false).unwrap();
        let mut now = settings(root);
        now["teammateMode"] = json!("auto");
        fs::write(root.join(SETTINGS), now.to_string()).unwrap();
        let undone = undo(root).unwrap();
        assert_eq!(undone.kept.len(), 1);
        assert_eq!(undone.kept[0].key, "teammateMode");
        let after = settings(root);
        assert_eq!(after["teammateMode"], "auto");
        assert_eq!(after["env"], json!({"FOO": "1"}));
    }

    #[test]
    fn settings_that_are_not_an_object_are_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join(".claude")).unwrap();
        for bad in ["[1]", "{not json", "{\"env\": \"x\"}"] {
            fs::write(root.join(SETTINGS), bad).unwrap();
            let err = apply(root, Path::new("/bin/crew"), false)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("settings.local.json") && err.contains("nothing was changed"),
                "{err}"
            );
            assert_eq!(fs::read_to_string(root.join(SETTINGS)).unwrap(), bad);
        }
    }
}
