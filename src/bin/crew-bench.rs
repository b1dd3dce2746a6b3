//! crew-bench: see the crew-bench crate.

fn main() -> std::process::ExitCode {
    crew_bench::main()
}
