//! The diff review: files with +/- counts, hunks with syntax colours and changed words marked,
//! unified or side by side, plus what merge / send back / discard did.

use std::ops::Range;

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::action::Action;
use crate::diffview::DiffView;
use crate::highlight::LineSegments;
use crate::keymap::Mode;
use crate::render::{plain, window_start};
use crate::state::AppState;
use crew_git::{DiffLine, FileStatus, Hunk, LineKind, inline_changes};
use crew_team::review::ProtectedChange;

pub fn render(state: &AppState, view: &DiffView, frame: &mut Frame, area: Rect) {
    let theme = &state.theme;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style("border.focus"))
        .title(Line::from(title(state, view)).style(theme.style("title.focus")));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Length(1), Constraint::Min(1)])
        .split(inner);
    frame.render_widget(
        Paragraph::new(hint_line(state, view, rows[0].width)),
        rows[0],
    );
    let diff = match &view.diff {
        None => {
            frame.render_widget(
                Paragraph::new(plain(theme.style("dim"), "loading…")),
                rows[1],
            );
            return;
        }
        Some(Err(e)) => {
            frame.render_widget(
                Paragraph::new(plain(theme.style("status.error"), e.clone())),
                rows[1],
            );
            return;
        }
        Some(Ok(diff)) => diff,
    };
    if diff.files.is_empty() {
        frame.render_widget(
            Paragraph::new(plain(
                theme.style("dim"),
                "no changes against the base branch",
            )),
            rows[1],
        );
        return;
    }
    let list_width = (rows[1].width / 3).clamp(16, 40);
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(list_width), Constraint::Min(10)])
        .split(rows[1]);
    render_files(state, view, frame, cols[0]);
    if let Some(file) = view.current() {
        // A change only the person merges says so above its content, with why.
        let cols = match protected(state, view, &file.path) {
            Some(p) => {
                let parts = Layout::default()
                    .direction(Direction::Vertical)
                    .constraints([Constraint::Length(1), Constraint::Min(1)])
                    .split(cols[1]);
                let warning = format!("⚠ {p}: governs the team, never merged automatically");
                frame.render_widget(
                    Paragraph::new(plain(theme.style("status.warning"), warning)),
                    parts[0],
                );
                [cols[0], parts[1]]
            }
            None => [cols[0], cols[1]],
        };
        let hl = view.highlights.get(&view.file);
        if file.binary {
            frame.render_widget(
                Paragraph::new(plain(theme.style("dim"), "binary file")),
                cols[1],
            );
        } else {
            let body = Body {
                state,
                view,
                hunks: &file.hunks,
                hl,
            };
            if view.side_by_side {
                render_split(&body, frame, cols[1]);
            } else {
                render_unified(&body, frame, cols[1]);
            }
        }
    }
}

/// The review's protected change at `path`, when this diff is a task's review.
fn protected<'a>(state: &'a AppState, view: &DiffView, path: &str) -> Option<&'a ProtectedChange> {
    let task = view.task?;
    state
        .reviews
        .iter()
        .find(|r| r.id == task)?
        .protected
        .iter()
        .find(|p| p.path == path)
}

fn title(state: &AppState, view: &DiffView) -> String {
    let base = state.workspace.base_branch();
    let totals = match &view.diff {
        Some(Ok(d)) => format!(
            " · {} files +{} -{}",
            d.totals.files, d.totals.additions, d.totals.deletions
        ),
        _ => String::new(),
    };
    let mode = if view.side_by_side {
        "side by side"
    } else {
        "unified"
    };
    match &view.task {
        Some(task) => format!(
            " review {task} by {} (only its commits → {base}){totals} · {mode} ",
            view.name
        ),
        None => format!(
            " diff {} (crew/{} → {base}){totals} · {mode} ",
            view.name, view.name
        ),
    }
}

fn hint_line(state: &AppState, view: &DiffView, width: u16) -> Line<'static> {
    let theme = &state.theme;
    if let Some(outcome) = &view.outcome {
        return plain(theme.style("status.warning"), outcome.clone());
    }
    let mut actions = vec![
        Action::NextFile,
        Action::NextHunk,
        Action::SideBySide,
        Action::Merge,
        Action::SendBack,
        Action::Discard,
        Action::Back,
    ];
    let hint = |a: &Action| {
        let key = state.keymap.key_for(Mode::Diff, *a).unwrap_or_default();
        [
            Span::styled(format!(" {key} "), theme.style("approval.key")),
            Span::styled(format!(" {} ", a.name()), theme.style("dim")),
        ]
    };
    let wide = |actions: &[Action]| {
        actions
            .iter()
            .flat_map(hint)
            .map(|s| s.width())
            .sum::<usize>()
    };
    // A narrow screen drops the moving keys (they are in `?`) before the answers and the way
    // out.
    for dropped in [Action::SideBySide, Action::NextHunk, Action::NextFile] {
        if wide(&actions) <= usize::from(width) {
            break;
        }
        actions.retain(|a| *a != dropped);
    }
    Line::from(actions.iter().flat_map(hint).collect::<Vec<_>>())
}

