//! The screen's feed from a team kept in PostgreSQL (a throwaway cluster; skipped, saying why,
//! without the server binaries): everything first, then only what changed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_config::{TeamConfig, init_template};
use crew_store::{Draft, NewTask, USER};
use crew_store_pg::PgStore;
use crew_tui::data::Change;
use crew_tui::store_feed::StoreFeed;

fn kinds(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .map(|c| match c {
            Change::Config(_) => "config".to_string(),
            Change::AllTasks(tasks, _) => format!("tasks {}", tasks.len()),
            Change::Inbox { name, entries, .. } => format!("inbox {name} {}", entries.len()),
            Change::Agent(name, _) => format!("agent {name}"),
            Change::Standing(_) => "standing".to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn the_feed_tells_the_whole_team_first_then_only_what_changed() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = PgStore::connect(&cluster.url(), 2).unwrap();
    let toml = init_template("web", "main", &Default::default());
    let config = TeamConfig::parse(std::path::Path::new("crew.toml"), &toml).unwrap();
    runtime.block_on(async {
        store.migrate().await.unwrap();
        let mut feed = StoreFeed::default();
        let before = feed.changes(&store).await.unwrap();
        assert_eq!(kinds(&before), ["config"], "not published yet: said so");
        store
            .publish_team(&toml, &config.roster(), config.limits)
            .await
            .unwrap();
        let lead = config.lead_name().clone();
        store
            .send(Draft {
                text: Some("the goal".into()),
                ..Draft::new(USER, lead.clone())
            })
            .await
            .unwrap();
        let first = feed.changes(&store).await.unwrap();
        assert_eq!(
            kinds(&first),
            ["config", "tasks 0", &format!("inbox {lead} 1"), "standing"]
        );
        assert!(
            feed.changes(&store).await.unwrap().is_empty(),
            "nothing changed"
        );
        store
            .create_task(NewTask {
                subject: "write it".into(),
                ..NewTask::default()
            })
            .await
            .unwrap();
        store
            .send(Draft {
                text: Some("and test it".into()),
                ..Draft::new(USER, lead.clone())
            })
            .await
            .unwrap();
        let next = feed.changes(&store).await.unwrap();
        assert_eq!(kinds(&next), ["tasks 1", &format!("inbox {lead} 1")]);
        let Change::Inbox { entries, .. } = &next[1] else {
            unreachable!()
        };
        let crew_store::Entry::Message { message, .. } = &entries[0] else {
            panic!("{entries:?}")
        };
        assert_eq!(message.text.as_deref(), Some("and test it"));

        // The store failing a look (here: a database that is not there, which fails at once):
        // the problem shows, and goes once it answers again.
        let gone = PgStore::connect(&cluster.url().replace("/postgres", "/no_such_db"), 1).unwrap();
        assert!(feed.changes(&gone).await.is_err());
        let back = feed.changes(&store).await.unwrap();
        assert!(
            matches!(&back[..], [Change::AllTasks(tasks, problems)] if tasks.len() == 1 && problems.is_empty()),
            "{}",
            kinds(&back).join(", ")
        );
    });
}
