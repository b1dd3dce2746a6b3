//! The bounded agent loop, context assembly, compaction and transcripts.
