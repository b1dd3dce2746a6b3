//! Syntax highlighting with syntect, run on a background thread: loading the grammars and
//! highlighting a file both take long enough that input must never wait for them.

use std::ops::Range;
use std::path::Path;

use ratatui::style::Color;
use syntect::easy::HighlightLines;
use syntect::highlighting::ThemeSet;
use syntect::parsing::SyntaxSet;

use crew_git::{FileDiff, LineKind};

/// Foreground colours over byte ranges of one line.
pub(crate) type LineSegments = Vec<(Color, Range<usize>)>;
/// One `LineSegments` per line.
pub(crate) type Segments = Vec<LineSegments>;

pub(crate) struct Highlighter {
    syntaxes: SyntaxSet,
    themes: ThemeSet,
}

impl Default for Highlighter {
    fn default() -> Self {
        Highlighter {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            themes: ThemeSet::load_defaults(),
        }
    }
}

impl Highlighter {
    /// Each line of `text`, highlighted as a file with extension `ext`.
    pub(crate) fn text(&self, text: &str, ext: &str, theme: &str) -> Segments {
        let mut lines = self.lines(ext, theme);
        text.lines().map(&mut lines).collect()
    }

    /// Each line of each hunk of `file`: the new side (context and added lines) and the old side
    /// (context and deleted lines) are highlighted as two streams so multi-line constructs hold.
    pub(crate) fn file(&self, file: &FileDiff, theme: &str) -> Vec<Segments> {
        let ext = Path::new(&file.path)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("");
        file.hunks
            .iter()
            .map(|hunk| {
                let mut new_side = self.lines(ext, theme);
                let mut old_side = self.lines(ext, theme);
                hunk.lines
                    .iter()
                    .map(|line| match line.kind {
                        LineKind::Add => new_side(&line.text),
                        LineKind::Del => old_side(&line.text),
                        LineKind::Context => {
                            old_side(&line.text);
                            new_side(&line.text)
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// A stateful line highlighter for one stream of lines.
    fn lines<'a>(&'a self, ext: &str, theme: &str) -> impl FnMut(&str) -> LineSegments + 'a {
        let syntax = self
            .syntaxes
            .find_syntax_by_extension(ext)
            .or_else(|| self.syntaxes.find_syntax_by_token(ext))
            .unwrap_or_else(|| self.syntaxes.find_syntax_plain_text());
        let theme = self
            .themes
            .themes
            .get(theme)
            .or_else(|| self.themes.themes.values().next());
        let mut state = theme.map(|t| HighlightLines::new(syntax, t));
        move |line: &str| {
            let Some(state) = state.as_mut() else {
                return Vec::new();
            };
            let with_newline = format!("{line}\n");
            let Ok(regions) = state.highlight_line(&with_newline, &self.syntaxes) else {
                return Vec::new();
            };
            let mut at = 0;
            let mut out = Vec::new();
            for (style, piece) in regions {
                let end = (at + piece.len()).min(line.len());
                if at < end {
                    let c = style.foreground;
                    out.push((Color::Rgb(c.r, c.g, c.b), at..end));
                }
                at += piece.len();
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_gets_more_than_one_colour_and_ranges_cover_it() {
        let h = Highlighter::default();
        let segs = h.text("cargo test --all > out.txt", "sh", "base16-ocean.dark");
        assert_eq!(segs.len(), 1);
        let colours: std::collections::HashSet<_> = segs[0].iter().map(|(c, _)| *c).collect();
        assert!(colours.len() > 1, "{segs:?}");
        assert_eq!(segs[0].last().unwrap().1.end, 26);
    }
}
