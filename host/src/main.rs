fn main() -> std::process::ExitCode {
    openadapt_agent::cli::main()
}
