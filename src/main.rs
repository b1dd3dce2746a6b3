fn main() -> std::process::ExitCode {
    crew::cli::main()
}
