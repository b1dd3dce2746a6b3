//! `crew store migrate | status` against a throwaway PostgreSQL server (skipped, saying why,
//! without the server binaries), and against a server that is not there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::Command;

use crew_protocol::{AgentName, USER};
use crew_store::{Draft, NewTask};
use crew_store_pg::{PgStore, SCHEMA_VERSION};

use crate::support::{Run, crew_exe};

fn crew(args: &[&str]) -> Run {
    Command::new(crew_exe()).args(args).output().unwrap().into()
}

fn ok(args: &[&str]) -> String {
    let run = crew(args);
    assert_eq!(run.code, 0, "crew {args:?}: {}", run.stderr);
    run.stdout
}

#[test]
fn migrate_brings_the_schema_to_this_crews_version_and_refuses_a_newer_one() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let fresh = ok(&["store", "status", &url]);
    assert!(
        fresh.starts_with("schema version: 0 (never migrated")
            && fresh.contains(&format!("this crew's schema version: {SCHEMA_VERSION}\n"))
            && fresh.contains(
                "tasks: 0\nmessages: 0\nconnection: not encrypted (the server offers no TLS)\n"
            ),
        "{fresh}"
    );
    let migrated = ok(&["store", "migrate", &url]);
    assert_eq!(
        migrated,
        format!("schema version {SCHEMA_VERSION} (migrated from 0)\n")
    );
    let again = ok(&["store", "migrate", &url]);
    assert_eq!(
        again,
        format!("schema version {SCHEMA_VERSION}: already current\n")
    );

    // What the team wrote is counted.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 1).unwrap();
    runtime.block_on(async {
        store
            .create_task(NewTask {
                subject: "one".into(),
                ..NewTask::default()
            })
            .await
            .unwrap();
        for text in ["hello", "again"] {
            let lead = AgentName::parse("lead").unwrap();
            store
                .send(Draft {
                    text: Some(text.into()),
                    ..Draft::new(USER, lead)
                })
                .await
                .unwrap();
        }
    });
    assert_eq!(
        ok(&["store", "status", &url]),
        format!(
            "schema version: {SCHEMA_VERSION}\nthis crew's schema version: {SCHEMA_VERSION}\n\
             tasks: 1\nmessages: 2\nconnection: not encrypted (the server offers no TLS)\n\
             agents: none heard from yet\n"
        )
    );

    // A store that a newer crew migrated: refused, both versions named; status still shows it.
    let newer = SCHEMA_VERSION + 7;
    runtime.block_on(async {
        let client = store.client().await.unwrap();
        client
            .execute("UPDATE crew_schema SET version = $1", &[&newer])
            .await
            .unwrap();
    });
    let refused = crew(&["store", "migrate", &url]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(&format!(
            "the store's schema is version {newer}, newer than version {SCHEMA_VERSION}"
        )) && !refused.stderr.contains("panicked"),
        "{}",
        refused.stderr
    );
    let shown = ok(&["store", "status", &url]);
    assert!(
        shown.starts_with(&format!(
            "schema version: {newer} (newer than this crew's: upgrade crew)\n"
        )),
        "{shown}"
    );
}

