//! An agent's transcript as lines: each tool call folded to one line (▸) unless unfolded (▾,
//! with its whole input or output below), the selected call marked. Only the rows that reach
//! the visible window are formatted.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::agent::transcript::Row;
use crate::tui::render::{one_line, plain};
use crate::tui::state::{AppState, Folds};

/// The `height` lines that end `back` lines above the newest one (`back` is clamped so the
/// window never scrolls past the oldest line), or None when there is no transcript yet.
pub fn window(
    state: &AppState,
    name: &str,
    base: Style,
    width: usize,
    height: usize,
    back: usize,
    focused: bool,
) -> Option<Vec<Line<'static>>> {
    let kept = state
        .model
        .transcripts
        .get(name)
        .filter(|k| !k.rows.is_empty())?;
    let none = Folds::default();
    let folds = state.folds.get(name).unwrap_or(&none);
    let need = back.saturating_add(height);
    // Newest first, until enough lines are formatted.
    let mut reversed: Vec<Line<'static>> = Vec::new();
    for (i, row) in kept.rows.iter().enumerate().rev() {
        let number = kept.number(i);
        let selected = focused && folds.selected == Some(number);
        let mut lines = row_lines(
            state,
            row,
            base,
            width,
            folds.open.contains(&number),
            selected,
        );
        lines.reverse();
        reversed.extend(lines);
        if reversed.len() >= need {
            break;
        }
    }
    let back = back.min(reversed.len().saturating_sub(1));
    let window: Vec<Line<'static>> = reversed.into_iter().skip(back).take(height).collect();
    Some(window.into_iter().rev().collect())
}

/// How many lines the rows after `number` take, unfolded ones counted in full: the scroll that
/// puts that row's last line at the bottom of the window.
pub fn lines_after(state: &AppState, name: &str, number: u64) -> usize {
    let Some(kept) = state.model.transcripts.get(name) else {
        return 0;
    };
    let open = state.folds.get(name).map(|f| &f.open);
    let Some(index) = kept.index(number) else {
        return 0;
    };
    kept.rows
        .iter()
        .enumerate()
        .skip(index + 1)
        .map(|(i, row)| {
            let unfolded = open.is_some_and(|o| o.contains(&kept.number(i)));
            1 + match (&row.detail, unfolded) {
                (Some(detail), true) => detail.lines().count(),
                _ => 0,
            }
        })
        .sum()
}

fn row_lines(
    state: &AppState,
    row: &Row,
    base: Style,
    width: usize,
    open: bool,
    selected: bool,
) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let Some(detail) = &row.detail else {
        return vec![plain(base, one_line(&row.text, width))];
    };
    let marker = if open { "▾ " } else { "▸ " };
    let mut style = theme.style("call");
    if selected {
        style = style.patch(theme.style("selection"));
    }
    let mut lines = vec![Line::from(vec![
        Span::styled(marker, style),
        Span::styled(one_line(&row.text, width.saturating_sub(2)), style),
    ])];
    if open {
        let detail_style = theme.style("call.detail");
        lines.extend(detail.lines().map(|l| {
            plain(
                detail_style,
                one_line(&format!("    {}", l.replace('\t', "    ")), width),
            )
        }));
    }
    lines
}
