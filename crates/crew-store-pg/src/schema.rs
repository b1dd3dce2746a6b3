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
    CREATE INDEX tasks_assigned ON tasks (owner, id) WHERE status = 'pending';
    CREATE INDEX tasks_leased ON tasks (lease_until) WHERE status = 'in_progress';

    -- Whether every blocker exists and is completed.
    CREATE FUNCTION crew_ready(blockers bigint[]) RETURNS boolean LANGUAGE sql STABLE AS $$
        SELECT cardinality(blockers) = 0 OR NOT EXISTS (
            SELECT 1 FROM unnest(blockers) AS b(id) LEFT JOIN tasks d ON d.id = b.id
            WHERE d.status IS DISTINCT FROM 'completed')
    $$;

    -- One claim, in one round trip: a ready task assigned to `who`, else one whose lease
    -- passed, else the oldest ready unowned one, each of a role that fits; the row locked with
    -- SKIP LOCKED (another claimer's row is passed over; one it just took fails the re-check
    -- of the WHERE on the new row version), then taken under a lease. Each pick walks an index
    -- in order and stops at the first fit.
    CREATE FUNCTION crew_claim(who text, who_role text, key text, lease_ms double precision)
    RETURNS SETOF tasks LANGUAGE plpgsql AS $$
    DECLARE
        picked bigint;
        lapsed text;
    BEGIN
        SELECT t.id INTO picked FROM tasks t
        WHERE t.status = 'pending' AND t.owner = who
          AND (t.role IS NULL OR t.role = who_role) AND crew_ready(t.blocked_by)
        ORDER BY t.id LIMIT 1 FOR UPDATE SKIP LOCKED;
        IF picked IS NULL THEN
            SELECT t.id, t.owner INTO picked, lapsed FROM tasks t
            WHERE t.status = 'in_progress' AND t.lease_until < now()
              AND (t.role IS NULL OR t.role = who_role) AND crew_ready(t.blocked_by)
            ORDER BY t.lease_until LIMIT 1 FOR UPDATE SKIP LOCKED;
        END IF;
        IF picked IS NULL THEN
            SELECT t.id INTO picked FROM tasks t
            WHERE t.status = 'pending' AND t.owner IS NULL
              AND (t.role IS NULL OR t.role = who_role) AND crew_ready(t.blocked_by)
            ORDER BY t.id LIMIT 1 FOR UPDATE SKIP LOCKED;
        END IF;
        IF picked IS NULL THEN
            RETURN;
        END IF;
        RETURN QUERY UPDATE tasks SET status = 'in_progress', owner = who, claim_token = key,
            lease_until = now() + lease_ms * interval '1 millisecond', updated_at = now(),
            notes = CASE WHEN lapsed IS NULL THEN notes
                ELSE notes || ('lease of ' || lapsed || ' expired; claimed by ' || who) END
        WHERE id = picked RETURNING *;
    END
    $$;

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
    // 2: the commits a task submitted for review added on its teammate's branch
    // (`TaskCommits` as JSON: branch, start, head), as the file store keeps them.
    r#"
    ALTER TABLE tasks ADD COLUMN commits jsonb;
    "#,
    // 3: each agent's latest status (`AgentStatus` as JSON, as the file store keeps
    // `.crew/agents/NAME.json`), with when the server last heard from it: a host's own clock
    // cannot say that for another host.
    r#"
    CREATE TABLE agents (
        name text PRIMARY KEY,
        status jsonb NOT NULL,
        heard_at timestamptz NOT NULL DEFAULT now()
    );
    "#,
    // 4: a review's verdict kept on its task (`ReviewerVerdict` as JSON, as on files); and the
    // person's rights kept by the database itself. An agent connects as a role of its own
    // (`agent_roles`, made by `PgStore::add_agent`); the database owner is the person. Agents
    // cannot answer a permission request, answer for another, write as another, take another's
    // live claim, edit another's task or what it waits for (the lead steers), forge its notes,
    // or move a task out of review (merge, send back, discard): a hostile teammate
    // holding its own credentials and raw SQL is held to what crew's protocol allows it.
    r#"
    ALTER TABLE tasks ADD COLUMN review jsonb;

    CREATE TABLE agent_roles (
        role name PRIMARY KEY,
        agent text NOT NULL UNIQUE,
        -- A writing teammate's task is completed only by the person's merge.
        writes boolean NOT NULL,
        -- The lead steers, as on files: it assigns tasks and edits what one is and waits for.
        leads boolean NOT NULL DEFAULT false
    );

    -- The agent the connected role is; NULL for the person.
    CREATE FUNCTION crew_agent() RETURNS text LANGUAGE sql STABLE AS
        $$ SELECT agent FROM agent_roles WHERE role = current_user $$;

    -- What an agent may change of a task, as the file store's `check_may_edit`, `assign`,
    -- claims and finishes allow it; the person (no row in agent_roles) may change anything.
    CREATE FUNCTION crew_guard_task() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        me text;
        writes boolean;
        leads boolean;
        lapsed boolean;
    BEGIN
        SELECT a.agent, a.writes, a.leads INTO me, writes, leads
        FROM agent_roles a WHERE a.role = current_user;
        IF me IS NULL THEN
            RETURN NEW;
        END IF;
        IF TG_OP = 'INSERT' THEN
            IF NEW.status <> 'pending' OR NEW.review IS NOT NULL OR NEW.commits IS NOT NULL
               OR NEW.lease_until IS NOT NULL OR NEW.result IS NOT NULL
               OR cardinality(NEW.notes) > 0 OR (NEW.owner IS NOT NULL AND NOT leads) THEN
                RAISE EXCEPTION 'agent % may add a task only as pending and unassigned', me
                    USING ERRCODE = '42501';
            END IF;
            RETURN NEW;
        END IF;
        IF OLD.status = 'review' THEN
            IF NEW.status = 'review' AND NEW.review->>'by' = me
               AND NEW.owner IS NOT DISTINCT FROM OLD.owner
               AND NEW.result IS NOT DISTINCT FROM OLD.result
               AND NEW.commits IS NOT DISTINCT FROM OLD.commits
               AND NEW.notes = OLD.notes AND NEW.subject = OLD.subject
               AND NEW.description = OLD.description AND NEW.blocked_by = OLD.blocked_by THEN
                RETURN NEW;
            END IF;
            RAISE EXCEPTION 'task %: in review, only the person merges, sends back or discards it; agent % may only record its own verdict', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF OLD.status IN ('completed', 'failed') THEN
            RAISE EXCEPTION 'task %: %, only the person changes a finished task (agent %)', OLD.id, OLD.status, me
                USING ERRCODE = '42501';
        END IF;
        lapsed := OLD.status = 'in_progress' AND OLD.lease_until < now();
        IF OLD.status = 'in_progress' AND OLD.owner IS DISTINCT FROM me AND NOT lapsed THEN
            RAISE EXCEPTION 'task %: % holds it, agent % cannot change it', OLD.id, OLD.owner, me
                USING ERRCODE = '42501';
        END IF;
        IF NOT leads AND (NEW.subject <> OLD.subject OR NEW.blocked_by <> OLD.blocked_by
                          OR NEW.role IS DISTINCT FROM OLD.role) THEN
            RAISE EXCEPTION 'task %: only the lead or the person changes its subject, role or blockers (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF NOT leads AND NEW.description <> OLD.description AND OLD.owner IS DISTINCT FROM me THEN
            RAISE EXCEPTION 'task %: agent % may edit the description of its own task only', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        -- Given back to the queue: by the lead, by its owner, or by anyone once its lease passed.
        IF NEW.status = 'pending' AND NEW.owner IS DISTINCT FROM OLD.owner AND NOT leads
           AND NOT (NEW.owner IS NULL AND (OLD.owner = me OR lapsed)) THEN
            RAISE EXCEPTION 'task %: only the lead or the person assigns it (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF OLD.status = 'pending' AND OLD.owner IS NOT NULL AND OLD.owner <> me
           AND NEW.status <> 'pending' THEN
            RAISE EXCEPTION 'task %: assigned to %, agent % cannot take it', OLD.id, OLD.owner, me
                USING ERRCODE = '42501';
        END IF;
        IF NEW.status <> 'pending' AND NEW.owner IS DISTINCT FROM me THEN
            RAISE EXCEPTION 'task %: agent % cannot act as %', OLD.id, me, NEW.owner
                USING ERRCODE = '42501';
        END IF;
        IF NEW.status IN ('review', 'completed', 'failed') AND OLD.status <> 'in_progress' THEN
            RAISE EXCEPTION 'task %: %, agent % can finish only a task it has in progress', OLD.id, OLD.status, me
                USING ERRCODE = '42501';
        END IF;
        IF NEW.status = 'completed' AND writes THEN
            RAISE EXCEPTION 'task %: agent % writes code, its task is completed only by the person merging it', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        -- A result and commits are the owner's, set as it works and finishes; the notes are
        -- the store's (a lapsed lease's) and the person's, so no agent can forge a
        -- "sent back by user" note its teammate would read as the person's review.
        IF (NEW.result IS DISTINCT FROM OLD.result OR NEW.commits IS DISTINCT FROM OLD.commits)
           AND NOT (OLD.status = 'in_progress' AND OLD.owner = me) THEN
            RAISE EXCEPTION 'task %: only its owner sets its result and commits (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF NEW.notes <> OLD.notes AND NOT lapsed THEN
            RAISE EXCEPTION 'task %: agent % cannot write its notes', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF NEW.review IS DISTINCT FROM OLD.review THEN
            RAISE EXCEPTION 'task %: a verdict is recorded only while the task is in review (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER tasks_guard BEFORE INSERT OR UPDATE ON tasks
        FOR EACH ROW EXECUTE FUNCTION crew_guard_task();

    -- Whether the agent may answer request `rid` to `asker`: it is the request's addressee,
    -- the request is not a permission request (the person's alone), and the answer goes to
    -- whoever asked. The request is the first row with that id (`derive` reads it so).
    CREATE FUNCTION crew_may_answer(rid text, asker text) RETURNS boolean LANGUAGE sql STABLE AS $$
        SELECT coalesce((
            SELECT q.approve IS NULL AND q.recipient = crew_agent()
                AND q.kind <> 'permission_request' AND q.sender = asker
            FROM messages q WHERE q.request_id = rid ORDER BY q.txid, q.seq LIMIT 1), false)
    $$;

    -- Whether request id `rid` is unused but by message `mid` itself (a retried append): an
    -- agent's new request cannot reuse another's id (it would then be the addressee of a
    -- request it made up, and answer the real one).
    CREATE FUNCTION crew_new_request(rid text, mid text) RETURNS boolean LANGUAGE sql STABLE AS
        $$ SELECT NOT EXISTS (SELECT 1 FROM messages q WHERE q.request_id = rid AND q.id <> mid) $$;

    ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
    CREATE POLICY messages_read ON messages FOR SELECT USING (true);
    CREATE POLICY messages_append ON messages FOR INSERT WITH CHECK (
        sender = crew_agent() AND (
            request_id IS NULL
            OR (approve IS NULL AND crew_new_request(request_id, id))
            OR (approve IS NOT NULL AND crew_may_answer(request_id, recipient))));

    ALTER TABLE inbox_cursors ENABLE ROW LEVEL SECURITY;
    CREATE POLICY cursors_read ON inbox_cursors FOR SELECT USING (true);
    CREATE POLICY cursors_own ON inbox_cursors FOR ALL
        USING (reader = crew_agent()) WITH CHECK (reader = crew_agent());

    ALTER TABLE agents ENABLE ROW LEVEL SECURITY;
    CREATE POLICY agents_read ON agents FOR SELECT USING (true);
    CREATE POLICY agents_own ON agents FOR ALL
        USING (name = crew_agent()) WITH CHECK (name = crew_agent());
    "#,
    // 5: the team as the person published it (`crew store publish`: crew.toml's text, the
    // names on the team, its `[limits]`), read by hosts that join. Once published, a message
    // to or from a name not on the team is refused, as on files; agents may only read it.
    r#"
    CREATE TABLE team_config (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        toml text NOT NULL,
        roster text[] NOT NULL,
        limits jsonb NOT NULL,
        published_at timestamptz NOT NULL DEFAULT now()
    );

    -- Whether `who` may send or receive: the person always; anyone before a team is published.
    CREATE FUNCTION crew_on_team(who text) RETURNS boolean LANGUAGE sql STABLE AS $$
        SELECT who = 'user' OR coalesce((SELECT who = ANY(roster) FROM team_config), true)
    $$;

    CREATE FUNCTION crew_check_names() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT crew_on_team(NEW.sender) THEN
            RAISE EXCEPTION 'sender % is not on the team', NEW.sender
                USING ERRCODE = 'CRW01', COLUMN = 'sender';
        END IF;
        IF NOT crew_on_team(NEW.recipient) THEN
            RAISE EXCEPTION 'recipient % is not on the team', NEW.recipient
                USING ERRCODE = 'CRW01', COLUMN = 'recipient';
        END IF;
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER messages_on_team BEFORE INSERT ON messages
        FOR EACH ROW EXECUTE FUNCTION crew_check_names();

    -- Agents given a role before this version read the team too.
    DO $$
    DECLARE r record;
    BEGIN
        FOR r IN SELECT role FROM agent_roles LOOP
            EXECUTE format('GRANT SELECT ON team_config TO %I', r.role);
        END LOOP;
    END
    $$;
    "#,
    // 6: `[limits]` held by the database too, whatever SQL a role sends: a task's subject (one
    // line, in characters), its description, a message's text and its extra fields (in bytes),
    // as the published team sets them, crew's defaults before (crew-store's `Limits`). crew's
    // own client checks first and words the refusal as on files; this is the backstop for an
    // agent that writes rows itself (a 1 GB message would be every reader's next prompt).
    r#"
    CREATE FUNCTION crew_limit(setting text, fallback bigint) RETURNS bigint LANGUAGE sql STABLE AS $$
        SELECT coalesce((SELECT (limits ->> setting)::bigint FROM team_config), fallback)
    $$;

    -- The team's names (5) and now its sizes, in the one trigger every append runs: the team's
    -- row read once (an append is the store's most frequent write).
    CREATE OR REPLACE FUNCTION crew_check_names() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        names text[];
        allowed bigint;
    BEGIN
        SELECT roster, (limits ->> 'message_bytes')::bigint INTO names, allowed FROM team_config;
        allowed := coalesce(allowed, 262144);
        IF NEW.sender <> 'user' AND names IS NOT NULL AND NOT NEW.sender = ANY(names) THEN
            RAISE EXCEPTION 'sender % is not on the team', NEW.sender
                USING ERRCODE = 'CRW01', COLUMN = 'sender';
        END IF;
        IF NEW.recipient <> 'user' AND names IS NOT NULL AND NOT NEW.recipient = ANY(names) THEN
            RAISE EXCEPTION 'recipient % is not on the team', NEW.recipient
                USING ERRCODE = 'CRW01', COLUMN = 'recipient';
        END IF;
        IF octet_length(coalesce(NEW.body, '')) > allowed THEN
            RAISE EXCEPTION 'message text is % bytes, over [limits] message_bytes = %',
                octet_length(NEW.body), allowed USING ERRCODE = 'CRW02', COLUMN = 'body';
        END IF;
        IF octet_length(NEW.extra::text) > allowed THEN
            RAISE EXCEPTION 'message extra fields are % bytes, over [limits] message_bytes = %',
                octet_length(NEW.extra::text), allowed USING ERRCODE = 'CRW02', COLUMN = 'extra';
        END IF;
        RETURN NEW;
    END
    $$;

    CREATE FUNCTION crew_check_task_size() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        subject_chars bigint := crew_limit('subject_chars', 200);
        description_bytes bigint := crew_limit('description_bytes', 65536);
    BEGIN
        IF NEW.subject ~ '[\r\n]' THEN
            RAISE EXCEPTION 'a task subject must be one line' USING ERRCODE = 'CRW02',
                COLUMN = 'subject';
        END IF;
        IF char_length(NEW.subject) > subject_chars THEN
            RAISE EXCEPTION 'task subject is % characters, over [limits] subject_chars = %',
                char_length(NEW.subject), subject_chars USING ERRCODE = 'CRW02',
                COLUMN = 'subject';
        END IF;
        IF octet_length(coalesce(NEW.description, '')) > description_bytes THEN
            RAISE EXCEPTION 'task description is % bytes, over [limits] description_bytes = %',
                octet_length(NEW.description), description_bytes USING ERRCODE = 'CRW02',
                COLUMN = 'description';
        END IF;
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER tasks_size BEFORE INSERT OR UPDATE OF subject, description ON tasks
        FOR EACH ROW EXECUTE FUNCTION crew_check_task_size();
    "#,
    // 7: what each task's work used (`usage`, as on files), and the task guard of 4 again
    // with three changes: the lead's assignments and an agent's release of its own tasks as it
    // shuts down leave their notes as on files (the store's `assign` and `release_orphaned`),
    // while a forged review note stays refused; only the owner adds to its usage; an agent
    // records commits only on its own branch.
    r#"
    ALTER TABLE tasks ADD COLUMN usage jsonb;
    CREATE OR REPLACE FUNCTION crew_guard_task() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        me text;
        writes boolean;
        leads boolean;
        lapsed boolean;
    BEGIN
        SELECT a.agent, a.writes, a.leads INTO me, writes, leads
        FROM agent_roles a WHERE a.role = current_user;
        IF me IS NULL THEN
            RETURN NEW;
        END IF;
        IF TG_OP = 'INSERT' THEN
            IF NEW.status <> 'pending' OR NEW.review IS NOT NULL OR NEW.commits IS NOT NULL
               OR NEW.lease_until IS NOT NULL OR NEW.result IS NOT NULL
               OR cardinality(NEW.notes) > 0 OR (NEW.owner IS NOT NULL AND NOT leads) THEN
                RAISE EXCEPTION 'agent % may add a task only as pending and unassigned', me
                    USING ERRCODE = '42501';
            END IF;
            RETURN NEW;
        END IF;
        IF OLD.status = 'review' THEN
            IF NEW.status = 'review' AND NEW.review->>'by' = me
               AND NEW.owner IS NOT DISTINCT FROM OLD.owner
               AND NEW.result IS NOT DISTINCT FROM OLD.result
               AND NEW.commits IS NOT DISTINCT FROM OLD.commits
               AND NEW.notes = OLD.notes AND NEW.subject = OLD.subject
               AND NEW.description = OLD.description AND NEW.blocked_by = OLD.blocked_by THEN
                RETURN NEW;
            END IF;
            RAISE EXCEPTION 'task %: in review, only the person merges, sends back or discards it; agent % may only record its own verdict', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF OLD.status IN ('completed', 'failed') THEN
            RAISE EXCEPTION 'task %: %, only the person changes a finished task (agent %)', OLD.id, OLD.status, me
                USING ERRCODE = '42501';
        END IF;
        lapsed := OLD.status = 'in_progress' AND OLD.lease_until < now();
        IF OLD.status = 'in_progress' AND OLD.owner IS DISTINCT FROM me AND NOT lapsed THEN
            RAISE EXCEPTION 'task %: % holds it, agent % cannot change it', OLD.id, OLD.owner, me
                USING ERRCODE = '42501';
        END IF;
        IF NOT leads AND (NEW.subject <> OLD.subject OR NEW.blocked_by <> OLD.blocked_by
                          OR NEW.role IS DISTINCT FROM OLD.role) THEN
            RAISE EXCEPTION 'task %: only the lead or the person changes its subject, role or blockers (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF NOT leads AND NEW.description <> OLD.description AND OLD.owner IS DISTINCT FROM me THEN
            RAISE EXCEPTION 'task %: agent % may edit the description of its own task only', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        -- Given back to the queue: by the lead, by its owner, or by anyone once its lease passed.
        IF NEW.status = 'pending' AND NEW.owner IS DISTINCT FROM OLD.owner AND NOT leads
           AND NOT (NEW.owner IS NULL AND (OLD.owner = me OR lapsed)) THEN
            RAISE EXCEPTION 'task %: only the lead or the person assigns it (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF OLD.status = 'pending' AND OLD.owner IS NOT NULL AND OLD.owner <> me
           AND NEW.status <> 'pending' THEN
            RAISE EXCEPTION 'task %: assigned to %, agent % cannot take it', OLD.id, OLD.owner, me
                USING ERRCODE = '42501';
        END IF;
        IF NEW.status <> 'pending' AND NEW.owner IS DISTINCT FROM me THEN
            RAISE EXCEPTION 'task %: agent % cannot act as %', OLD.id, me, NEW.owner
                USING ERRCODE = '42501';
        END IF;
        IF NEW.status IN ('review', 'completed', 'failed') AND OLD.status <> 'in_progress' THEN
            RAISE EXCEPTION 'task %: %, agent % can finish only a task it has in progress', OLD.id, OLD.status, me
                USING ERRCODE = '42501';
        END IF;
        -- Even with nothing to review: whether its work changed nothing is its host's word,
        -- and a host is as trusted as its agent; the person confirms it by merging.
        IF NEW.status = 'completed' AND writes THEN
            RAISE EXCEPTION 'task %: agent % writes code, its task is completed only by the person merging it', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        -- An agent's commits are on its own branch: one naming another's would have the
        -- person's review act on that teammate's branch (a discard reverting there).
        IF NEW.commits IS DISTINCT FROM OLD.commits AND NEW.commits IS NOT NULL
           AND NEW.commits->>'branch' IS DISTINCT FROM 'crew/' || me THEN
            RAISE EXCEPTION 'task %: agent % records commits only on its own branch crew/%', OLD.id, me, me
                USING ERRCODE = '42501';
        END IF;
        IF NEW.usage IS DISTINCT FROM OLD.usage
           AND NOT (OLD.status = 'in_progress' AND OLD.owner = me) THEN
            RAISE EXCEPTION 'task %: only its owner adds what its work used (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        -- A result and commits are the owner's, set as it works and finishes; the notes are
        -- the store's (a lapsed lease's) and the person's, so no agent can forge a
        -- "sent back by user" note its teammate would read as the person's review.
        IF (NEW.result IS DISTINCT FROM OLD.result OR NEW.commits IS DISTINCT FROM OLD.commits)
           AND NOT (OLD.status = 'in_progress' AND OLD.owner = me) THEN
            RAISE EXCEPTION 'task %: only its owner sets its result and commits (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        -- Beyond a lapsed lease's, an agent appends only one note of its own doing, as the
        -- store words it, with the change it records: an assignment by the lead ("... by
        -- lead"), its own tasks released as it shuts down ("released: alice ..."); never a
        -- note alone, nor one that reads as the person's review.
        IF NEW.notes <> OLD.notes AND NOT lapsed AND NOT (
               (NEW.owner IS DISTINCT FROM OLD.owner OR NEW.status <> OLD.status)
               AND cardinality(NEW.notes) = cardinality(OLD.notes) + 1
               AND NEW.notes[1:cardinality(OLD.notes)] = OLD.notes
               AND position(': sent back by ' IN NEW.notes[cardinality(NEW.notes)]) = 0
               AND (right(NEW.notes[cardinality(NEW.notes)], length(' by ' || me)) = ' by ' || me
                    OR (position(': released: ' || me || ' ' IN NEW.notes[cardinality(NEW.notes)]) > 0
                        AND OLD.owner = me AND NEW.owner IS NULL))) THEN
            RAISE EXCEPTION 'task %: agent % cannot write its notes', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        IF NEW.review IS DISTINCT FROM OLD.review THEN
            RAISE EXCEPTION 'task %: a verdict is recorded only while the task is in review (agent %)', OLD.id, me
                USING ERRCODE = '42501';
        END IF;
        RETURN NEW;
    END
    $$;
    "#,
    // 8: the keys of the usage additions a task took, so one retried after a lost reply adds
    // nothing the second time (as a message's id and a claim's token do); and nobody adds a
    // task with usage already on it (an agent's new task could claim any spend).
    r#"
    ALTER TABLE tasks ADD COLUMN usage_keys text[] NOT NULL DEFAULT '{}';
    CREATE FUNCTION crew_check_usage() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            IF NEW.usage IS NOT NULL OR cardinality(NEW.usage_keys) > 0 THEN
                RAISE EXCEPTION 'a new task has used nothing yet'
                    USING ERRCODE = '42501';
            END IF;
        ELSIF NEW.usage_keys IS DISTINCT FROM OLD.usage_keys AND NOT (
                  NEW.usage IS DISTINCT FROM OLD.usage
                  AND cardinality(NEW.usage_keys) = cardinality(OLD.usage_keys) + 1
                  AND NEW.usage_keys[1:cardinality(OLD.usage_keys)] = OLD.usage_keys
                  AND length(NEW.usage_keys[cardinality(NEW.usage_keys)]) <= 64) THEN
            RAISE EXCEPTION 'task %: its usage keys grow by one key with each addition to its usage', OLD.id
                USING ERRCODE = '42501';
        END IF;
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER tasks_usage BEFORE INSERT OR UPDATE OF usage, usage_keys ON tasks
        FOR EACH ROW EXECUTE FUNCTION crew_check_usage();
    "#,
    // 9: memories (crew-store's `MemoryBook`: `.crew/memory/<agent>/` and `team/` on files),
    // so a teammate on another host keeps what it learnt. `scope` is the agent's name, '' the
    // team's. An agent writes and forgets its own and the team's only; everyone reads all (as
    // on files). Names, descriptions and bodies are held to `[limits]` here too, and a scope to
    // `memories_per_scope`, under a lock per scope so two hosts adding at once cannot pass it.
    // `first_key`: the key of the write that made the row, so a retried write tells "kept"
    // from "replaced" as its first try did.
    r#"
    CREATE TABLE memories (
        scope text NOT NULL,
        name text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_-]{0,31}$'),
        kind text NOT NULL CHECK (kind IN ('user', 'feedback', 'project', 'reference')),
        description text NOT NULL,
        body text NOT NULL,
        first_key text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (scope, name)
    );

    CREATE FUNCTION crew_check_memory() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        subject_chars bigint := crew_limit('subject_chars', 200);
        memory_bytes bigint := crew_limit('memory_bytes', 16384);
        per_scope bigint := crew_limit('memories_per_scope', 200);
        held bigint;
    BEGIN
        IF NEW.scope <> '' AND NOT crew_on_team(NEW.scope) THEN
            RAISE EXCEPTION 'memory scope % is not on the team', NEW.scope
                USING ERRCODE = 'CRW01', COLUMN = 'scope';
        END IF;
        IF NEW.description = '' OR NEW.description ~ '[\r\n]'
           OR char_length(NEW.description) > subject_chars THEN
            RAISE EXCEPTION 'a memory description is one line of at most % characters ([limits] subject_chars)',
                subject_chars USING ERRCODE = 'CRW02', COLUMN = 'description';
        END IF;
        IF octet_length(NEW.body) > memory_bytes THEN
            RAISE EXCEPTION 'memory body is % bytes, over [limits] memory_bytes = %',
                octet_length(NEW.body), memory_bytes USING ERRCODE = 'CRW02', COLUMN = 'body';
        END IF;
        IF TG_OP = 'INSERT' THEN
            PERFORM pg_advisory_xact_lock(hashtextextended('crew memories ' || NEW.scope, 0));
            IF NOT EXISTS (SELECT 1 FROM memories WHERE scope = NEW.scope AND name = NEW.name) THEN
                SELECT count(*) INTO held FROM memories WHERE scope = NEW.scope;
                IF held >= per_scope THEN
                    RAISE EXCEPTION 'memory scope % holds % memories, [limits] memories_per_scope = %',
                        NEW.scope, held, per_scope USING ERRCODE = 'CRW02';
                END IF;
            END IF;
        ELSIF NEW.scope <> OLD.scope OR NEW.name <> OLD.name OR NEW.first_key <> OLD.first_key THEN
            RAISE EXCEPTION 'a memory keeps its scope, name and first key'
                USING ERRCODE = '42501';
        END IF;
        NEW.updated_at := now();
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER memories_checked BEFORE INSERT OR UPDATE ON memories
        FOR EACH ROW EXECUTE FUNCTION crew_check_memory();

    ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
    CREATE POLICY memories_read ON memories FOR SELECT USING (true);
    CREATE POLICY memories_own ON memories FOR ALL
        USING (scope = crew_agent() OR scope = '')
        WITH CHECK (scope = crew_agent() OR scope = '');

    DO $$
    DECLARE r record;
    BEGIN
        FOR r IN SELECT role FROM agent_roles LOOP
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON memories TO %I', r.role);
        END LOOP;
    END
    $$;
    "#,
    // 10: conversations (`.crew/conversations/<agent>/<key>.jsonl` on files), so a teammate
    // resumes its history on whichever host it runs next: a row per message at its position,
    // and each agent's latest key. An agent reads and writes its own only (a history holds
    // what its tools read); the person reads all.
    r#"
    CREATE TABLE conversations (
        agent text NOT NULL,
        key text NOT NULL CHECK (key ~ '^[a-z][a-z0-9_-]{0,31}$'),
        position integer NOT NULL CHECK (position >= 0),
        message jsonb NOT NULL,
        PRIMARY KEY (agent, key, position)
    );
    CREATE TABLE conversation_latest (
        agent text PRIMARY KEY,
        key text NOT NULL CHECK (key ~ '^[a-z][a-z0-9_-]{0,31}$'),
        kept_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE FUNCTION crew_check_conversation() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT crew_on_team(NEW.agent) THEN
            RAISE EXCEPTION 'conversation owner % is not on the team', NEW.agent
                USING ERRCODE = 'CRW01', COLUMN = 'agent';
        END IF;
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER conversations_on_team BEFORE INSERT OR UPDATE ON conversations
        FOR EACH ROW EXECUTE FUNCTION crew_check_conversation();
    CREATE TRIGGER conversation_latest_on_team BEFORE INSERT OR UPDATE ON conversation_latest
        FOR EACH ROW EXECUTE FUNCTION crew_check_conversation();

    ALTER TABLE conversations ENABLE ROW LEVEL SECURITY;
    CREATE POLICY conversations_own ON conversations FOR ALL
        USING (agent = crew_agent()) WITH CHECK (agent = crew_agent());
    ALTER TABLE conversation_latest ENABLE ROW LEVEL SECURITY;
    CREATE POLICY conversation_latest_own ON conversation_latest FOR ALL
        USING (agent = crew_agent()) WITH CHECK (agent = crew_agent());

    DO $$
    DECLARE r record;
    BEGIN
        FOR r IN SELECT role FROM agent_roles LOOP
            EXECUTE format(
                'GRANT SELECT, INSERT, UPDATE, DELETE ON conversations, conversation_latest TO %I',
                r.role);
        END LOOP;
    END
    $$;
    "#,
    // 11: an index exactly for a claim's pick of the oldest unowned ready task. Without it the
    // planner, on a table whose statistics lag (a team that just made its tasks), read every
    // unowned task through `tasks_assigned`, ran the blocker check on each and sorted: 11 ms a
    // claim with 3,000 tasks (claims 300-700/s, CPU-bound), where this one stops at the first.
    r#"
    CREATE INDEX tasks_unowned ON tasks (id) WHERE status = 'pending' AND owner IS NULL;
    "#,
];

/// The SQLSTATE of a row over the team's `[limits]` (schema 6).
pub(crate) const OVER_LIMITS: &str = "CRW02";

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