#[test]
fn an_unreachable_store_is_a_clear_error_naming_its_server() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://crew@127.0.0.1:{port}/team");
    for command in ["migrate", "status"] {
        let run = crew(&["store", command, &url]);
        assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.starts_with(&format!(
                "crew: cannot reach the store at 127.0.0.1:{port}: "
            )) && !run.stderr.contains("panicked"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn add_agent_makes_a_login_role_whose_password_is_never_stored_or_logged_as_given() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    ok(&["store", "migrate", &url]);
    cluster.require_passwords();
    let password = "s3cret-of-alice";
    let run: Run = Command::new(crew_exe())
        .args([
            "store",
            "add-agent",
            &url,
            "alice",
            "--password-env",
            "ALICE_PW",
        ])
        .env("ALICE_PW", password)
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    assert_eq!(
        run.stdout,
        format!(
            "agent alice: database role crew_postgres_alice (writes code: its tasks are \
             completed only by your merge)\n\
             it connects with postgres://crew_postgres_alice@127.0.0.1:{port}/postgres\n\
             its password: the one in $ALICE_PW now; on its host put it in PGPASSWORD or \
             ~/.pgpass\n"
        )
    );
    ok(&["store", "add-agent", &url, "carol", "--no-code"]);
    let lead = ok(&["store", "add-agent", &url, "lead", "--no-code", "--lead"]);
    assert!(
        lead.starts_with(
            "agent lead: database role crew_postgres_lead (writes no code: completes its own \
             tasks; the lead: assigns and edits tasks)\n"
        ),
        "{lead}"
    );
    assert_eq!(
        ok(&["store", "agents", &url]),
        "alice\tcrew_postgres_alice\twrites code\ncarol\tcrew_postgres_carol\tno code\n\
         lead\tcrew_postgres_lead\tno code\tlead\n"
    );

    // The role logs in with that password, and with no other.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let as_alice = |pw: &str| {
        let url = format!("postgres://crew_postgres_alice:{pw}@127.0.0.1:{port}/postgres");
        runtime.block_on(async { PgStore::connect(&url, 1).unwrap().reach().await })
    };
    as_alice(password).unwrap();
    let wrong = as_alice("guess").unwrap_err().to_string();
    assert!(wrong.contains("password authentication failed"), "{wrong}");
    assert!(!wrong.contains("guess"), "{wrong}");
    // The server keeps only a SCRAM verifier, and its statement log never saw the password.
    let stored: String = runtime.block_on(async {
        let store = PgStore::connect(&url, 1).unwrap();
        let client = store.client().await.unwrap();
        client
            .query_one(
                "SELECT rolpassword FROM pg_authid WHERE rolname = 'crew_postgres_alice'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    });
    assert!(stored.starts_with("SCRAM-SHA-256$"), "{stored}");
    let log = cluster.log_text();
    assert!(
        log.contains("ALTER ROLE") || log.contains("CREATE ROLE"),
        "{log}"
    );
    assert!(!log.contains(password) && !stored.contains(password));

    // Mistakes are said, naming what was wrong.
    let unset = crew(&[
        "store",
        "add-agent",
        &url,
        "bob",
        "--password-env",
        "NO_SUCH_VAR_X",
    ]);
    assert_eq!(unset.code, 1);
    assert!(
        unset
            .stderr
            .contains("--password-env NO_SUCH_VAR_X: the variable is not set"),
        "{}",
        unset.stderr
    );
    let bad = crew(&["store", "add-agent", &url, "Not A Name"]);
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("agent name \"Not A Name\""),
        "{}",
        bad.stderr
    );
    let person = crew(&["store", "add-agent", &url, "user"]);
    assert_eq!(person.code, 1);
    assert!(
        person.stderr.contains("is the person, not an agent"),
        "{}",
        person.stderr
    );
}

#[test]
fn status_says_whether_the_connection_is_encrypted_and_the_server_verified() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let Some(ca) = cluster.enable_tls() else {
        return;
    };
    let url = cluster.url();
    // A HOME of its own: no ~/.postgresql/root.crt of this machine's is read.
    let home = tempfile::tempdir().unwrap();
    let status = |roots: Option<&std::path::Path>| -> Run {
        let mut cmd = Command::new(crew_exe());
        cmd.args(["store", "status", &url])
            .env("HOME", home.path())
            .env_remove("PGSSLROOTCERT");
        if let Some(roots) = roots {
            cmd.env("PGSSLROOTCERT", roots);
        }
        cmd.output().unwrap().into()
    };
    let unverified = status(None);
    assert!(
        unverified.stdout.ends_with(
            "connection: TLS, the server not verified (set PGSSLROOTCERT to its CA to verify it)\n"
        ),
        "{}{}",
        unverified.stdout,
        unverified.stderr
    );
    let verified = status(Some(&ca));
    assert!(
        verified.stdout.ends_with(&format!(
            "connection: TLS, the server verified against {}\n",
            ca.display()
        )),
        "{}{}",
        verified.stdout,
        verified.stderr
    );
    // Another CA's roots: this server is not the one they vouch for, and crew will not talk
    // to it.
    let other = crew_test_support::postgres::start().unwrap();
    let other_ca = other.enable_tls().unwrap();
    let impostor = status(Some(&other_ca));
    assert_eq!(impostor.code, 1, "{}", impostor.stdout);
    assert!(
        impostor
            .stderr
            .contains("cannot reach the store at 127.0.0.1:")
            && impostor.stderr.to_lowercase().contains("certificate"),
        "{}",
        impostor.stderr
    );
    // A roots file that is not one is said, naming it.
    let junk = home.path().join("junk.crt");
    std::fs::write(&junk, "not a certificate").unwrap();
    let bad = status(Some(&junk));
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr
            .contains(&format!("TLS to the store: {}", junk.display())),
        "{}",
        bad.stderr
    );
}

#[test]
fn publish_puts_the_teams_crew_toml_names_and_limits_in_the_store() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let repo = crate::support::Repo::init();
    // Before the schema is there the store says what to do.
    let early = repo.crew(&["store", "publish", &url]);
    assert_eq!(early.code, 1, "{}", early.stdout);
    assert!(
        early.stderr.contains(&format!(
            "the store is at schema version 0, this crew's is {SCHEMA_VERSION}: run `crew store migrate {url}` first"
        )),
        "{}",
        early.stderr
    );
    repo.ok(&["store", "migrate", &url]);
    let said = repo.ok(&["store", "publish", &url]);
    assert!(
        said.starts_with(&format!(
            "published {} to the store at ",
            repo.join("crew.toml").display()
        )) && said
            .trim_end()
            .ends_with(": team lead, alice, bob, carol, user"),
        "{said}"
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 1).unwrap();
    let team = runtime.block_on(store.team()).unwrap().unwrap();
    assert_eq!(
        team.toml,
        std::fs::read_to_string(repo.join("crew.toml")).unwrap()
    );
    // Now a misspelt name is refused there as it is on files.
    let refused =
        runtime.block_on(store.send(Draft::new(USER, AgentName::parse("alcie").unwrap())));
    assert!(refused.unwrap_err().to_string().contains("alcie"),);
    // Outside a crew repository: said, naming what is missing.
    let elsewhere = tempfile::tempdir().unwrap();
    let lost: Run = Command::new(crew_exe())
        .args(["store", "publish", &url])
        .current_dir(elsewhere.path())
        .output()
        .unwrap()
        .into();
    assert_eq!(lost.code, 1);
    assert!(lost.stderr.contains("no crew.toml in"), "{}", lost.stderr);
}

