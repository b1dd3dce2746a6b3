//! The task DAG as text: layers, and for each task whether it is done, running, claimable or
//! blocked (and by what).

use std::fmt::Write;

use serde_json::{Value, json};

use crate::cli::output;
use crew_protocol::joined;
use crew_store::dag::Graph;
use crew_store::{AgentName, Status, Task, TaskId};

/// One word (and detail) for where a task stands.
pub fn state(graph: &Graph<'_>, task: &Task) -> (&'static str, String) {
    match task.status {
        Status::Completed => ("done", String::new()),
        Status::Failed => (
            "failed",
            task.result
                .as_deref()
                .and_then(|r| r.lines().find(|l| !l.trim().is_empty()))
                .unwrap_or_default()
                .to_string(),
        ),
        Status::InProgress => ("running", owner(task)),
        Status::Review => ("review", owner(task)),
        Status::Pending if graph.is_claimable(task) => ("claimable", String::new()),
        Status::Pending => {
            let open = graph.open_blockers(task);
            let assigned = task.owner.as_deref().map(|o| format!("assigned to {o}"));
            match (open.is_empty(), assigned) {
                (true, Some(assigned)) => ("assigned", assigned),
                (true, None) => ("pending", String::new()),
                (false, assigned) => {
                    let by = format!("by {}", joined(&open, ", "));
                    let detail = assigned.map_or(by.clone(), |a| format!("{by}; {a}"));
                    ("blocked", detail)
                }
            }
        }
    }
}

/// Who holds the task; empty when nobody does.
fn owner(task: &Task) -> String {
    task.owner
        .as_ref()
        .map(AgentName::to_string)
        .unwrap_or_default()
}

fn glyph(word: &str) -> char {
    match word {
        "done" => '✓',
        "running" => '▶',
        "claimable" => '○',
        "assigned" => '→',
        "failed" => '✗',
        _ => '⧗',
    }
}

pub fn task_line(graph: &Graph<'_>, task: &Task) -> String {
    let (word, detail) = state(graph, task);
    let role = task
        .role
        .as_deref()
        .map(|r| format!(" [{r}]"))
        .unwrap_or_default();
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    };
    format!(
        "{} {:<9} {:<10}{} {}{role}",
        glyph(word),
        task.id,
        word,
        output::one_line(&detail),
        output::one_line(&task.subject)
    )
}

pub fn graph(graph: &Graph<'_>) -> String {
    let layers = graph.layers();
    let mut out = String::new();
    if graph.tasks().is_empty() {
        out.push_str("no tasks yet (add one with `crew task add SUBJECT`)\n");
        return out;
    }
    for (depth, ids) in layers.layers.iter().enumerate() {
        let _ = writeln!(out, "layer {depth}");
        for &id in ids {
            if let Some(task) = graph.get(id) {
                let _ = writeln!(out, "  {}", task_line(graph, task));
            }
        }
    }
    if !layers.cyclic.is_empty() {
        let _ = writeln!(out, "in a cycle (fix the blockedBy of these files by hand)");
        for &id in &layers.cyclic {
            if let Some(task) = graph.get(id) {
                let _ = writeln!(out, "  {}", task_line(graph, task));
            }
        }
    }
    out
}

pub fn graph_json(graph: &Graph<'_>, problems: &[Value]) -> Value {
    let layers = graph.layers();
    let entry = |&id: &TaskId| {
        graph.get(id).map(|task| {
            let (word, detail) = state(graph, task);
            json!({
                "id": task.id,
                "subject": task.subject,
                "status": task.status,
                "owner": task.owner,
                "state": word,
                "detail": detail,
                "blockedBy": task.blocked_by,
                "openBlockers": graph.open_blockers(task),
            })
        })
    };
    json!({
        "layers": layers.layers.iter().map(|ids| ids.iter().filter_map(entry).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "cyclic": layers.cyclic.iter().filter_map(entry).collect::<Vec<_>>(),
        "problems": problems,
    })
}

pub fn task_detail(graph: &Graph<'_>, task: &Task) -> String {
    let (word, detail) = state(graph, task);
    let mut out = String::new();
    let _ = writeln!(out, "{}  {}", task.id, output::one_line(&task.subject));
    let _ = writeln!(
        out,
        "status:     {} ({word}{})",
        task.status,
        if detail.is_empty() {
            String::new()
        } else {
            format!(", {}", output::one_line(&detail))
        }
    );
    let _ = writeln!(out, "owner:      {}", task.owner.as_deref().unwrap_or("-"));
    if let Some(role) = &task.role {
        let _ = writeln!(out, "role:       {role}");
    }
    let blockers = if task.blocked_by.is_empty() {
        "-".to_string()
    } else {
        joined(&task.blocked_by, ", ")
    };
    let _ = writeln!(out, "blocked by: {blockers}");
    let _ = writeln!(out, "created:    {}", task.created_at);
    let _ = writeln!(out, "updated:    {}", task.updated_at);
    if let Some(worktree) = &task.worktree {
        let _ = writeln!(out, "worktree:   {}", output::one_line(worktree));
    }
    if !task.description.is_empty() {
        let _ = writeln!(out, "\n{}", output::block(&task.description));
    }
    if let Some(result) = &task.result {
        let _ = writeln!(out, "\nresult:\n{}", output::block(result));
    }
    out
}