fn render_files(state: &AppState, view: &DiffView, frame: &mut Frame, area: Rect) {
    let theme = &state.theme;
    let height = area.height as usize;
    let start = window_start(view.file, height);
    let lines: Vec<Line> = view
        .files()
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(i, f)| {
            let mark = match f.status {
                FileStatus::Added => "A",
                FileStatus::Modified => "M",
                FileStatus::Deleted => "D",
                FileStatus::Renamed => "R",
                FileStatus::Typechange => "T",
            };
            let (mark, style) = match protected(state, view, &f.path) {
                Some(_) => ("⚠", theme.style("status.warning")),
                None => (mark, theme.style("diff.file")),
            };
            let line = Line::from(vec![
                Span::styled(format!("{mark} {} ", f.path), style),
                Span::styled(format!("+{}", f.additions), theme.style("task.completed")),
                Span::styled(format!(" -{}", f.deletions), theme.style("task.failed")),
            ]);
            if i == view.file {
                line.style(theme.style("selection"))
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}

/// Line `j` of `hunk` as the unified view shows it: both line numbers, the sign, the text with
/// syntax colours (`segs`, once highlighted) and changed words marked.
pub(crate) fn unified_line(
    state: &AppState,
    hunk: &Hunk,
    j: usize,
    segs: Option<&LineSegments>,
) -> Line<'static> {
    let line = &hunk.lines[j];
    let sign = match line.kind {
        LineKind::Add => "+",
        LineKind::Del => "-",
        LineKind::Context => " ",
    };
    let num = |n: Option<u32>| n.map_or("    ".to_string(), |n| format!("{n:>4}"));
    let mut spans = vec![Span::styled(
        format!("{} {} {sign}", num(line.old_lineno), num(line.new_lineno)),
        state.theme.style("dim"),
    )];
    spans.extend(styled_text(state, line, segs, &words(hunk, j)));
    Line::from(spans)
}

/// Word ranges that changed in line `j` of `hunk`, pairing the k-th deleted line of a run with
/// the k-th added line after it.
fn words(hunk: &Hunk, j: usize) -> Vec<Range<usize>> {
    let lines = &hunk.lines;
    let kind = lines[j].kind;
    if kind == LineKind::Context {
        return Vec::new();
    }
    let mut del_start = j;
    if kind == LineKind::Add {
        let mut s = j;
        while s > 0 && lines[s - 1].kind == LineKind::Add {
            s -= 1;
        }
        let k = j - s;
        let mut d = s;
        while d > 0 && lines[d - 1].kind == LineKind::Del {
            d -= 1;
        }
        return match lines
            .get(d + k)
            .filter(|l| l.kind == LineKind::Del && d + k < s)
        {
            Some(old) => inline_changes(&old.text, &lines[j].text).new,
            None => Vec::new(),
        };
    }
    while del_start > 0 && lines[del_start - 1].kind == LineKind::Del {
        del_start -= 1;
    }
    let mut e = j;
    while e < lines.len() && lines[e].kind == LineKind::Del {
        e += 1;
    }
    match lines
        .get(e + (j - del_start))
        .filter(|l| l.kind == LineKind::Add)
    {
        Some(new) => inline_changes(&lines[j].text, &new.text).old,
        None => Vec::new(),
    }
}

/// A line's text as spans: diff colours, syntax foreground, changed words on top.
fn styled_text(
    state: &AppState,
    line: &DiffLine,
    segs: Option<&LineSegments>,
    words: &[Range<usize>],
) -> Vec<Span<'static>> {
    let theme = &state.theme;
    let (base, word) = match line.kind {
        LineKind::Add => (theme.style("diff.add"), theme.style("diff.add.word")),
        LineKind::Del => (theme.style("diff.del"), theme.style("diff.del.word")),
        LineKind::Context => (theme.style("text"), Style::default()),
    };
    let text = &line.text;
    let mut cuts: Vec<usize> = vec![0, text.len()];
    for (_, r) in segs.into_iter().flatten() {
        cuts.extend([r.start, r.end]);
    }
    for r in words {
        cuts.extend([r.start, r.end]);
    }
    cuts.retain(|c| *c <= text.len() && text.is_char_boundary(*c));
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            let mut style = base;
            if let Some((color, _)) = segs
                .into_iter()
                .flatten()
                .find(|(_, r)| r.start <= a && a < r.end)
            {
                style = style.fg(*color);
            }
            if words.iter().any(|r| r.start <= a && a < r.end) {
                style = style.patch(word);
            }
            Span::styled(text[a..b].to_string(), style)
        })
        .collect()
}

