//! Word-level changed ranges inside a deleted/added line pair, for highlighting in the diff view.

use std::ops::Range;

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

/// Byte ranges that differ, in the old (deleted) and the new (added) line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InlineChanges {
    pub old: Vec<Range<usize>>,
    pub new: Vec<Range<usize>>,
}

/// The word-level changes between a deleted line and the added line replacing it. Adjacent
/// changed words are joined into one range; ranges always fall on char boundaries.
pub fn inline_changes(old: &str, new: &str) -> InlineChanges {
    let diff = TextDiff::from_words(old, new);
    let mut changes = InlineChanges::default();
    let (mut old_pos, mut new_pos) = (0, 0);
    for change in diff.iter_all_changes() {
        let len = change.value().len();
        match change.tag() {
            ChangeTag::Equal => {
                old_pos += len;
                new_pos += len;
            }
            ChangeTag::Delete => {
                push_joined(&mut changes.old, old_pos..old_pos + len);
                old_pos += len;
            }
            ChangeTag::Insert => {
                push_joined(&mut changes.new, new_pos..new_pos + len);
                new_pos += len;
            }
        }
    }
    changes
}

fn push_joined(ranges: &mut Vec<Range<usize>>, range: Range<usize>) {
    match ranges.last_mut() {
        Some(last) if last.end == range.start => last.end = range.end,
        _ => ranges.push(range),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_the_changed_word() {
        let c = inline_changes("let x = 1;", "let y = 1;");
        assert_eq!(c.old, vec![4..5]);
        assert_eq!(c.new, vec![4..5]);
    }

    #[test]
    fn joins_adjacent_words_and_handles_unicode() {
        let old = "café au lait";
        let new = "thé noir au lait";
        let c = inline_changes(old, new);
        assert_eq!(c.old.len(), 1);
        assert_eq!(&old[c.old[0].clone()], "café");
        assert_eq!(c.new.len(), 1);
        assert_eq!(&new[c.new[0].clone()], "thé noir");
    }

    #[test]
    fn identical_lines_have_no_changes() {
        assert_eq!(inline_changes("same", "same"), InlineChanges::default());
    }

    #[test]
    fn pure_insertion() {
        let c = inline_changes("a b", "a x b");
        assert!(c.old.is_empty());
        assert_eq!(c.new.len(), 1);
        assert_eq!(&"a x b"[c.new[0].clone()], "x ");
    }
}
