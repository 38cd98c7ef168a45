//! `gantry`: runs scenario files against the admin and gateway binaries. The commands live in
//! the library (`harness::cli`), beside the engine they drive.

fn main() -> std::process::ExitCode {
    harness::cli::main()
}
