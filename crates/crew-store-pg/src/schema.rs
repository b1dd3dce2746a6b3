//! The store's schema, versioned in this crate. `migrate` applies what a database lacks in one
//! transaction (all or nothing), and refuses a database that a newer crew migrated.

use tokio_postgres::Client;

use crate::PgStoreError;

/// Each entry brings the schema from version `index` to `index + 1`. Append only: a released
/// migration never changes, a change is a new entry.
const MIGRATIONS: &[&str] = &[
    // 1: tasks with leased claims, append-only inboxes with per-reader cursors.
    r#"
    CREATE FUNCTION crew_ts(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS
        $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

    CREATE TABLE tasks (
        id bigserial PRIMARY KEY,
        -- Made by the creating client: a create retried after a lost reply finds its row.
        token text NOT NULL UNIQUE,
        subject text NOT NULL,
        description text NOT NULL DEFAULT '',
        status text NOT NULL DEFAULT 'pending'
            CHECK (status IN ('pending', 'in_progress', 'review', 'completed', 'failed')),
        owner text,
        role text,
        blocked_by bigint[] NOT NULL DEFAULT '{}',
        result text,
        notes text[] NOT NULL DEFAULT '{}',
        -- Held by the owner while in_progress, renewed by its heartbeat; once past, the task
        -- is claimable again (a host that went silent loses its work to the queue).
        lease_until timestamptz,
        -- Made by the claiming client: a claim retried after a lost reply finds its task.
        claim_token text UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX tasks_pending ON tasks (id) WHERE status = 'pending';
    CREATE INDEX tasks_leased ON tasks (lease_until) WHERE status = 'in_progress';

    CREATE TABLE messages (
        seq bigserial PRIMARY KEY,
        -- The appending transaction: a reader takes only rows of transactions older than every
        -- one still running, so a row that commits late never lands behind a cursor.
        txid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
        id text NOT NULL UNIQUE,
        ts timestamptz NOT NULL DEFAULT now(),
        sender text NOT NULL,
        recipient text NOT NULL,
        kind text NOT NULL,
        body text,
        request_id text,
        approve boolean,
        extra jsonb NOT NULL DEFAULT '{}'
    );
    CREATE INDEX messages_inbox ON messages (recipient, txid, seq);
    CREATE INDEX messages_request ON messages (request_id) WHERE request_id IS NOT NULL;
    -- One answer per request, enforced where two answerers meet.
    CREATE UNIQUE INDEX messages_one_answer ON messages (request_id) WHERE approve IS NOT NULL;

    CREATE TABLE inbox_cursors (
        reader text NOT NULL,
        inbox text NOT NULL,
        txid bigint NOT NULL,
        seq bigint NOT NULL,
        PRIMARY KEY (reader, inbox)
    );
    "#,
];

/// The schema version this binary knows.
#[allow(clippy::cast_possible_truncation)] // a few dozen migrations at most
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Brings the database to `SCHEMA_VERSION`; returns the version it found. Concurrent callers
/// are serialised by an advisory lock, so two hosts starting at once migrate once.
pub async fn migrate(client: &mut Client) -> Result<i32, PgStoreError> {
    let tx = client.transaction().await?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(7267726577);
         CREATE TABLE IF NOT EXISTS crew_schema (version integer NOT NULL);",
    )
    .await?;
    let found: i32 = match tx.query_opt("SELECT version FROM crew_schema", &[]).await? {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO crew_schema (version) VALUES (0)", &[])
                .await?;
            0
        }
    };
    if found > SCHEMA_VERSION {
        return Err(PgStoreError::SchemaTooNew {
            found,
            known: SCHEMA_VERSION,
        });
    }
    for version in found + 1..=SCHEMA_VERSION {
        let sql = usize::try_from(version - 1)
            .ok()
            .and_then(|at| MIGRATIONS.get(at))
            .copied()
            .unwrap_or_default();
        tx.batch_execute(sql).await?;
        tx.execute("UPDATE crew_schema SET version = $1", &[&version])
            .await?;
    }
    tx.commit().await?;
    Ok(found)
}

/// The version a database is at (0 before the first migration).
pub async fn version(client: &Client) -> Result<i32, PgStoreError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('crew_schema') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_opt("SELECT version FROM crew_schema", &[])
        .await?
        .map_or(0, |row| row.get(0)))
}