#[test]
fn status_lists_each_agent_heard_from_and_the_leases_it_holds_by_the_servers_clock() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    ok(&["store", "migrate", &url]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 1).unwrap();
    let (alice, silent) = (
        AgentName::parse("alice").unwrap(),
        AgentName::parse("h1w0").unwrap(),
    );
    runtime.block_on(async {
        for subject in ["held", "lapsed"] {
            store
                .create_task(NewTask {
                    subject: subject.into(),
                    ..NewTask::default()
                })
                .await
                .unwrap();
        }
        // alice works on another machine: the list says which.
        store
            .write_status(&crew_store::AgentStatus {
                host: Some("build-box-2".into()),
                ..crew_store::AgentStatus::new(&alice, crew_store::AgentState::Work)
            })
            .await
            .unwrap();
        let claim = |name| crew_store::Claimant { name, role: None };
        store
            .claim_next(claim(&alice), std::time::Duration::from_secs(600))
            .await
            .unwrap();
        // A host that went silent: its lease already past.
        store
            .claim_next(claim(&silent), std::time::Duration::from_millis(1))
            .await
            .unwrap();
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    let said = ok(&["store", "status", &url]);
    let agents = said
        .split_once("agents:\n")
        .map(|(_, a)| a)
        .unwrap_or_default();
    let lines: Vec<&str> = agents.lines().collect();
    assert_eq!(lines.len(), 2, "{said}");
    // Seconds are the server's, rounded: a slow machine may say 1s where a fast one says 0s.
    assert!(
        lines[0].starts_with("  alice  WORK  heard ")
            && lines[0].contains("s ago  on build-box-2  task_1 (lease ")
            && lines[0].ends_with("s left)"),
        "{said}"
    );
    assert!(
        lines[1].starts_with("  h1w0  (no status)  task_2 (lease lapsed ")
            && lines[1].ends_with("s ago: claimable again)"),
        "{said}"
    );
}

/// `crew --store URL …` in `dir`.
fn on_store(dir: &std::path::Path, url: &str, args: &[&str]) -> Run {
    Command::new(crew_exe())
        .args(["--store", url])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .into()
}

#[test]
fn the_persons_commands_work_on_the_store_from_a_folder_with_no_checkout() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let repo = crate::support::Repo::init();
    repo.ok(&["store", "migrate", &url]);
    let elsewhere = tempfile::tempdir().unwrap();
    let here = elsewhere.path();
    let ok = |args: &[&str]| {
        let run = on_store(here, &url, args);
        assert_eq!(run.code, 0, "crew --store {args:?}: {}", run.stderr);
        run.stdout
    };

    // Before the person publishes the team, nothing knows its names: said, with what to do.
    let early = on_store(here, &url, &["task", "list"]);
    assert_ne!(early.code, 0);
    assert!(
        early
            .stderr
            .contains(&format!("run `crew store publish {url}`")),
        "{}",
        early.stderr
    );
    repo.ok(&["store", "publish", &url]);

    assert_eq!(ok(&["task", "add", "schema"]).trim(), "task_1");
    assert_eq!(
        ok(&["task", "add", "api", "--blocked-by", "task_1"]).trim(),
        "task_2"
    );
    let list = ok(&["task", "list"]);
    assert!(
        list.contains("task_1") && list.contains("schema") && list.contains("api"),
        "{list}"
    );
    let api: serde_json::Value =
        serde_json::from_str(&ok(&["task", "show", "task_2", "--json"])).unwrap();
    assert_eq!(api["status"], "pending");
    assert_eq!(api["blockedBy"], serde_json::json!(["task_1"]));

    ok(&["send", "--from", "lead", "--to", "alice", "hello alice"]);
    let peeked = ok(&["inbox", "alice", "--peek"]);
    assert!(
        peeked.contains("lead -> alice message: hello alice"),
        "{peeked}"
    );
    assert_eq!(ok(&["inbox", "alice"]), peeked, "peek left the cursor");
    assert_eq!(ok(&["inbox", "alice"]), "", "read once");
    assert!(ok(&["inbox", "alice", "--all"]).contains("hello alice"));
    let misspelt = on_store(
        here,
        &url,
        &["send", "--from", "lead", "--to", "alcie", "x"],
    );
    assert_ne!(misspelt.code, 0);
    assert!(misspelt.stderr.contains("alcie"), "{}", misspelt.stderr);

    let rid = ok(&[
        "send",
        "--from",
        "alice",
        "--to",
        "user",
        "--type",
        "permission_request",
        "--request",
        "may I run cargo test?",
    ]);
    let rid = rid.trim();
    let pending = ok(&["requests", "--pending"]);
    assert!(
        pending.contains(rid) && pending.contains("may I run cargo test?"),
        "{pending}"
    );
    let answered = ok(&["respond", rid, "--as", "user", "approve"]);
    assert_eq!(
        answered.trim(),
        format!("approved {rid} -> alice (permission_response)")
    );
    let all: serde_json::Value = serde_json::from_str(&ok(&["requests", "--json"])).unwrap();
    assert_eq!(all["requests"][0]["state"], "approved", "{all}");
    let twice = on_store(here, &url, &["respond", rid, "--as", "user", "reject"]);
    assert_ne!(twice.code, 0, "answered once");

    let status = ok(&["status"]);
    assert!(status.starts_with("agents:"), "{status}");

    // Reviews merge into the person's checkout: said where there is none.
    let review = on_store(here, &url, &["review", "list"]);
    assert_ne!(review.code, 0);
    assert!(
        review
            .stderr
            .contains("`crew --store URL review` merges into your checkout: run it there"),
        "{}",
        review.stderr
    );
    // What does not work on a store yet says so rather than using some folder's files.
    let interrupt = on_store(here, &url, &["interrupt", "alice"]);
    assert!(
        interrupt
            .stderr
            .contains("`crew interrupt` works on a checkout's files only for now"),
        "{}",
        interrupt.stderr
    );
    // `down` asks whoever runs, on any host: here nobody does.
    assert_eq!(
        on_store(here, &url, &["down"]).stdout,
        "no agent of the team is running\n"
    );
    // Every task command works there as on files, refusals exit 3 as on files.
    assert!(ok(&["task", "claim", "task_1", "--as", "alice"]).contains("claimed as alice: task_1"));
    let taken = on_store(here, &url, &["task", "claim", "task_1", "--as", "bob"]);
    assert_eq!(taken.code, 3, "{}", taken.stderr);
    assert!(taken.stderr.contains("alice"), "{}", taken.stderr);
    let blocked = on_store(here, &url, &["task", "claim", "task_2", "--as", "bob"]);
    assert_eq!(blocked.code, 3, "{}", blocked.stderr);
    ok(&["task", "release", "task_1", "--as", "alice"]);
    ok(&["task", "assign", "task_1", "carol"]);
    let shown: serde_json::Value =
        serde_json::from_str(&ok(&["task", "show", "task_1", "--json"])).unwrap();
    assert_eq!(shown["owner"], "carol");
    ok(&["task", "claim", "--next", "--as", "carol"]);
    ok(&["task", "update", "task_2", "--subject", "api v2"]);
    let cycle = on_store(
        here,
        &url,
        &["task", "update", "task_1", "--blocked-by", "task_2"],
    );
    assert_eq!(cycle.code, 3, "{}", cycle.stderr);
    ok(&[
        "task",
        "done",
        "task_1",
        "--as",
        "carol",
        "--result",
        "schema done",
    ]);
    assert!(ok(&["task", "graph"]).contains("api v2"));
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    crew_test_support::git::git_cli(std::path::Path::new("git"), dir, args)
        .trim()
        .to_string()
}

