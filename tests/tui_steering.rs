//! Steering the team from the screen with a real `crew worker` behind it: restarting a dead
//! teammate, then asking it to shut down (the rest of the steering tests are crew-tui's).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_store::{AgentState, AgentStatus, Workspace};
use crew_test_support::wait::poll;
use crew_tui_test_support::{Harness, inbox, workspace};

#[test]
fn restart_a_dead_teammate_then_ask_it_to_shut_down() {
    let dir = workspace();
    // The restarted worker needs a model: the simulator's echo.
    let echo = crew_config::InitModel {
        provider: "scripted".into(),
        model: None,
        base_url: None,
    };
    let models = crew_config::InitModels {
        lead: Some(echo.clone()),
        teammates: Some(echo),
    };
    std::fs::write(
        dir.path().join("crew.toml"),
        crew_config::init_template("web", "main", &models),
    )
    .unwrap();
    let ws = Workspace::new(dir.path());
    let mut dead = AgentStatus::new(&"carol".parse().unwrap(), AgentState::Dead);
    dead.pid = 1;
    ws.agents().write(&dead).unwrap();
    let mut h = Harness::new(dir.path());
    h.state.worker_exe = env!("CARGO_BIN_EXE_crew").into();
    h.press(&["esc", "2", "down", "down"]);
    assert_eq!(h.state.selected_teammate().as_deref(), Some("carol"));

    // Asking a dead teammate to shut down makes no sense: said so, nothing sent.
    h.press(&["S"]);
    assert_eq!(h.status(), "carol is not running (DEAD)");
    assert!(h.state.overlay.is_none());

    h.press(&["R"]);
    assert!(
        h.status().starts_with("restarted carol (pid "),
        "{}",
        h.status()
    );
    let running = poll("carol to run again", || {
        let s = ws.agents().read(&"carol".parse().unwrap()).unwrap()?;
        (s.state == AgentState::Idle && s.pid != 1).then_some(s)
    });
    h.changed(&[".crew/agents/carol.json"]);
    h.press(&["R"]);
    assert_eq!(
        h.status(),
        "carol is running (IDLE); ask it to shut down first (S)"
    );

    h.press(&["S"]);
    assert!(h.state.overlay.is_some(), "asks first");
    h.press(&["y"]);
    let asked = inbox(dir.path(), "carol");
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].from.as_str(), asked[0].kind.as_str()),
        ("user", "shutdown_request")
    );
    let request_id = asked[0].request_id.clone().unwrap();
    let stopped = poll("carol to shut down", || {
        let s = ws.agents().read(&"carol".parse().unwrap()).unwrap()?;
        (s.state == AgentState::Shutdown).then_some(s)
    });
    assert_eq!(stopped.pid, running.pid);
    let answer = inbox(dir.path(), "user")
        .into_iter()
        .find(|m| m.request_id.as_deref() == Some(&request_id))
        .unwrap();
    assert_eq!(
        (answer.kind.as_str(), answer.approve),
        ("shutdown_response", Some(true))
    );
}
