//! Themes and keymaps: every shipped one parses cleanly; bad user files give warnings naming
//! file and line and fall back to what they inherit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::fs;

use crew_tui::keymap::{Lookup, Mode};
use crew_tui::keys::parse_sequence;
use crew_tui::{Keymap, Theme};

#[test]
fn every_shipped_theme_and_keymap_parses_without_warnings() {
    for (name, _) in crew_tui::theme::BUILTIN {
        let (theme, warnings) = Theme::load_from(name, None);
        assert!(warnings.is_empty(), "theme {name}: {warnings:?}");
        assert_eq!(theme.name, *name);
    }
    for (name, _) in crew_tui::keymap::BUILTIN {
        let (keymap, warnings) = Keymap::load_from(name, None);
        assert!(warnings.is_empty(), "keymap {name}: {warnings:?}");
        assert!(!keymap.bindings(Mode::Approvals).is_empty());
    }
    let light = Theme::load_from("light", None).0;
    let dark = Theme::load_from("default", None).0;
    assert_ne!(light.style("text"), dark.style("text"), "light overrides");
    assert_eq!(
        light.style("badge.work"),
        dark.style("badge.work"),
        "light inherits"
    );
}

fn config_dir_with(kind: &str, name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join(kind)).unwrap();
    fs::write(dir.path().join(kind).join(format!("{name}.toml")), text).unwrap();
    dir
}

#[test]
fn a_user_theme_overrides_and_bad_entries_are_named_by_file_and_line() {
    let dir = config_dir_with(
        "themes",
        "mine",
        "inherits = \"default\"\n[styles]\ntext = \"#ff0000\"\n\"badge.work\" = \"no-such-colour\"\nsparkle = \"red\"\n",
    );
    let (theme, warnings) = Theme::load_from("mine", Some(&dir.path().to_path_buf()));
    let texts: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 2, "{texts:?}");
    assert!(
        texts[0].contains("mine.toml:4:") && texts[0].contains("no-such-colour"),
        "{texts:?}"
    );
    assert!(
        texts[1].contains("mine.toml:5:") && texts[1].contains("sparkle"),
        "{texts:?}"
    );
    assert_eq!(
        theme.style("text").fg,
        Some(ratatui::style::Color::Rgb(255, 0, 0))
    );
    let default = Theme::load_from("default", None).0;
    assert_eq!(
        theme.style("badge.work"),
        default.style("badge.work"),
        "bad entry: inherited"
    );
}

#[test]
fn a_theme_that_does_not_parse_gives_its_line_and_the_defaults() {
    let dir = config_dir_with("themes", "broken", "[styles]\ntext = \"red\"\ntitle = {\n");
    let (theme, warnings) = Theme::load_from("broken", Some(&dir.path().to_path_buf()));
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].to_string().contains("broken.toml:3"),
        "{}",
        warnings[0]
    );
    assert_eq!(theme.style("text"), Theme::builtin_default().style("text"));
    let (_, warnings) = Theme::load_from("nope", None);
    assert!(warnings[0].to_string().contains("no such theme"));
}

#[test]
fn a_user_file_named_like_a_builtin_overrides_it_and_may_inherit_it() {
    let dir = config_dir_with(
        "keymaps",
        "default",
        "inherits = \"default\"\n[approvals]\n\"y\" = \"approve\"\n",
    );
    let (keymap, warnings) = Keymap::load_from("default", Some(&dir.path().to_path_buf()));
    assert!(warnings.is_empty(), "{warnings:?}");
    let y = parse_sequence("y").unwrap();
    let a = parse_sequence("a").unwrap();
    assert!(matches!(
        keymap.lookup(Mode::Approvals, &y),
        Lookup::Action(_)
    ));
    assert!(
        matches!(keymap.lookup(Mode::Approvals, &a), Lookup::Action(_)),
        "inherited"
    );
}

#[test]
fn bad_keymap_entries_and_conflicts_are_reported() {
    let dir = config_dir_with(
        "keymaps",
        "bad",
        "inherits = \"default\"\n[tasks]\n\"ctrl-nope\" = \"add_task\"\n\"x\" = \"fly\"\n\"g\" = \"top\"\n\"g g\" = \"bottom\"\n\"A\" = \"release\"\n\"shift-a\" = \"add_task\"\n",
    );
    let (keymap, warnings) = Keymap::load_from("bad", Some(&dir.path().to_path_buf()));
    let texts: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("bad.toml:3:") && t.contains("nope")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("bad.toml:4:") && t.contains("fly")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t.contains("bound twice")), "{texts:?}");
    assert!(
        texts
            .iter()
            .any(|t| t.contains("\"g\" (top) hides \"g g\" (bottom)")),
        "{texts:?}"
    );
    let g = parse_sequence("g").unwrap();
    assert!(matches!(keymap.lookup(Mode::Tasks, &g), Lookup::Action(_)));

    let dir = config_dir_with("keymaps", "modes", "[nonsense]\n\"a\" = \"quit\"\n");
    let (_, warnings) = Keymap::load_from("modes", Some(&dir.path().to_path_buf()));
    assert!(
        warnings[0].to_string().contains("modes.toml:1"),
        "{}",
        warnings[0]
    );
}

#[test]
fn help_is_generated_from_the_active_keymap() {
    let root = std::path::Path::new("/r");
    let theme = Theme::load_from("default", None).0;
    let vim = Keymap::load_from("vim", None).0;
    let state = crew_tui::AppState::new(root.into(), theme, vim, std::time::SystemTime::UNIX_EPOCH);
    let text: String = crew_tui::render::help_lines(&state)
        .iter()
        .map(|l| l.to_string() + "\n")
        .collect();
    assert!(
        text.contains("g g") && text.contains("go to the top"),
        "{text}"
    );
    assert!(text.contains("[approvals]") && text.contains("approve the request"));
}