#[test]
fn a_task_made_on_another_host_is_reviewed_from_the_store_and_merged_into_the_persons_checkout() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    // The person's checkout, its team's remote a bare repository beside it.
    let repo = crate::support::Repo::init();
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("team.git");
    git(
        dir.path(),
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch=main",
            "team.git",
        ],
    );
    let toml = std::fs::read_to_string(repo.join("crew.toml")).unwrap();
    let toml = toml.replacen(
        "[team]\n",
        &format!("[team]\nremote = \"{}\"\n", bare.display()),
        1,
    );
    std::fs::write(repo.join("crew.toml"), toml).unwrap();
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "--quiet", "-m", "the team"]);
    git(
        repo.path(),
        &["push", "--quiet", bare.to_str().unwrap(), "main"],
    );
    repo.ok(&["store", "migrate", &url]);
    repo.ok(&["store", "publish", &url]);

    // bob, on another host: its own clone, its commits pushed to the remote, its task in the
    // store, as a joined host's worker leaves them.
    let host2 = dir.path().join("host2");
    git(
        dir.path(),
        &[
            "clone",
            "--quiet",
            bare.to_str().unwrap(),
            host2.to_str().unwrap(),
        ],
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 2).unwrap();
    let bob = AgentName::parse("bob").unwrap();
    let mut made = Vec::new();
    for (k, file) in ["b.txt", "c.txt"].into_iter().enumerate() {
        let start = git(&host2, &["rev-parse", "HEAD"]);
        std::fs::write(host2.join(file), format!("{file} from host2\n")).unwrap();
        git(&host2, &["add", file]);
        git(
            &host2,
            &[
                "commit",
                "--quiet",
                "-m",
                &format!("task_{}: {file}", k + 1),
            ],
        );
        let head = git(&host2, &["rev-parse", "HEAD"]);
        git(
            &host2,
            &[
                "push",
                "--quiet",
                bare.to_str().unwrap(),
                &format!("HEAD:refs/heads/crew/bob/task_{}", k + 1),
            ],
        );
        runtime.block_on(async {
            let task = store
                .create_task(NewTask {
                    subject: format!("write {file}"),
                    ..NewTask::default()
                })
                .await
                .unwrap();
            let bob_claims = crew_store::Claimant {
                name: &bob,
                role: None,
            };
            crew_store::TeamStore::claim_next(&store, bob_claims)
                .await
                .unwrap();
            store
                .record_start(task.id, "crew/bob", &start)
                .await
                .unwrap();
            store
                .submit_for_review(
                    task.id,
                    &bob,
                    format!("wrote {file}"),
                    crew_store::TaskCommits {
                        branch: "crew/bob".into(),
                        start,
                        head,
                    },
                )
                .await
                .unwrap();
        });
        made.push(file);
    }

    let on = |args: &[&str]| {
        let run = on_store(repo.path(), &url, args);
        assert_eq!(run.code, 0, "crew --store {args:?}: {}", run.stderr);
        run.stdout
    };
    let list: serde_json::Value = serde_json::from_str(&on(&["review", "list", "--json"])).unwrap();
    assert_eq!(list["reviews"].as_array().unwrap().len(), 2, "{list}");
    assert_eq!(
        list["reviews"][0]["files"],
        serde_json::json!(["b.txt"]),
        "{list}"
    );
    let diff: serde_json::Value =
        serde_json::from_str(&on(&["review", "diff", "task_2", "--json"])).unwrap();
    assert_eq!(diff["files"][0]["path"], "c.txt", "{diff}");

    let merged = on(&["review", "merge", "task_1"]);
    assert!(
        merged.contains("task_1 merged into main by user"),
        "{merged}"
    );
    assert!(!merged.contains("not pushed"), "{merged}");
    assert_eq!(
        git(repo.path(), &["show", "main:b.txt"]),
        "b.txt from host2"
    );
    assert_eq!(
        git(&bare, &["rev-parse", "main"]),
        git(repo.path(), &["rev-parse", "main"]),
        "the merged base is on the remote for every host"
    );
    let sent = on(&["review", "send-back", "task_2", "--note", "add a test"]);
    assert!(
        sent.contains("task_2 sent back to bob: add a test"),
        "{sent}"
    );
    // A third, discarded: its branch is on host2, so nothing here is reverted or changed.
    let (start, head) = (
        git(&host2, &["rev-parse", "HEAD~1"]),
        git(&host2, &["rev-parse", "HEAD"]),
    );
    runtime.block_on(async {
        let task = store
            .create_task(NewTask {
                subject: "third".into(),
                ..NewTask::default()
            })
            .await
            .unwrap();
        // Claimed by carol, so bob's returned task_2 stays his.
        let carol = AgentName::parse("carol").unwrap();
        let claim = crew_store::Claimant {
            name: &carol,
            role: None,
        };
        let got = crew_store::TeamStore::claim_next(&store, claim)
            .await
            .unwrap();
        assert_eq!(got.id, task.id);
        store
            .record_start(task.id, "crew/bob", &start)
            .await
            .unwrap();
        let commits = crew_store::TaskCommits {
            branch: "crew/bob".into(),
            start,
            head,
        };
        store
            .submit_for_review(task.id, &carol, "third".into(), commits)
            .await
            .unwrap();
    });
    let before = git(repo.path(), &["rev-parse", "main"]);
    let discarded = on(&["review", "discard", "task_3", "--reason", "not wanted"]);
    assert!(
        discarded.contains("task_3 discarded: not wanted"),
        "{discarded}"
    );
    assert_eq!(git(repo.path(), &["rev-parse", "main"]), before);
    runtime.block_on(async {
        let one = store.task(crew_protocol::TaskId(1)).await.unwrap();
        assert_eq!(one.status, crew_store::Status::Completed);
        let two = store.task(crew_protocol::TaskId(2)).await.unwrap();
        assert_eq!(two.status, crew_store::Status::Pending);
        assert_eq!(two.owner.as_ref(), Some(&bob));
        let lead = store
            .inbox(&AgentName::parse("lead").unwrap())
            .await
            .unwrap();
        assert!(
            lead.iter().any(|m| m
                .text
                .as_deref()
                .is_some_and(|t| t.contains("task_1 merged"))),
            "{lead:?}"
        );
    });
    // A hostile owner records its own start (its role may): one after a commit of its own, so
    // the task's diff hides it, and one from nowhere in its history.
    git(
        &host2,
        &["fetch", "--quiet", bare.to_str().unwrap(), "main"],
    );
    git(&host2, &["reset", "--quiet", "--hard", "FETCH_HEAD"]);
    let commit = |file: &str| {
        std::fs::write(host2.join(file), "x\n").unwrap();
        git(&host2, &["add", file]);
        git(&host2, &["commit", "--quiet", "-m", file]);
        git(&host2, &["rev-parse", "HEAD"])
    };
    let hidden = commit("evil.txt");
    let shown = commit("d.txt");
    // A commit of the person's checkout that no branch of bob's descends from.
    let elsewhere = git(
        repo.path(),
        &["commit-tree", "main^{tree}", "-m", "unrelated"],
    );
    // And one no repository has: the list still shows every review.
    let nowhere = "0123456789abcdef0123456789abcdef01234567".to_string();
    for (task, start) in [
        ("task_4", &hidden),
        ("task_5", &elsewhere),
        ("task_6", &nowhere),
    ] {
        git(
            &host2,
            &[
                "push",
                "--quiet",
                "--force",
                bare.to_str().unwrap(),
                &format!("HEAD:refs/heads/crew/bob/{task}"),
            ],
        );
        runtime.block_on(async {
            let t = store
                .create_task(NewTask {
                    subject: task.into(),
                    ..NewTask::default()
                })
                .await
                .unwrap();
            let carol = AgentName::parse("carol").unwrap();
            let claim = crew_store::Claimant {
                name: &carol,
                role: None,
            };
            crew_store::TeamStore::claim(&store, t.id, claim)
                .await
                .unwrap();
            let commits = crew_store::TaskCommits {
                branch: "crew/bob".into(),
                start: start.clone(),
                head: shown.clone(),
            };
            store
                .submit_for_review(t.id, &carol, "benign".into(), commits)
                .await
                .unwrap();
        });
    }
    let list: serde_json::Value = serde_json::from_str(&on(&["review", "list", "--json"])).unwrap();
    let four = &list["reviews"].as_array().unwrap()[0];
    assert_eq!(four["id"], "task_4", "{list}");
    assert_eq!(four["files"], serde_json::json!(["d.txt"]), "{list}");
    assert_eq!(
        four["also_brings"],
        serde_json::json!(["evil.txt"]),
        "{list}"
    );
    let listed = on(&["review", "list"]);
    assert!(
        listed.contains("ALSO BRINGS (not in its commits): evil.txt"),
        "{listed}"
    );
    assert_eq!(list["reviews"].as_array().unwrap().len(), 3, "{list}");
    for forged in &list["reviews"].as_array().unwrap()[1..] {
        assert!(
            forged["unavailable"]
                .as_str()
                .is_some_and(|why| why.contains("not in the history of its head")),
            "{list}"
        );
    }
    let refused = on_store(repo.path(), &url, &["review", "merge", "task_5"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    let approve = on_store(repo.path(), &url, &["review", "approve", "task_2"]);
    assert_ne!(approve.code, 0);
}

#[test]
fn setup_migrates_publishes_and_gives_each_agent_on_crew_toml_its_role_and_rights() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let repo = crate::support::Repo::init();
    let said = repo.ok(&["store", "setup", &url]);
    for line in [
        "lead: crew_postgres_lead (no code, the lead), connects with",
        "alice: crew_postgres_alice (writes code), connects with",
        "bob: crew_postgres_bob (writes code), connects with",
        "carol: crew_postgres_carol (no code), connects with",
    ] {
        assert!(said.contains(line), "{line:?} in {said}");
    }
    assert!(said.contains("published "), "{said}");
    assert_eq!(
        repo.ok(&["store", "agents", &url]).lines().count(),
        4,
        "one role each"
    );
    // The role works as its agent, and only as it.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let alice = PgStore::connect(&cluster.url_as("crew_postgres_alice"), 1).unwrap();
    let lead = AgentName::parse("lead").unwrap();
    runtime
        .block_on(alice.send(Draft::new(AgentName::parse("alice").unwrap(), lead.clone())))
        .unwrap();
    let forged = runtime.block_on(alice.send(Draft::new(lead, USER)));
    assert!(forged.is_err(), "alice wrote as the lead");

    // carol leaves the team: run again, and her role is named as still there.
    let toml = std::fs::read_to_string(repo.join("crew.toml")).unwrap();
    let carol = toml.find("[[teammate]]\nname = \"carol\"").unwrap();
    std::fs::write(repo.join("crew.toml"), &toml[..carol]).unwrap();
    let again = repo.ok(&["store", "setup", &url]);
    assert!(
        again.contains("roles of agents no longer on the team, still able to log in: carol (crew_postgres_carol)"),
        "{again}"
    );
    assert!(again.contains("already current"), "{again}");
}