/// What the hunk views draw: the current file's hunks and their highlighting.
#[derive(Clone, Copy)]
struct Body<'a> {
    state: &'a AppState,
    view: &'a DiffView,
    hunks: &'a [Hunk],
    hl: Option<&'a Vec<Vec<LineSegments>>>,
}

fn render_unified(body: &Body, frame: &mut Frame, area: Rect) {
    let (state, view, hunks, hl) = (body.state, body.view, body.hunks, body.hl);
    let theme = &state.theme;
    let height = area.height as usize;
    let mut lines = Vec::with_capacity(height);
    let mut row = 0usize;
    'hunks: for (h, hunk) in hunks.iter().enumerate() {
        let rows = 1 + hunk.lines.len();
        if row + rows <= view.scroll {
            row += rows;
            continue;
        }
        if row >= view.scroll {
            let marker = if h == view.hunk { "▶ " } else { "  " };
            lines.push(plain(
                theme.style("diff.hunk"),
                format!("{marker}{}", hunk.header),
            ));
        }
        row += 1;
        for j in 0..hunk.lines.len() {
            if lines.len() >= height {
                break 'hunks;
            }
            if row >= view.scroll {
                let segs = hl.and_then(|h2| h2.get(h)).and_then(|l| l.get(j));
                lines.push(unified_line(state, hunk, j, segs));
            }
            row += 1;
        }
        if lines.len() >= height {
            break;
        }
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// Rows of a side-by-side hunk: context on both sides, deleted/added runs zipped.
fn split_rows(hunk: &Hunk) -> Vec<(Option<usize>, Option<usize>)> {
    let mut rows = Vec::new();
    let mut i = 0;
    let lines = &hunk.lines;
    while i < lines.len() {
        if lines[i].kind == LineKind::Context {
            rows.push((Some(i), Some(i)));
            i += 1;
            continue;
        }
        let dels: Vec<usize> = (i..lines.len())
            .take_while(|k| lines[*k].kind == LineKind::Del)
            .collect();
        let after = i + dels.len();
        let adds: Vec<usize> = (after..lines.len())
            .take_while(|k| lines[*k].kind == LineKind::Add)
            .collect();
        for k in 0..dels.len().max(adds.len()) {
            rows.push((dels.get(k).copied(), adds.get(k).copied()));
        }
        i = after + adds.len();
    }
    rows
}

fn render_split(body: &Body, frame: &mut Frame, area: Rect) {
    let (state, view, hunks, hl) = (body.state, body.view, body.hunks, body.hl);
    let theme = &state.theme;
    let halves = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(area);
    let height = area.height as usize;
    let (mut left, mut right) = (Vec::new(), Vec::new());
    let mut row = 0usize;
    for (h, hunk) in hunks.iter().enumerate() {
        if left.len() >= height {
            break;
        }
        if row >= view.scroll {
            left.push(plain(theme.style("diff.hunk"), hunk.header.clone()));
            right.push(Line::default());
        }
        row += 1;
        for (old, new) in split_rows(hunk) {
            if left.len() >= height {
                break;
            }
            if row >= view.scroll {
                let side = |idx: Option<usize>, old_side: bool| -> Line<'static> {
                    let Some(j) = idx else { return Line::default() };
                    let line = &hunk.lines[j];
                    let n = if old_side {
                        line.old_lineno
                    } else {
                        line.new_lineno
                    };
                    let mut spans = vec![Span::styled(
                        n.map_or("     ".to_string(), |n| format!("{n:>4} ")),
                        theme.style("dim"),
                    )];
                    let segs = hl.and_then(|h2| h2.get(h)).and_then(|l| l.get(j));
                    spans.extend(styled_text(state, line, segs, &words(hunk, j)));
                    Line::from(spans)
                };
                left.push(side(old, true));
                right.push(side(new, false));
            }
            row += 1;
        }
    }
    frame.render_widget(Paragraph::new(left), halves[0]);
    frame.render_widget(
        Paragraph::new(right).block(
            Block::default()
                .borders(Borders::LEFT)
                .border_style(theme.style("border")),
        ),
        halves[1],
    );
}
