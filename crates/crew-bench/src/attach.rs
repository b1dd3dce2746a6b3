//! `crew-bench attach`: how well `crew attach claude` captures Claude Code inbox messages that
//! their reader deletes at once. A watching mirror (as the command runs it) follows a scratch
//! team; the bench writes each message as Claude Code does (a temporary file renamed over the
//! inbox), empties the inbox again after `lifetime` ms, and counts what reached crew's log and
//! how long after the write (capture latency, p50/p99).

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use crew_team::claude_team::Mirror;

use crate::stats::{percentile, round3};

const TEAM: &str = "session-bench";

/// How long after a message was deleted it may still reach the log.
const GIVE_UP: Duration = Duration::from_millis(500);

pub fn run(messages: usize, lifetimes: &[u64], as_json: bool) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for &lifetime in lifetimes {
        let (captured, mut ms) = measure(messages, Duration::from_millis(lifetime))?;
        ms.sort_by(f64::total_cmp);
        let (p50, p99) = if ms.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            (percentile(&ms, 0.50), percentile(&ms, 0.99))
        };
        if !as_json {
            println!(
                "inbox versions living {lifetime} ms: {captured}/{messages} captured, latency p50 {p50:.1} ms, p99 {p99:.1} ms"
            );
        }
        rows.push(
            json!({"lifetime_ms": lifetime, "messages": messages, "captured": captured,
            "p50_ms": round3(p50), "p99_ms": round3(p99)}),
        );
    }
    if as_json {
        println!("{}", json!({ "runs": rows }));
    }
    Ok(())
}

fn measure(messages: usize, lifetime: Duration) -> anyhow::Result<(usize, Vec<f64>)> {
    let dir = tempfile::tempdir().context("creating a scratch folder")?;
    let home = dir.path().join(".claude");
    let team = home.join("teams").join(TEAM);
    fs::create_dir_all(team.join("inboxes"))?;
    fs::create_dir_all(home.join("tasks").join(TEAM))?;
    fs::write(
        team.join("config.json"),
        json!({"name": TEAM, "leadAgentId": format!("team-lead@{TEAM}"), "members": [
            {"name": "team-lead", "agentId": format!("team-lead@{TEAM}")},
            {"name": "worker1", "agentId": format!("worker1@{TEAM}"), "isActive": true}]})
        .to_string(),
    )?;
    let root = dir.path().join("mirror");
    let mut mirror = Mirror::open(&home, TEAM, &root)?;
    mirror.sync()?;
    let _watcher = mirror.watch()?;
    let inbox = team.join("inboxes/team-lead.json");
    let log = root.join(".mailboxes/team-lead.jsonl");
    let mut latencies = Vec::new();
    for i in 0..messages {
        let id = format!("bench-{i:06}");
        let body = json!([{"from": "worker1", "text": format!("message {i}"),
            "timestamp": "2026-12-01T10:46:55.409Z", "msgV": 1, "msg_id": id,
            "type": "message", "read": false}]);
        let written = Instant::now();
        replace(&inbox, &body.to_string())?;
        std::thread::sleep(lifetime);
        replace(&inbox, "[]")?;
        // Captured once it is in crew's log; a version missed is gone for good, so the wait
        // is short.
        let until = Instant::now() + GIVE_UP;
        while Instant::now() < until {
            if fs::read_to_string(&log).is_ok_and(|t| t.contains(&id)) {
                latencies.push(written.elapsed().as_secs_f64() * 1000.0);
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok((latencies.len(), latencies))
}

/// As Claude Code writes an inbox: a temporary file renamed over it.
fn replace(inbox: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = inbox.with_extension("json.tmp.bench");
    fs::write(&tmp, text)?;
    fs::rename(&tmp, inbox)?;
    Ok(())
}