#[test]
fn the_person_reads_what_agents_remember_from_the_store() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let repo = crate::support::Repo::init();
    repo.ok(&["store", "migrate", &url]);
    repo.ok(&["store", "publish", &url]);
    let alice = AgentName::parse("alice").unwrap();
    let store = PgStore::connect(&url, 1).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        for (name, scope, body) in [
            (
                "build",
                crew_store::MemoryScope::Agent,
                "run `cargo build -q`",
            ),
            ("style", crew_store::MemoryScope::Team, "no unwrap in src/"),
        ] {
            let draft = crew_store::MemoryDraft {
                name: name.into(),
                kind: crew_store::MemoryType::Project,
                description: format!("how we {name}"),
                body: body.into(),
                scope,
            };
            store.write_memory(&alice, &draft).await.unwrap();
        }
    });
    let elsewhere = tempfile::tempdir().unwrap();
    let ok = |args: &[&str]| {
        let run = on_store(elsewhere.path(), &url, args);
        assert_eq!(run.code, 0, "crew --store {args:?}: {}", run.stderr);
        run.stdout
    };
    assert_eq!(
        ok(&["memory", "list", "--agent", "alice"]),
        "alice's memory\n- build (project): how we build\nthe team's memory\n\
         - style (project): how we style\n"
    );
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&["memory", "list", "--agent", "alice", "--json"])).unwrap();
    assert_eq!(listed["memories"][1]["scope"], "team", "{listed}");
    assert_eq!(listed["memories"][0]["name"], "build", "{listed}");
    let shown = ok(&["memory", "show", "build", "--agent", "alice"]);
    assert_eq!(
        shown,
        "- build (project): how we build\nalice's memory\n\nrun `cargo build -q`\n"
    );
    // The lead has none of its own, and sees the team's; a stranger or a missing memory is
    // said, naming it.
    assert!(ok(&["memory", "list"]).contains("- style (project)"));
    let stranger = on_store(
        elsewhere.path(),
        &url,
        &["memory", "list", "--agent", "mallory"],
    );
    assert_ne!(stranger.code, 0);
    assert!(
        stranger.stderr.contains("\"mallory\""),
        "{}",
        stranger.stderr
    );
    let missing = on_store(
        elsewhere.path(),
        &url,
        &["memory", "show", "nothing", "--agent", "alice"],
    );
    assert_eq!(missing.code, 3, "{}", missing.stderr);
    assert!(missing.stderr.contains("\"nothing\""), "{}", missing.stderr);
}

