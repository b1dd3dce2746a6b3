//! Each agent's own database role. The person (the database's owner, who ran `crew store
//! migrate`) makes one per agent; schema 4's trigger and row policies then hold whoever logs in
//! with it to what that agent may do, whatever SQL it sends. Only the person's role can answer
//! a permission request, move a task out of review, or change the schema.

use postgres_protocol::escape::{escape_identifier, escape_literal};

use crew_protocol::{AgentName, USER};

use crate::{PgStore, PgStoreError};

/// 192 random bits from the kernel, as hex.
fn new_password() -> Result<String, PgStoreError> {
    use std::io::Read;
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|e| PgStoreError::Passfile(format!("making a password from /dev/urandom: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Role names are at most 63 bytes in PostgreSQL; a longer one would be cut silently.
const ROLE_NAME_MAX: usize = 63;

/// An agent's login role on the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRole {
    /// `crew_<database>_<agent>`: roles are per server, so the team's database is in the name.
    pub role: String,
    pub agent: AgentName,
    pub rights: AgentRights,
}

/// What the database lets an agent's role do beyond any teammate's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgentRights {
    /// It writes code: its tasks are completed only by the person's merge.
    pub writes: bool,
    /// It is the lead: it assigns tasks and edits any pending task's subject, description and
    /// blockers, as the lead may on files.
    pub leads: bool,
}

impl PgStore {
    /// Makes a new password for the agent's `role`, keeps it in this machine's password file
    /// ([`Self::keep_password`], where the workers started here read it) and gives the role it;
    /// the file. Kept first: a file crew may not use refuses before the role changes.
    pub async fn give_agent_a_password(
        &self,
        role: &str,
    ) -> Result<std::path::PathBuf, PgStoreError> {
        let password = new_password()?;
        crew_store::secrets::register(&password);
        let file = self.keep_password(role, &password)?;
        self.set_agent_password(role, &password).await?;
        Ok(file)
    }

    /// Gives the role an agent logs in with a new `password` (a SCRAM verifier made here, as
    /// [`Self::add_agent`] makes it). Only an agent's role: the person's, or any other, is
    /// refused. Needs the person's connection, with `CREATEROLE`.
    pub async fn set_agent_password(&self, role: &str, password: &str) -> Result<(), PgStoreError> {
        let verifier = postgres_protocol::password::scram_sha_256(password.as_bytes());
        self.retry(|| async {
            let client = self.client().await?;
            let known = client
                .query_opt("SELECT 1 FROM agent_roles WHERE role = $1", &[&role])
                .await?
                .is_some();
            if !known {
                return Err(PgStoreError::RoleName {
                    role: role.to_string(),
                    reason: "not an agent's role in this store".into(),
                });
            }
            client
                .batch_execute(&format!(
                    "ALTER ROLE {} PASSWORD {}",
                    escape_identifier(role),
                    escape_literal(&verifier)
                ))
                .await?;
            Ok(())
        })
        .await
    }

    /// Makes (or updates) `agent`'s login role and lets it work as that agent. `password`
    /// is stored only as a SCRAM verifier made here, so neither the server's log nor
    /// `pg_authid` ever holds it. Needs the person's connection: the store's owner, with
    /// `CREATEROLE`.
    pub async fn add_agent(
        &self,
        agent: &AgentName,
        rights: AgentRights,
        password: Option<&str>,
    ) -> Result<AgentRole, PgStoreError> {
        if *agent == USER {
            return Err(PgStoreError::NotAnAgent(agent.clone()));
        }
        let database = self.database();
        let role = format!("crew_{database}_{agent}");
        if role.len() > ROLE_NAME_MAX {
            return Err(PgStoreError::RoleName {
                role,
                reason: format!("longer than PostgreSQL's {ROLE_NAME_MAX} bytes"),
            });
        }
        let verifier = password.map(|p| postgres_protocol::password::scram_sha_256(p.as_bytes()));
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let me = tx
                .query_one(
                    "SELECT current_user::text,
                         coalesce((SELECT rolsuper OR rolcreaterole FROM pg_roles
                                   WHERE rolname = current_user), false),
                         coalesce((SELECT tableowner = current_user FROM pg_tables
                                   WHERE tablename = 'tasks' AND schemaname = current_schema()),
                                  false)",
                    &[],
                )
                .await?;
            let (person, may_create, owns): (String, bool, bool) =
                (me.try_get(0)?, me.try_get(1)?, me.try_get(2)?);
            if !owns {
                return Err(PgStoreError::NotThePerson {
                    role: person,
                    needs: "to own the store's tables (run `crew store migrate` as it first)",
                });
            }
            if !may_create {
                return Err(PgStoreError::NotThePerson {
                    role: person,
                    needs: "CREATEROLE (ALTER ROLE ... CREATEROLE, as a superuser)",
                });
            }
            let taken: Option<String> = tx
                .query_opt(
                    "SELECT role::text FROM agent_roles WHERE agent = $1 AND role <> $2",
                    &[&agent.as_str(), &role],
                )
                .await?
                .map(|r| r.get(0));
            if let Some(other) = taken {
                return Err(PgStoreError::RoleName {
                    role: role.clone(),
                    reason: format!("agent {agent} already logs in as {other}"),
                });
            }
            let exists = tx
                .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&role])
                .await?
                .is_some();
            let quoted = escape_identifier(&role);
            let password_clause = verifier
                .as_deref()
                .map(|v| format!(" PASSWORD {}", escape_literal(v)))
                .unwrap_or_default();
            // NOINHERIT: whatever it is granted later, it acts only with its own rights.
            let verb = if exists { "ALTER" } else { "CREATE" };
            tx.batch_execute(&format!(
                "{verb} ROLE {quoted} LOGIN NOINHERIT NOCREATEDB NOCREATEROLE{password_clause}"
            ))
            .await?;
            tx.execute(
                "INSERT INTO agent_roles (role, agent, writes, leads) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (role) DO UPDATE SET writes = excluded.writes, leads = excluded.leads",
                &[&role, &agent.as_str(), &rights.writes, &rights.leads],
            )
            .await?;
            let db = escape_identifier(&database);
            tx.batch_execute(&format!(
                "GRANT CONNECT ON DATABASE {db} TO {quoted};
                 GRANT USAGE ON SCHEMA public TO {quoted};
                 -- Before PostgreSQL 15 everyone may create in `public`: no agent may.
                 REVOKE CREATE ON SCHEMA public FROM PUBLIC;
                 GRANT SELECT ON crew_schema, tasks, messages, inbox_cursors, agents, agent_roles,
                     team_config TO {quoted};
                 GRANT INSERT, UPDATE ON tasks, inbox_cursors, agents TO {quoted};
                 GRANT INSERT ON messages TO {quoted};
                 GRANT SELECT, INSERT, UPDATE, DELETE ON memories, conversations,
                     conversation_latest TO {quoted};
                 GRANT USAGE ON SEQUENCE tasks_id_seq, messages_seq_seq TO {quoted};"
            ))
            .await?;
            tx.commit().await?;
            Ok(AgentRole {
                role: role.clone(),
                agent: agent.clone(),
                rights,
            })
        })
        .await
    }

    /// Every agent role the store knows, by agent name.
    pub async fn agent_roles(&self) -> Result<Vec<AgentRole>, PgStoreError> {
        self.retry(|| async {
            let rows = self
                .client()
                .await?
                .query(
                    "SELECT role::text, agent, writes, leads FROM agent_roles ORDER BY agent",
                    &[],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    let agent: String = r.try_get(1)?;
                    Ok(AgentRole {
                        role: r.try_get(0)?,
                        agent: crate::tasks::name_from_sql("agent role", &agent)?,
                        rights: AgentRights {
                            writes: r.try_get(2)?,
                            leads: r.try_get(3)?,
                        },
                    })
                })
                .collect()
        })
        .await
    }
}
