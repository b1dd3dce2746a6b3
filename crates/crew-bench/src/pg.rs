//! `crew-bench claims|mailbox|wake --store postgres://…`: the same races as on the file store,
//! against a PostgreSQL server. Each run works in a scratch database it creates on that server
//! (the URL's user needs CREATEDB) and drops at the end.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crew_store::{AgentName, Claimant, Draft, MessageKind, NewTask, Refusal};
use crew_store_pg::wakeups::Wake;
use crew_store_pg::{PgStore, PgStoreError, Wakeups};

use crate::mailbox::{Received, unix_nanos};
use crate::proc::{Workers, ready_and_wait};
use crate::stats::{percentile, round3};

const READER: &str = "reader";
/// Claims in the benches hold their lease for longer than any run.
const LEASE: Duration = Duration::from_secs(3600);

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    // One thread: a bench process is one client; spare cores go to the server.
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// A scratch database on the server at `url`, dropped with the guard.
pub(crate) struct Scratch {
    admin: PgStore,
    name: String,
    pub(crate) url: String,
}

impl Scratch {
    pub(crate) async fn create(url: &str) -> anyhow::Result<Scratch> {
        let admin = PgStore::connect(url, 1)?;
        let name = format!(
            "crew_bench_{}_{}",
            std::process::id(),
            unix_nanos() % 1_000_000
        );
        admin
            .client()
            .await?
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .with_context(|| format!("creating a scratch database on {url}"))?;
        let url = with_database(url, &name)?;
        PgStore::connect(&url, 1)?.migrate().await?;
        Ok(Scratch { admin, name, url })
    }

    pub(crate) async fn drop_it(self) -> anyhow::Result<()> {
        self.admin
            .client()
            .await?
            .batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name))
            .await?;
        Ok(())
    }
}

/// `url` with its database (the path after host:port) replaced by `db`.
fn with_database(url: &str, db: &str) -> anyhow::Result<String> {
    let Some(scheme) = url.find("://") else {
        bail!("store URL {url:?}: expected postgres://user@host:port/database");
    };
    let rest = &url[scheme + 3..];
    let host_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let query = rest[host_end..]
        .find('?')
        .map_or("", |q| &rest[host_end + q..]);
    Ok(format!(
        "{}{}/{db}{query}",
        &url[..scheme + 3],
        &rest[..host_end]
    ))
}

pub(crate) fn nothing_left(e: &PgStoreError) -> bool {
    matches!(e, PgStoreError::Refused(Refusal::NothingClaimable { .. }))
}

pub fn claims(url: &str, procs: usize, tasks: usize, as_json: bool) -> anyhow::Result<()> {
    let rt = runtime()?;
    let scratch = rt.block_on(Scratch::create(url))?;
    let store = PgStore::connect(&scratch.url, 4)?;
    let measured = (|| -> anyhow::Result<_> {
        rt.block_on(async {
            for i in 0..tasks {
                store
                    .create_task(NewTask {
                        subject: format!("bench task {i}"),
                        ..NewTask::default()
                    })
                    .await?;
            }
            anyhow::Ok(())
        })?;
        let workers = Workers::spawn(
            (0..procs)
                .map(|k| {
                    vec![
                        "pg-claim-worker".into(),
                        "--store".into(),
                        scratch.url.clone(),
                        "--name".into(),
                        format!("w{k}"),
                    ]
                })
                .collect(),
        )?;
        let (start, reports) = workers.go()?;
        let seconds = start.elapsed().as_secs_f64();
        let all = rt.block_on(store.tasks())?;
        Ok((seconds, reports, all))
    })();
    rt.block_on(scratch.drop_it())?;
    let (seconds, reports, all) = measured?;
    crate::claims::report("postgres", procs, &reports, &all, seconds, as_json)
}

/// One claiming process: connects, then claims until nothing is left.
pub fn claim_worker(url: &str, name: &AgentName) -> anyhow::Result<()> {
    let rt = runtime()?;
    let store = PgStore::connect(url, 1)?;
    // Connected before the start, so the race measures claims, not connection set-up.
    rt.block_on(store.tasks())?;
    ready_and_wait()?;
    let who = Claimant { name, role: None };
    let mine = rt.block_on(async {
        let mut mine = Vec::new();
        loop {
            match store.claim_next(who, LEASE).await {
                Ok(task) => mine.push(task.id),
                Err(e) if nothing_left(&e) => return anyhow::Ok(mine),
                Err(e) => return Err(e.into()),
            }
        }
    })?;
    println!("{}", serde_json::to_string(&mine)?);
    Ok(())
}

