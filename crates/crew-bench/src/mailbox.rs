//! `crew-bench mailbox`: N processes append M messages to one inbox while a reader follows it
//! with file-system events; latency is from append to the reader seeing the message. Flat out
//! by default (a burst, where latency is mostly queueing), or paced with `--rate`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::json;

use crew_store::{AgentName, DirWatcher, Draft, Entry, Roster, Workspace};

use crate::proc::{Workers, ready_and_wait};
use crate::stats::{percentile, round3};
use crew_store::MessageKind;

const READER: &str = "reader";

pub(crate) fn unix_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

struct Seen {
    ids: HashMap<String, usize>,
    torn: usize,
    latencies_ms: Vec<f64>,
}

pub fn run(procs: usize, messages: usize, rate: Option<u32>, as_json: bool) -> anyhow::Result<()> {
    // Paced: the processes take turns, so all together send one message every 1/rate s.
    let spacing_us = rate.filter(|r| *r > 0).map(|r| 1_000_000 / u64::from(r));
    let dir = tempfile::tempdir().context("creating a scratch folder")?;
    let boxes = Workspace::new(dir.path()).mailboxes();
    let watcher = DirWatcher::new(&[boxes.dir()])?;
    let per_proc: Vec<usize> = (0..procs)
        .map(|k| messages / procs + usize::from(k < messages % procs))
        .collect();
    let workers = Workers::spawn(
        per_proc
            .iter()
            .enumerate()
            .map(|(k, count)| {
                let mut args = vec![
                    "append-worker".into(),
                    "--dir".into(),
                    dir.path().display().to_string(),
                    "--name".into(),
                    format!("w{k}"),
                    "--count".into(),
                    count.to_string(),
                ];
                if let Some(spacing) = spacing_us {
                    args.extend([
                        "--every-us".into(),
                        (spacing * procs as u64).to_string(),
                        "--offset-us".into(),
                        (spacing * k as u64).to_string(),
                    ]);
                }
                args
            })
            .collect(),
    )?;

    // The reader follows in this process while the workers append.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let reader_boxes = boxes.clone();
    let reader_name = AgentName::parse(READER)?;
    let reader = std::thread::spawn(move || -> anyhow::Result<Seen> {
        let mut seen = Seen {
            ids: HashMap::new(),
            torn: 0,
            latencies_ms: Vec::new(),
        };
        let mut offset = 0;
        let mut writers_done_at: Option<Instant> = None;
        loop {
            watcher.wait(Duration::from_millis(100));
            let batch = reader_boxes.read_from(&reader_name, offset)?;
            let now = unix_nanos();
            offset = batch.end;
            for entry in batch.entries {
                match entry {
                    Entry::Message { message, .. } => {
                        if let Some(sent) = message.extra.get("sent_ns").and_then(|v| v.as_str()) {
                            let sent: u128 = sent.parse().unwrap_or(now);
                            seen.latencies_ms
                                .push(now.saturating_sub(sent) as f64 / 1e6);
                        }
                        *seen.ids.entry(message.id).or_default() += 1;
                    }
                    Entry::Broken { .. } => seen.torn += 1,
                }
            }
            if writers_done_at.is_none() && done_rx.try_recv().is_ok() {
                writers_done_at = Some(Instant::now());
            }
            let complete = seen.ids.len() + seen.torn >= messages;
            let gave_up = writers_done_at.is_some_and(|t| t.elapsed() > Duration::from_secs(5));
            if writers_done_at.is_some() && (complete || gave_up) {
                return Ok(seen);
            }
        }
    });
    let (start, _) = workers.go()?;
    let seconds = start.elapsed().as_secs_f64();
    let _ = done_tx.send(());
    let seen = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reader thread panicked"))??;

    let figures = Received {
        ids: &seen.ids,
        torn: seen.torn,
        latencies_ms: seen.latencies_ms,
    };
    report("files", procs, messages, rate, figures, seconds, as_json);
    Ok(())
}

/// What a following reader saw: each id with how often, torn lines, latencies.
pub(crate) struct Received<'a> {
    pub ids: &'a HashMap<String, usize>,
    pub torn: usize,
    pub latencies_ms: Vec<f64>,
}

/// Prints the figures of one run: loss, duplicates, rate, latency.
pub(crate) fn report(
    store: &str,
    procs: usize,
    messages: usize,
    rate: Option<u32>,
    seen: Received<'_>,
    seconds: f64,
    as_json: bool,
) {
    let received: usize = seen.ids.values().sum();
    let duplicated: usize = seen.ids.values().map(|n| n - 1).sum();
    let lost = messages.saturating_sub(seen.ids.len());
    let mut latencies = seen.latencies_ms;
    latencies.sort_by(f64::total_cmp);
    let report = json!({
        "store": store,
        "procs": procs,
        "messages": messages,
        "received": received,
        "lost": lost,
        "duplicated": duplicated,
        "torn": seen.torn,
        "rate": rate,
        "appends_per_sec": round3(messages as f64 / seconds),
        "latency_ms": {
            "p50": round3(percentile(&latencies, 0.50)),
            "p99": round3(percentile(&latencies, 0.99)),
        },
    });
    if as_json {
        println!("{report}");
    } else {
        println!(
            "{procs} processes appended {messages} messages ({store}) at {:.0}/s; received {received}, lost {lost}, duplicated {duplicated}, torn {}; latency p50 {:.3} ms, p99 {:.3} ms",
            messages as f64 / seconds,
            seen.torn,
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99)
        );
    }
}

/// One appending process: `count` messages to the reader's inbox, each stamped with its send time.
pub fn worker(
    dir: &Path,
    name: &AgentName,
    count: usize,
    every_us: Option<u64>,
    offset_us: u64,
) -> anyhow::Result<()> {
    let boxes = Workspace::new(dir).mailboxes();
    let reader = AgentName::parse(READER)?;
    let roster = Roster::new([name.clone(), reader.clone()]);
    ready_and_wait()?;
    let start = Instant::now();
    for seq in 0..count {
        if let Some(every) = every_us {
            let due = start + Duration::from_micros(offset_us + every * seq as u64);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        let mut extra = serde_json::Map::new();
        extra.insert("seq".into(), json!(seq));
        extra.insert("sent_ns".into(), json!(unix_nanos().to_string()));
        boxes.send(
            &roster,
            Draft {
                from: name.clone(),
                to: reader.clone(),
                kind: MessageKind::StatusUpdate,
                text: Some(format!("{name} message {seq}")),
                request: false,
                extra,
            },
        )?;
    }
    println!("done");
    Ok(())
}