/// `up` on the store: what it does not do there yet is refused naming the flag; `--here`
/// without a store says what it is for; `down --json` is refused saying what works.
#[test]
fn up_on_the_store_refuses_what_it_does_not_do_there_naming_it() {
    let repo = crate::support::Repo::init();
    let url = "postgres://nobody@127.0.0.1:1/none";
    let daemon = repo.crew(&["--store", url, "up", "--daemon"]);
    assert_eq!(daemon.code, 2, "{}", daemon.stderr);
    assert!(
        daemon
            .stderr
            .contains("--daemon is not for a team in the store yet"),
        "{}",
        daemon.stderr
    );
    // What is for a run without the screen is refused with it, not ignored.
    for flags in [
        &["--merge", "queue"][..],
        &["--approve", "allow"],
        &["--until-done"],
        &["--json"],
    ] {
        let mut args = vec!["--store", url, "up"];
        args.extend_from_slice(flags);
        let run = repo.crew(&args);
        assert_eq!(run.code, 2, "{flags:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "{} is for a run without the screen: give --headless too",
                flags[0]
            )),
            "{}",
            run.stderr
        );
    }
    let here = repo.crew(&["up", "--here", "bob"]);
    assert_eq!(here.code, 2, "{}", here.stderr);
    assert!(here.stderr.contains("--here names the teammates of this machine on a team in the store: give --store URL too"), "{}", here.stderr);
}