pub fn mailbox(url: &str, procs: usize, messages: usize, as_json: bool) -> anyhow::Result<()> {
    let rt = runtime()?;
    let scratch = rt.block_on(Scratch::create(url))?;
    let measured = (|| -> anyhow::Result<_> {
        let per_proc: Vec<usize> = (0..procs)
            .map(|k| messages / procs + usize::from(k < messages % procs))
            .collect();
        let workers = Workers::spawn(
            per_proc
                .iter()
                .enumerate()
                .map(|(k, count)| {
                    vec![
                        "pg-append-worker".into(),
                        "--store".into(),
                        scratch.url.clone(),
                        "--name".into(),
                        format!("w{k}"),
                        "--count".into(),
                        count.to_string(),
                    ]
                })
                .collect(),
        )?;
        // The reader follows in this process, woken by NOTIFY, while the workers append.
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let reader_url = scratch.url.clone();
        let reader = std::thread::spawn(
            move || -> anyhow::Result<(HashMap<String, usize>, Vec<f64>)> {
                let rt = runtime()?;
                rt.block_on(follow(&reader_url, messages, done_rx))
            },
        );
        let (start, _) = workers.go()?;
        let seconds = start.elapsed().as_secs_f64();
        let _ = done_tx.send(());
        let seen = reader
            .join()
            .map_err(|_| anyhow::anyhow!("the reader thread panicked"))??;
        Ok((seconds, seen))
    })();
    rt.block_on(scratch.drop_it())?;
    let (seconds, (ids, latencies_ms)) = measured?;
    let seen = Received {
        ids: &ids,
        torn: 0,
        latencies_ms,
    };
    crate::mailbox::report("postgres", procs, messages, None, seen, seconds, as_json);
    Ok(())
}

/// The reader: its inbox through its cursor, woken by NOTIFY; ids seen (with counts) and
/// append-to-read latencies.
async fn follow(
    url: &str,
    messages: usize,
    done: mpsc::Receiver<()>,
) -> anyhow::Result<(HashMap<String, usize>, Vec<f64>)> {
    let store = PgStore::connect(url, 2)?;
    let mut wakeups = Wakeups::listen(&store).await?;
    let me = AgentName::parse(READER)?;
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut latencies = Vec::new();
    let mut writers_done_at: Option<Instant> = None;
    loop {
        let batch = store.unread(&me, &me, 5000).await?;
        let now = unix_nanos();
        if let Some((last, _)) = batch.last() {
            store.mark_read(&me, &me, *last).await?;
        }
        let empty = batch.is_empty();
        for (_, m) in batch {
            if let Some(sent) = m.extra.get("sent_ns").and_then(|v| v.as_str()) {
                let sent: u128 = sent.parse().unwrap_or(now);
                latencies.push(now.saturating_sub(sent) as f64 / 1e6);
            }
            *ids.entry(m.id).or_default() += 1;
        }
        if writers_done_at.is_none() && done.try_recv().is_ok() {
            writers_done_at = Some(Instant::now());
        }
        let gave_up = writers_done_at.is_some_and(|t| t.elapsed() > Duration::from_secs(5));
        if writers_done_at.is_some() && (ids.len() >= messages || gave_up) {
            return Ok((ids, latencies));
        }
        if empty {
            wakeups.wait(Duration::from_millis(100)).await;
        }
    }
}

/// One appending process: `count` messages to the reader, each stamped with its send time.
pub fn append_worker(url: &str, name: &AgentName, count: usize) -> anyhow::Result<()> {
    let rt = runtime()?;
    let store = PgStore::connect(url, 1)?;
    rt.block_on(store.tasks())?;
    let reader = AgentName::parse(READER)?;
    ready_and_wait()?;
    rt.block_on(async {
        for seq in 0..count {
            let mut extra = serde_json::Map::new();
            extra.insert("seq".into(), json!(seq));
            extra.insert("sent_ns".into(), json!(unix_nanos().to_string()));
            store
                .send(Draft {
                    kind: MessageKind::StatusUpdate,
                    text: Some(format!("{name} message {seq}")),
                    extra,
                    ..Draft::new(name.clone(), reader.clone())
                })
                .await?;
        }
        anyhow::Ok(())
    })?;
    println!("done");
    Ok(())
}

