//! `recourse`: run tool calls the way a careful engineer would, and explain why.

fn main() -> std::process::ExitCode {
    recourse_cli::main()
}
