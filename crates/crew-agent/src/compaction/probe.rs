//! The check after a summary: a small model call asks the agent what it is working on, and
//! the answer must name its goal (the task it was given, or what the conversation began with).
//! It is a plain word check, cheap and predictable: the answer must contain at least a third
//! of the goal's distinctive words (four letters or more, from its first line, at most
//! twelve); a goal with none is not checked.

/// Starts the question the probe asks (scenarios match on it).
pub const PROBE_QUESTION: &str = "[compaction check] Part of this conversation was just \
summarised. Without calling any tool, say in one or two sentences which task you are working \
on and what you will do next.";

/// `max_tokens` of the probe's call.
pub const PROBE_MAX_TOKENS: u32 = 256;

/// Words too common to show the agent knows its goal.
const COMMON: &[&str] = &[
    "task", "that", "this", "with", "from", "have", "will", "what", "when", "then", "them", "they",
    "their", "there", "into", "your", "about", "should", "would", "could", "please", "make",
    "sure", "also", "only", "each", "some",
];

/// The goal's distinctive words, lower-cased, in order, without repeats.
pub fn key_words(goal: &str) -> Vec<String> {
    let first = goal.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut words: Vec<String> = Vec::new();
    for word in first
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .map(str::to_lowercase)
    {
        if word.chars().count() >= 4 && !COMMON.contains(&word.as_str()) && !words.contains(&word) {
            words.push(word);
        }
    }
    words.truncate(12);
    words
}

/// Whether `answer` names enough of `words` (see the module's rule).
pub fn names_goal(words: &[String], answer: &str) -> bool {
    let answer = answer.to_lowercase();
    let found = words.iter().filter(|w| answer.contains(w.as_str())).count();
    found * 3 >= words.len() && found > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_words_come_from_the_first_line_and_a_third_must_be_named() {
        let words = key_words("task_7: Fix the parser's off-by-one in tokenize\nlong description");
        assert_eq!(words, ["task_7", "parser", "tokenize"]);
        assert!(names_goal(
            &words,
            "I am fixing the Parser, then I run the tests."
        ));
        assert!(!names_goal(&words, "I am not sure what I was doing."));
        assert!(key_words("hi 0").is_empty());
    }
}
