//! Tool registry, schema validation, the governed pipeline, permissions, hooks, sandbox.
