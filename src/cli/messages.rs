//! `crew send`, `crew interrupt`, `crew inbox`, `crew requests`, `crew respond`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::args::{Answer, InboxArgs, RequestsArgs, RespondArgs, SendArgs};
use crate::cli::output;
use crate::cli::project::Project;
use crew_store::{AgentName, DirWatcher, Draft, Entry, Message, RequestState};

pub fn send(project: &Project, args: SendArgs) -> anyhow::Result<()> {
    let message = project
        .workspace
        .mailboxes()
        .send(&project.roster, draft_of(&args))?;
    print_sent(&message, &args)
}

/// What `crew send` asks to append.
pub(crate) fn draft_of(args: &SendArgs) -> Draft {
    let mut extra = serde_json::Map::new();
    if let Some(timeout) = args.timeout {
        extra.insert("timeout_secs".into(), json!(timeout));
    }
    Draft {
        from: args.from.clone(),
        to: args.to.clone(),
        kind: args.kind.clone(),
        text: Some(args.text.clone()),
        request: args.request,
        extra,
    }
}

pub(crate) fn print_sent(message: &Message, args: &SendArgs) -> anyhow::Result<()> {
    if args.json {
        return output::json(message);
    }
    match &message.request_id {
        Some(request_id) => println!("{request_id}"),
        None => println!("{}", message.id),
    }
    Ok(())
}

/// `crew interrupt NAME`: the request goes through NAME's inbox; its worker acts on it.
pub fn interrupt(project: &Project, name: &AgentName) -> anyhow::Result<()> {
    crew_team::run::interrupt::interrupt(&project.workspace, &project.roster, name)?;
    println!("asked {name} to stop; it keeps its task and waits for your next message");
    Ok(())
}

pub fn inbox(project: &Project, args: InboxArgs) -> anyhow::Result<()> {
    project
        .roster
        .check("inbox owner", &args.name)
        .map_err(crew_store::StoreError::from)?;
    let boxes = project.workspace.mailboxes();
    let advance = !args.peek;
    let mut offset = if args.all {
        0
    } else {
        boxes.cursor(&args.name)?
    };
    let batch = boxes.read_from(&args.name, offset)?;
    if args.json && !args.follow {
        output::json(&json!({
            "inbox": args.name,
            "messages": batch.entries.iter().map(entry_json).collect::<Vec<_>>(),
        }))?;
    } else {
        for entry in &batch.entries {
            print_entry(entry, args.json)?;
        }
    }
    offset = batch.end;
    if advance {
        boxes.set_cursor(&args.name, offset)?;
    }
    if !args.follow {
        return Ok(());
    }
    // Woken by file-system events; the timeout is only a safety net for missed events.
    let watcher = DirWatcher::new(&[boxes.dir()])?;
    loop {
        watcher.wait(Duration::from_secs(1));
        let batch = boxes.read_from(&args.name, offset)?;
        if batch.end == offset {
            continue;
        }
        for entry in &batch.entries {
            print_entry(entry, args.json)?;
        }
        offset = batch.end;
        if advance {
            boxes.set_cursor(&args.name, offset)?;
        }
    }
}

fn entry_json(entry: &Entry) -> Value {
    match entry {
        Entry::Message { message, .. } => json!(message),
        Entry::Broken { offset, raw, error } => {
            json!({ "broken": true, "offset": offset, "raw": raw, "error": error })
        }
    }
}

fn print_entry(entry: &Entry, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(&entry_json(entry))?);
        return Ok(());
    }
    match entry {
        Entry::Message { message, .. } => println!("{}", message_line(message)),
        Entry::Broken { error, .. } => {
            println!("!! unreadable line: {}", output::one_line(error))
        }
    }
    Ok(())
}

pub(crate) fn message_line(m: &Message) -> String {
    let kind = if m.kind.is_known() {
        m.kind.to_string()
    } else {
        format!("{} (unknown type)", output::one_line(m.kind.as_str()))
    };
    let request = m
        .request_id
        .as_deref()
        .map(|id| match m.approve {
            Some(true) => format!(" [{id}: approved]"),
            Some(false) => format!(" [{id}: rejected]"),
            None => format!(" [{id}]"),
        })
        .unwrap_or_default();
    let text = output::one_line(m.text.as_deref().unwrap_or(""));
    let extra = if m.kind.is_known() || m.extra.is_empty() {
        String::new()
    } else {
        format!(
            " {}",
            output::one_line(&Value::Object(m.extra.clone()).to_string())
        )
    };
    format!(
        "{} {} -> {} {kind}{request}: {text}{extra}",
        m.ts, m.from, m.to
    )
}

pub fn requests(project: &Project, args: RequestsArgs) -> anyhow::Result<()> {
    let all = project
        .workspace
        .mailboxes()
        .requests(project.config.request_timeout())?;
    print_requests(all, &args)
}

/// The requests `args` asks for, of `all`.
pub(crate) fn print_requests(
    all: Vec<crew_store::RequestInfo>,
    args: &RequestsArgs,
) -> anyhow::Result<()> {
    let shown: Vec<_> = all
        .into_iter()
        .filter(|r| !args.pending || r.state == RequestState::Pending)
        .collect();
    if args.json {
        return output::json(&json!({ "requests": shown }));
    }
    if shown.is_empty() {
        println!("no requests");
    }
    for r in &shown {
        let answered = r
            .answered_by
            .as_deref()
            .map(|by| format!(" by {by}"))
            .unwrap_or_default();
        let note = r
            .note
            .as_deref()
            .map(|n| format!(" ({})", output::one_line(n)))
            .unwrap_or_default();
        println!(
            "{} {:<8}{answered}{note} {} {} -> {} {}: {}",
            r.request_id,
            r.state.as_str(),
            output::age(r.age_secs),
            r.from,
            r.to,
            r.kind,
            output::one_line(r.text.as_deref().unwrap_or(""))
        );
    }
    Ok(())
}

pub fn respond(project: &Project, args: RespondArgs) -> anyhow::Result<()> {
    let approve = matches!(args.answer, Answer::Approve);
    let answer = project.workspace.mailboxes().respond(
        &project.roster,
        &args.request_id,
        &args.who,
        approve,
        args.note.clone(),
        project.config.request_timeout(),
    )?;
    print_answer(&answer, &args)
}

pub(crate) fn print_answer(answer: &Message, args: &RespondArgs) -> anyhow::Result<()> {
    if args.json {
        return output::json(answer);
    }
    println!(
        "{} {} -> {} ({})",
        if matches!(args.answer, Answer::Approve) {
            "approved"
        } else {
            "rejected"
        },
        args.request_id,
        answer.to,
        answer.kind
    );
    Ok(())
}
