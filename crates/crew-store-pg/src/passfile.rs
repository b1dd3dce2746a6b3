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

/// Keeps `password` for this connection in the file at `path`, as its first line (the first
/// matching line wins, and a person's wildcard line further down must not shadow it), in place
/// of any line for exactly this connection. A new file is made readable by its owner only; one
/// others may read is refused as [`password`] refuses it, nothing written.
pub(crate) fn keep(
    path: &Path,
    host: &str,
    port: u16,
    database: &str,
    user: &str,
    password: &str,
) -> Result<(), PgStoreError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let failed = |e: std::io::Error| PgStoreError::Passfile(format!("{}: {e}", path.display()));
    let old = match std::fs::metadata(path) {
        Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
            return Err(PgStoreError::Passfile(format!(
                "{}: others may read it (mode {:o}), so crew keeps no password in it: `chmod 600 {}`",
                path.display(),
                meta.permissions().mode() & 0o777,
                path.display()
            )));
        }
        Ok(_) => std::fs::read_to_string(path).map_err(failed)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(failed(e)),
    };
    let port = port.to_string();
    let wanted = [host, port.as_str(), database, user];
    let mut text = format!(
        "{}\n",
        [host, &port, database, user, password]
            .map(escaped)
            .join(":")
    );
    for line in old.lines() {
        let same = fields(line).is_some_and(|f| f[..4].iter().zip(wanted).all(|(a, b)| a == b));
        if !same {
            text.push_str(line);
            text.push('\n');
        }
    }
    // Written beside it and renamed over it: a crash leaves the old file or the new one. Made
    // afresh (a leftover is removed first, never opened: it could be a link to anywhere).
    let temporary = path.with_extension("crew-new");
    match std::fs::remove_file(&temporary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(failed(e)),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    std::fs::rename(&temporary, path).map_err(failed)
}

/// A field as the file needs it: `:` and `\` escaped.
fn escaped(field: &str) -> String {
    field.replace('\\', "\\\\").replace(':', "\\:")
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
    fn a_kept_password_comes_first_replaces_its_old_line_and_only_the_owner_reads_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        // A leftover beside it, even a link elsewhere, is replaced, never written through.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "untouched\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, path.with_extension("crew-new")).unwrap();
        keep(&path, "db", 5432, "web", "crew_web_bob", "old").unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // The person's own lines stay, after it: a wildcard of theirs does not shadow it.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("*:*:*:*:the-persons\n");
        std::fs::write(&path, text).unwrap();
        keep(&path, "db", 5432, "web", "crew_web_bob", "n:e\\w").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "db:5432:web:crew_web_bob:n\\:e\\\\w\n*:*:*:*:the-persons\n"
        );
        assert_eq!(
            password(&path, "db", 5432, "web", "crew_web_bob")
                .unwrap()
                .as_deref(),
            Some("n:e\\w")
        );
        assert_eq!(
            password(&path, "db", 5432, "web", "crew_web_alice")
                .unwrap()
                .as_deref(),
            Some("the-persons")
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = keep(&path, "db", 5432, "web", "crew_web_bob", "x").unwrap_err();
        assert!(refused.to_string().contains("chmod 600"), "{refused}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "nothing written"
        );
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