/// An agent's (or the person's) password reaches the server from `PGPASSWORD` or from the
/// password file PostgreSQL's clients read (`~/.pgpass`, `PGPASSFILE`), never from crew.toml or
/// the URL; a password file others may read is refused naming it. (crew takes `PGPASSWORD` out
/// of its environment at start, so agents' commands never see it: the store reads it from there.)
#[test]
fn a_password_comes_from_pgpassword_or_the_password_file() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    ok(&["store", "migrate", &url]);
    cluster.require_passwords();
    let password = "s3cret-of-alice";
    let run: Run = Command::new(crew_exe())
        .args(["store", "add-agent", &url, "alice"])
        .args(["--password-env", "ALICE_PW"])
        .env("ALICE_PW", password)
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let alice = cluster.url_as("crew_postgres_alice");
    let home = tempfile::tempdir().unwrap();
    let status = |env: &[(&str, &str)]| -> Run {
        Command::new(crew_exe())
            .args(["store", "status", &alice])
            .env("HOME", home.path())
            .env_remove("PGPASSWORD")
            .env_remove("PGPASSFILE")
            .envs(env.iter().copied())
            .output()
            .unwrap()
            .into()
    };
    let none = status(&[]);
    assert_ne!(none.code, 0);
    assert!(none.stderr.contains("password missing"), "{}", none.stderr);
    let from_env = status(&[("PGPASSWORD", password)]);
    assert_eq!(from_env.code, 0, "{}", from_env.stderr);
    let wrong = status(&[("PGPASSWORD", "guess-again")]);
    assert!(
        wrong.stderr.contains("password authentication failed"),
        "{}",
        wrong.stderr
    );

    use std::os::unix::fs::PermissionsExt;
    let pgpass = home.path().join(".pgpass");
    std::fs::write(
        &pgpass,
        format!("# the team\n127.0.0.1:*:postgres:crew_postgres_alice:{password}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let loose = status(&[]);
    assert_ne!(loose.code, 0);
    assert!(
        loose.stderr.contains(&format!(
            "{}: others may read it (mode 644)",
            pgpass.display()
        )) && loose.stderr.contains("chmod 600"),
        "{}",
        loose.stderr
    );
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let from_file = status(&[]);
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    // PGPASSFILE names another file.
    let elsewhere = home.path().join("team.pgpass");
    std::fs::rename(&pgpass, &elsewhere).unwrap();
    let named = status(&[("PGPASSFILE", elsewhere.to_str().unwrap())]);
    assert_eq!(named.code, 0, "{}", named.stderr);
}

/// On a server that checks passwords, `up` gives the role of each worker it starts a password
/// of its own (never the person's), kept in the person's password file (made owner-only),
/// where the worker reads it: the lead logs in with it, and the next `up` uses it again. A
/// password file others may read is refused naming it, nothing written.
#[test]
fn up_on_a_password_checking_server_gives_each_worker_it_starts_a_password_of_its_own() {
    use std::os::unix::fs::PermissionsExt;
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let toml = crate::support::team::crew_toml("", &[], "mode = \"ask\"", "heartbeat_secs = 1");
    let team = crate::support::team::Team::new(&toml, "echo.toml", &[]);
    let _workers = crate::team_joined::Stragglers(team.repo.path().to_path_buf());
    cluster.require_passwords();
    let home = tempfile::tempdir().unwrap();
    let pgpass = home.path().join("pgpass");
    let up = || -> Run {
        Command::new(crew_exe())
            .args(["--store", &url, "up"])
            .current_dir(team.repo.path())
            .env("PGPASSFILE", &pgpass)
            .output()
            .unwrap()
            .into()
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&url, 1).unwrap();
    let lead_runs = || {
        runtime
            .block_on(store.agents_seen())
            .unwrap()
            .iter()
            .any(|a| {
                a.name.as_str() == "lead"
                    && a.status.as_ref().is_some_and(|s| {
                        s.state != crew_protocol::AgentState::Shutdown
                            && s.state != crew_protocol::AgentState::Dead
                    })
            })
    };
    // Without a terminal the screen does not open; the lead is started before it.
    let first = up();
    assert!(
        first.stdout.contains(&format!(
            "lead: the server asks its role crew_postgres_lead for a password: crew made one and keeps it in {}",
            pgpass.display()
        )),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let mode = std::fs::metadata(&pgpass).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let kept = std::fs::read_to_string(&pgpass).unwrap();
    assert!(kept.starts_with("127.0.0.1:"), "{kept}");
    assert!(kept.contains(":crew_postgres_lead:"), "{kept}");
    crew_test_support::wait::eventually_showing(
        "the lead logged in",
        std::time::Duration::from_secs(30),
        || {
            if lead_runs() {
                Ok(())
            } else {
                Err(
                    std::fs::read_to_string(team.repo.join(".crew/logs/lead.log"))
                        .unwrap_or_default(),
                )
            }
        },
    );
    let down = crew(&["--store", &url, "down", "--timeout", "30"]);
    assert!(
        down.stdout.contains("every agent shut down"),
        "{}\n{}",
        down.stdout,
        down.stderr
    );

    // The next `up` logs in with the kept password: no new one.
    let again = up();
    assert!(
        again.stdout.contains("lead: started here") && !again.stdout.contains("asks its role"),
        "{}\n{}",
        again.stdout,
        again.stderr
    );
    assert_eq!(std::fs::read_to_string(&pgpass).unwrap(), kept);
    crew_test_support::wait::eventually_showing(
        "the lead again",
        std::time::Duration::from_secs(30),
        || {
            if lead_runs() {
                Ok(())
            } else {
                Err(String::new())
            }
        },
    );
    crew(&["--store", &url, "down", "--timeout", "30"]);

    // A password file others may read is used for nothing, and said.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let loose = up();
    assert_ne!(loose.code, 0, "{}", loose.stdout);
    assert!(
        loose
            .stderr
            .contains(&format!("{}: others may read it", pgpass.display()))
            && loose.stderr.contains("chmod 600"),
        "{}",
        loose.stderr
    );
    assert!(
        !loose.stdout.contains("lead: started here"),
        "{}",
        loose.stdout
    );
    assert_eq!(std::fs::read_to_string(&pgpass).unwrap(), kept);
}

/// A Claude Code teammate's team tools are `crew mcp`, a process its CLI starts, which logs in
/// with the agent's role from the password file: crew hands no password to a third-party
/// process. A worker whose role's password is only in `PGPASSWORD` is refused at start, saying
/// where the password goes, rather than the CLI finding its tools gone.
#[test]
fn a_claude_code_worker_on_the_store_needs_its_password_where_its_tools_can_read_it() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let url = cluster.url();
    let mut toml = crate::support::team::crew_toml("", &[], "mode = \"ask\"", "heartbeat_secs = 1");
    toml.push_str(
        "\n[[teammate]]\nname = \"bob\"\nrole = \"implementer\"\nwrites = true\nmodel = { provider = \"claude-code\", bin = \"/bin/false\" }\n",
    );
    let team = crate::support::team::Team::new(&toml, "echo.toml", &[]);
    team.repo.ok(&["store", "setup", &url]);
    let added: Run = Command::new(crew_exe())
        .args([
            "store",
            "add-agent",
            &url,
            "bob",
            "--password-env",
            "BOB_PW",
        ])
        .env("BOB_PW", "bobs-pw-93")
        .output()
        .unwrap()
        .into();
    assert_eq!(added.code, 0, "{}", added.stderr);
    cluster.require_passwords();
    let home = tempfile::tempdir().unwrap();
    let bob = cluster.url_as("crew_postgres_bob");
    let run: Run = Command::new(crew_exe())
        .args(["--store", &bob, "worker", "--name", "bob"])
        .current_dir(team.repo.path())
        .env("HOME", home.path())
        .env_remove("PGPASSFILE")
        .env("PGPASSWORD", "bobs-pw-93")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("bob: a Claude Code teammate's team tools")
            && run.stderr.contains("never from PGPASSWORD")
            && run.stderr.contains("crew_postgres_bob"),
        "{}",
        run.stderr
    );
}
