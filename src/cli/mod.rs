//! Clap commands, `--json` output and exit codes: the only code that prints.
