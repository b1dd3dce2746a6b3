//! An agent's memories on the screen: `M` on a teammate (alt-m in the lead's pane) lists its
//! memories and the team's, read-only, stale ones marked; enter opens a body, esc goes back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_tui::event::Event;
use crew_tui::state::Overlay;
use crew_tui::{Pane, update};
use crew_tui_test_support::{draw, fixture_changes, key, screen_text, state_at};

fn memory(
    root: &std::path::Path,
    scope: &str,
    name: &str,
    kind: &str,
    description: &str,
    body: &str,
) {
    let dir = root.join(".crew/memory").join(scope);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.md")),
        format!("---\nname: {name}\ndescription: {description}\ntype: {kind}\n---\n\n{body}\n"),
    )
    .unwrap();
}

#[test]
fn a_teammates_memories_list_and_one_body() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("web");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/parser.rs"), "").unwrap();
    memory(
        &root,
        "alice",
        "parser-home",
        "reference",
        "where the parser lives",
        "In `src/parser.rs`.",
    );
    memory(
        &root,
        "alice",
        "old-lexer",
        "project",
        "the lexer we replaced",
        "It was in `src/lexer.rs`.",
    );
    memory(
        &root,
        "team",
        "freeze",
        "project",
        "the release freeze",
        "Freeze on Friday.\nNo merges after noon.",
    );
    std::fs::write(
        root.join(".crew/memory/alice/bad.md"),
        "---\nname: bad\n---\n",
    )
    .unwrap();
    // A memory in bob's folder is not alice's.
    memory(&root, "bob", "secret", "user", "bob's own", "not shown");

    let mut state = state_at(&root);
    update(&mut state, Event::Data(fixture_changes()));
    state.focus = Pane::Teammates;
    update(&mut state, Event::Key(key("M")));
    let Some(Overlay::Memories(view)) = &state.overlay else {
        panic!("the memories dialog is open");
    };
    assert_eq!(view.agent, "alice");
    let text = screen_text(&mut state, 100, 24);
    assert!(text.contains("STALE: src/lexer.rs"), "{text}");
    assert!(!text.contains("bob's own"));
    // The header shows the root: a fixed one keeps the snapshots stable.
    state.root = "/repo/web".into();
    insta::assert_snapshot!("memories_list", draw(&mut state, 100, 24));

    for k in ["down", "down", "enter"] {
        update(&mut state, Event::Key(key(k)));
    }
    insta::assert_snapshot!("memories_body", draw(&mut state, 100, 24));
    assert!(screen_text(&mut state, 100, 24).contains("No merges after noon."));

    // esc: back to the list, then closed; q never quits from inside the dialog.
    update(&mut state, Event::Key(key("esc")));
    assert!(matches!(&state.overlay, Some(Overlay::Memories(v)) if !v.open));
    update(&mut state, Event::Key(key("q")));
    assert!(state.overlay.is_none());
    assert!(!state.quit);

    // From the lead's pane: the lead's (none) and the team's.
    state.root = root.clone();
    state.focus = Pane::Lead;
    update(&mut state, Event::Key(key("alt-m")));
    let Some(Overlay::Memories(view)) = &state.overlay else {
        panic!("the lead's memories are open");
    };
    assert_eq!(view.agent, "lead");
    assert_eq!(view.entries.len(), 1);
}
