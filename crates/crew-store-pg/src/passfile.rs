//! The password file PostgreSQL's own clients read (`PGPASSFILE`, else `~/.pgpass`), read the
//! way libpq reads it, since the Rust client does not: lines of
//! `hostname:port:database:username:password`, `*` matching anything, `\:` and `\\` escaping,
//! `#` starting a comment, the first matching line winning. As libpq does, a file that others
//! may read is not used; unlike libpq, crew says so rather than failing later with "password
//! missing".

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::PgStoreError;

/// Where the password file is: `PGPASSFILE`, else `~/.pgpass`.
pub(crate) fn location() -> Option<PathBuf> {
    std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pgpass")))
}

/// The password the file at `path` holds for this connection, if any. A missing file is none;
/// one others may read is an error naming it.
pub(crate) fn password(
    path: &Path,
    host: &str,
    port: u16,
    database: &str,
    user: &str,
) -> Result<Option<String>, PgStoreError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(None);
    };
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(PgStoreError::Passfile(format!(
            "{}: others may read it (mode {:o}), so it is not used, as PostgreSQL's own clients do not use it: `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| PgStoreError::Passfile(format!("{}: {e}", path.display())))?;
    Ok(lookup(&text, host, &port.to_string(), database, user))
}

/// The first line of `text` that matches, its password.
fn lookup(text: &str, host: &str, port: &str, database: &str, user: &str) -> Option<String> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#') && !line.trim().is_empty())
        .filter_map(fields)
        .find(|f| {
            [host, port, database, user]
                .iter()
                .zip(f)
                .all(|(value, field)| field == "*" || field == value)
        })
        .map(|mut f| f.pop().unwrap_or_default())
}

/// A line's five fields, unescaped; `None` for a line that has fewer.
fn fields(line: &str) -> Option<Vec<String>> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut()?.push(next);
                }
            }
            // The password, last, may hold unescaped colons.
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    (fields.len() == 5).then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# the team's store\n\
        db.example:5432:web:crew_web_bob:bob\\:s pw\n\
        *:*:web:*:any-on-web\n\
        short:line\n\
        *:*:*:*:last:with:colons\n";

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let find = |host, port, db, user| lookup(FILE, host, port, db, user);
        assert_eq!(
            find("db.example", "5432", "web", "crew_web_bob").as_deref(),
            Some("bob:s pw")
        );
        assert_eq!(
            find("db.example", "5433", "web", "crew_web_bob").as_deref(),
            Some("any-on-web")
        );
        assert_eq!(
            find("other", "1", "api", "x").as_deref(),
            Some("last:with:colons")
        );
        assert_eq!(lookup("h:1:d:u:pw\n", "h", "1", "d", "v"), None);
    }

    #[test]
    fn a_file_others_may_read_is_refused_naming_it_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        assert!(password(&path, "h", 1, "d", "u").unwrap().is_none());
        std::fs::write(&path, "h:1:d:u:pw\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = password(&path, "h", 1, "d", "u").unwrap_err().to_string();
        assert!(
            refused.contains("others may read it (mode 644)") && refused.contains("chmod 600"),
            "{refused}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            password(&path, "h", 1, "d", "u").unwrap().as_deref(),
            Some("pw")
        );
    }
}
