//! Where things go: panes side by side when there is room, one pane at a time with a tab bar
//! when there is not (80×24 works), a message when the terminal is too small.

use ratatui::layout::{Constraint, Direction, Layout, Rect};

use crate::state::{AppState, PANES, Pane};

pub(crate) const MIN_WIDTH: u16 = 60;
pub(crate) const MIN_HEIGHT: u16 = 16;

pub(crate) struct Areas {
    pub header: Rect,
    pub tabs: Option<Rect>,
    pub body: Rect,
    pub panes: Vec<(Pane, Rect)>,
    pub status: Rect,
}

/// None when the terminal is too small to be useful.
pub(crate) fn areas(state: &AppState, area: Rect) -> Option<Areas> {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    let wide = area.width >= 110 && area.height >= 30;
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints(if wide {
            vec![
                Constraint::Length(1),
                Constraint::Min(1),
                Constraint::Length(1),
            ]
        } else {
            vec![
                Constraint::Length(1),
                Constraint::Length(1),
                Constraint::Min(1),
                Constraint::Length(1),
            ]
        })
        .split(area);
    let (header, tabs, body, status) = if wide {
        (rows[0], None, rows[1], rows[2])
    } else {
        (rows[0], Some(rows[1]), rows[2], rows[3])
    };
    let panes = if !wide || state.zoom || state.diff.is_some() {
        vec![(state.focus, body)]
    } else {
        side_by_side(body)
    };
    Some(Areas {
        header,
        tabs,
        body,
        panes,
        status,
    })
}

/// From this width on, the teammates' pane (their transcripts, the longest lines) gets the
/// most room: at 200 columns 80 of them, not 60.
const ROOMY: u16 = 160;

fn side_by_side(body: Rect) -> Vec<(Pane, Rect)> {
    let shares = if body.width >= ROOMY {
        [30, 40, 30]
    } else {
        [34, 30, 36]
    };
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints(shares.map(Constraint::Percentage))
        .split(body);
    let right = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Percentage(34),
            Constraint::Percentage(30),
            Constraint::Percentage(36),
        ])
        .split(cols[2]);
    vec![
        (Pane::Lead, cols[0]),
        (Pane::Teammates, cols[1]),
        (Pane::Tasks, right[0]),
        (Pane::Mailboxes, right[1]),
        (Pane::Approvals, right[2]),
    ]
}

/// The tab bar's cells, one per pane, for drawing and clicking.
pub(crate) fn tab_cells(tabs: Rect, labels: &[String]) -> Vec<(Pane, Rect)> {
    let mut x = tabs.x;
    let mut out = Vec::new();
    for (pane, label) in PANES.iter().zip(labels) {
        let w = cells(label.chars().count())
            .saturating_add(2)
            .min(tabs.right().saturating_sub(x));
        out.push((*pane, Rect::new(x, tabs.y, w, 1)));
        x = x.saturating_add(w + 1);
    }
    out
}

/// A count of rows or columns as terminal cells, capped at what a terminal can have (a cast
/// would wrap a huge count round to a small one).
pub(crate) fn cells(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}
