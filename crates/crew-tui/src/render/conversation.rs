//! An agent's transcript as lines: each tool call folded to one line (▸) unless unfolded (▾,
//! with its whole input or output below), the selected call marked. Only the rows that reach
//! the visible window are formatted.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::render::{one_line, plain};
use crate::state::{AppState, Folds};
use crew_agent::transcript::Row;
use crew_store::AgentName;

/// How a transcript is laid out: its width, and whether long lines wrap (the lead pane and a
/// zoomed teammate, to be read) or are cut (a teammate's small box, to be glanced at).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub base: Style,
    pub width: usize,
    pub wrap: bool,
    /// Whether the pane has the focus, so the selected call is marked.
    pub focused: bool,
}

/// Where and how one agent's transcript is drawn (for a click to find what it hit).
pub(crate) struct Placement {
    pub name: AgentName,
    pub area: Rect,
    pub layout: Layout,
    pub back: usize,
}

/// The visible lines, and for each the number of the tool call it folds (its first line only).
pub(crate) struct Window {
    pub lines: Vec<Line<'static>>,
    pub calls: Vec<Option<u64>>,
}

/// The `height` lines that end `back` lines above the newest one, or None when there is no
/// transcript yet. When everything fits nothing scrolls; `back` stops at the oldest line.
pub(crate) fn window(
    state: &AppState,
    name: &str,
    layout: Layout,
    height: usize,
    back: usize,
) -> Option<Window> {
    let kept = state
        .workspace
        .transcripts
        .get(name)
        .filter(|k| !k.rows.is_empty())?;
    let none = Folds::default();
    let folds = state.folds.get(name).unwrap_or(&none);
    let need = back.saturating_add(height);
    // Newest first, until enough lines are formatted.
    let mut reversed: Vec<(Line<'static>, Option<u64>)> = Vec::new();
    for (i, row) in kept.rows.iter().enumerate().rev() {
        let number = kept.number(i);
        let lines = row_lines(state, row, layout, folds, number);
        let call = row.detail.is_some().then_some(number);
        let firsts = std::iter::once(call).chain(std::iter::repeat(None));
        let mut tagged: Vec<_> = lines.into_iter().zip(firsts).collect();
        tagged.reverse();
        reversed.extend(tagged);
        if reversed.len() >= need {
            break;
        }
    }
    let back = if reversed.len() < need {
        back.min(reversed.len().saturating_sub(height))
    } else {
        back
    };
    let (mut lines, mut calls): (Vec<_>, Vec<_>) =
        reversed.into_iter().skip(back).take(height).unzip();
    lines.reverse();
    calls.reverse();
    Some(Window { lines, calls })
}

/// How many lines the rows after `number` take: the scroll that puts that row's last line at
/// the bottom of the window.
pub(crate) fn lines_after(state: &AppState, name: &str, number: u64, layout: Layout) -> usize {
    let Some(kept) = state.workspace.transcripts.get(name) else {
        return 0;
    };
    let Some(index) = kept.index(number) else {
        return 0;
    };
    let none = Folds::default();
    let folds = state.folds.get(name).unwrap_or(&none);
    kept.rows
        .iter()
        .enumerate()
        .skip(index + 1)
        .map(|(i, row)| row_lines(state, row, layout, folds, kept.number(i)).len())
        .sum()
}

fn row_lines(
    state: &AppState,
    row: &Row,
    layout: Layout,
    folds: &Folds,
    number: u64,
) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let width = layout.width;
    let Some(detail) = &row.detail else {
        if !layout.wrap {
            return vec![plain(layout.base, one_line(&row.text, width))];
        }
        return wrapped(&row.text, "", width)
            .into_iter()
            .map(|l| plain(layout.base, l))
            .collect();
    };
    let open = folds.open.contains(&number);
    let marker = if open { "▾ " } else { "▸ " };
    let mut style = theme.style("call");
    if layout.focused && folds.selected == Some(number) {
        style = style.patch(theme.style("selection"));
    }
    let mut lines = vec![Line::from(vec![
        Span::styled(marker, style),
        Span::styled(one_line(&row.text, width.saturating_sub(2)), style),
    ])];
    if open {
        let detail_style = theme.style("call.detail");
        lines.extend(
            detail
                .lines()
                .flat_map(|l| wrapped(l, "    ", width))
                .map(|l| plain(detail_style, l)),
        );
    }
    lines
}

/// `text` cut into lines of at most `width` columns (CJK counts two), each after `indent`:
/// at word boundaries, and within a word only when it is longer than a whole line.
fn wrapped(text: &str, indent: &str, width: usize) -> Vec<String> {
    let room = width.saturating_sub(indent.len()).max(8);
    let text = text.replace('\t', "    ");
    let options = textwrap::Options::new(room).break_words(true);
    textwrap::wrap(&text, options)
        .into_iter()
        .map(|line| format!("{indent}{line}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::wrapped;

    #[test]
    fn long_lines_wrap_between_words_and_only_split_a_word_longer_than_a_line() {
        let lines = wrapped("the quick brown fox jumps over the lazy dog", "", 16);
        assert_eq!(lines, ["the quick brown", "fox jumps over", "the lazy dog"]);
        let long = wrapped("see abcdefghijklmnopqrstuvwxyz", "  ", 12);
        assert_eq!(long, ["  see", "  abcdefghij", "  klmnopqrst", "  uvwxyz"]);
        // Columns, not characters: each of these takes two.
        assert_eq!(wrapped("漢字 漢字 漢字", "", 10), ["漢字 漢字", "漢字"]);
    }
}
