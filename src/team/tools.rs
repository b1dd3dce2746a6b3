//! The team tools (tasks, messages, shutdown and plan protocols) over the store.
