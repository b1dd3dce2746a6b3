//! Snapshots of the whole screen and of every pane, from a fixed workspace at a fixed "now".

mod tui_support;

use crew::tui::event::Event;
use crew::tui::{Pane, update};
use tui_support::{draw, fixture_state, key};

#[test]
fn whole_layout_at_120x40() {
    let mut state = fixture_state();
    insta::assert_snapshot!(draw(&mut state, 120, 40));
}

#[test]
fn whole_layout_at_80x24_shows_one_pane_with_tabs() {
    let mut state = fixture_state();
    insta::assert_snapshot!(draw(&mut state, 80, 24));
}

#[test]
fn every_pane_alone() {
    for pane in [Pane::Lead, Pane::Teammates, Pane::Tasks, Pane::Mailboxes, Pane::Approvals] {
        let mut state = fixture_state();
        state.focus = pane;
        insta::assert_snapshot!(format!("pane_{}", pane.title()), draw(&mut state, 100, 24));
    }
}

#[test]
fn task_detail_and_an_inbox_switch() {
    let mut state = fixture_state();
    state.focus = Pane::Tasks;
    for k in ["down", "down", "enter"] {
        update(&mut state, Event::Key(key(k)));
    }
    insta::assert_snapshot!("task_detail", draw(&mut state, 100, 24));
    let mut state = fixture_state();
    state.focus = Pane::Mailboxes;
    update(&mut state, Event::Key(key("right")));
    insta::assert_snapshot!("mailbox_alice", draw(&mut state, 100, 24));
}

#[test]
fn help_overlay_lists_the_active_keymap() {
    let mut state = fixture_state();
    state.focus = Pane::Tasks;
    update(&mut state, Event::Key(key("?")));
    insta::assert_snapshot!(draw(&mut state, 120, 40));
}

#[test]
fn too_small_shows_a_message() {
    let mut state = fixture_state();
    insta::assert_snapshot!(draw(&mut state, 50, 10));
}