pub fn wake(url: &str, waiters: usize, rounds: usize, as_json: bool) -> anyhow::Result<()> {
    let rt = runtime()?;
    let scratch = rt.block_on(Scratch::create(url))?;
    let measured = (|| -> anyhow::Result<Vec<f64>> {
        let names: Vec<String> = (0..waiters).map(|k| format!("w{k}")).collect();
        let workers = Workers::spawn(
            names
                .iter()
                .map(|name| {
                    vec![
                        "pg-wake-worker".into(),
                        "--store".into(),
                        scratch.url.clone(),
                        "--name".into(),
                        name.clone(),
                    ]
                })
                .collect(),
        )?;
        // Every worker said ready once it listens; the rounds run while `go` waits for them.
        let url = scratch.url.clone();
        let rounds_thread = std::thread::spawn(move || -> anyhow::Result<Vec<f64>> {
            let rt = runtime()?;
            rt.block_on(wake_rounds(&url, &names, rounds))
        });
        workers.go()?;
        rounds_thread
            .join()
            .map_err(|_| anyhow::anyhow!("the rounds thread panicked"))?
    })();
    rt.block_on(scratch.drop_it())?;
    let mut claim_ms = measured?;
    claim_ms.sort_by(f64::total_cmp);
    let report = json!({
        "store": "postgres",
        "waiters": waiters,
        "rounds": claim_ms.len(),
        "p50_ms": round3(percentile(&claim_ms, 0.50)),
        "p99_ms": round3(percentile(&claim_ms, 0.99)),
        "max_ms": round3(percentile(&claim_ms, 1.0)),
    });
    if as_json {
        println!("{report}");
    } else {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}

/// One task at a time, each after the waiters went idle again; the latency from just before
/// the task's insert to its claim (the claimer stamps the instant into the task's result).
/// Round 0 is a warm-up and not counted. Then a message to each waiter tells it to stop.
async fn wake_rounds(url: &str, names: &[String], rounds: usize) -> anyhow::Result<Vec<f64>> {
    let store = PgStore::connect(url, 2)?;
    let mut claim_ms = Vec::with_capacity(rounds);
    for round in 0..=rounds {
        // Long enough for every waiter's failed claim of the last round to be over.
        tokio::time::sleep(Duration::from_millis(40)).await;
        let created = unix_nanos();
        let task = store
            .create_task(NewTask {
                subject: format!("wake round {round}"),
                ..NewTask::default()
            })
            .await?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let claimed_at = loop {
            let t = store.task(task.id).await?;
            if let Some(at) = t.result.as_deref().and_then(|r| r.parse::<u128>().ok()) {
                break at;
            }
            if Instant::now() > deadline {
                bail!("round {round}: task {} unclaimed after 30s", task.id);
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        if round > 0 {
            claim_ms.push(claimed_at.saturating_sub(created) as f64 / 1e6);
        }
    }
    let from = AgentName::parse("bench")?;
    for name in names {
        store
            .send(Draft {
                text: Some("stop".into()),
                ..Draft::new(from.clone(), AgentName::parse(name)?)
            })
            .await?;
    }
    Ok(claim_ms)
}

/// One idle waiter: sleeps on NOTIFY, tries a claim when woken, finishes what it gets at once
/// with the claim's instant as its result; stops on a message to it.
pub fn wake_worker(url: &str, name: &AgentName) -> anyhow::Result<()> {
    let rt = runtime()?;
    rt.block_on(async {
        let store = PgStore::connect(url, 1)?;
        let mut wakeups = Wakeups::listen(&store).await?;
        store.tasks().await?;
        // Ready once listening; it does not wait for "go": the rounds start on their own.
        println!("ready");
        let who = Claimant { name, role: None };
        loop {
            match store.claim_next(who, LEASE).await {
                Ok(task) => {
                    let at = unix_nanos();
                    store.complete(task.id, name, Some(at.to_string())).await?;
                }
                Err(e) if nothing_left(&e) => {}
                Err(e) => return Err(e.into()),
            }
            // Several wakes at once are one: any message may be the stop for this waiter.
            if let Some(Wake::Inbox(_)) = wakeups.wait(Duration::from_secs(60)).await
                && !store.inbox(name).await?.is_empty()
            {
                println!("stopped");
                return anyhow::Ok(());
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_scratch_database_replaces_the_urls_own() {
        assert_eq!(
            with_database("postgres://crew@h:5432/team?sslmode=prefer", "x").unwrap(),
            "postgres://crew@h:5432/x?sslmode=prefer"
        );
        assert_eq!(
            with_database("postgres://crew@h", "x").unwrap(),
            "postgres://crew@h/x"
        );
    }
}
