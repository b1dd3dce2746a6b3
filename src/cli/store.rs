//! `crew store migrate URL | status URL`: the team store on a PostgreSQL server (issue #24;
//! crew's team still runs on the file store). Both try the server once first, so a wrong or
//! unreachable URL is said at once, naming the server, not after a minute of retries.

use std::cmp::Ordering;

use anyhow::Context;

use crate::cli::args::StoreCommand;
use crew_store_pg::{PgStore, SCHEMA_VERSION};

pub fn run(cmd: StoreCommand) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the store client")?;
    runtime.block_on(async {
        match cmd {
            StoreCommand::Migrate { url } => migrate(&url).await,
            StoreCommand::Status { url } => status(&url).await,
        }
    })
}

/// The store at `url`, once it answered.
async fn reach(url: &str) -> anyhow::Result<PgStore> {
    // One connection is all a command needs.
    let store = PgStore::connect(url, 1)?;
    store.reach().await?;
    Ok(store)
}

async fn migrate(url: &str) -> anyhow::Result<()> {
    let store = reach(url).await?;
    let found = store.migrate().await?;
    if found == SCHEMA_VERSION {
        println!("schema version {SCHEMA_VERSION}: already current");
    } else {
        println!("schema version {SCHEMA_VERSION} (migrated from {found})");
    }
    Ok(())
}

async fn status(url: &str) -> anyhow::Result<()> {
    let status = reach(url).await?.status().await?;
    let note = match (status.version, status.version.cmp(&SCHEMA_VERSION)) {
        (0, _) => " (never migrated: crew store migrate URL)",
        (_, Ordering::Less) => " (older than this crew's: crew store migrate URL)",
        (_, Ordering::Greater) => " (newer than this crew's: upgrade crew)",
        (_, Ordering::Equal) => "",
    };
    println!("schema version: {}{note}", status.version);
    println!("this crew's schema version: {SCHEMA_VERSION}");
    println!("tasks: {}", status.tasks);
    println!("messages: {}", status.messages);
    Ok(())
}
