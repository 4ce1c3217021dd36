//! `cargo codegen [--check]`: regenerate `generated/` from `schemas/`, or check that it is fresh.
//! `cargo codegen release`: freeze the current schemas as the release in `schemas/VERSION`.

use std::process::ExitCode;

use diagwire_codegen::{Mode, REGEN_COMMAND, run, workspace_root};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.as_slice() {
        [] => Mode::Write,
        [flag] if flag == "--check" => Mode::Check,
        [cmd] if cmd == "release" => {
            return match diagwire_codegen::release::cut(&workspace_root()) {
                Ok(msg) => {
                    println!("{msg}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            };
        }
        _ => {
            eprintln!("usage: {REGEN_COMMAND} [--check | release]");
            return ExitCode::from(2);
        }
    };
    match run(&workspace_root(), mode) {
        Ok(n) => {
            match mode {
                Mode::Write => println!("generated/: {n} file(s) updated"),
                Mode::Check => println!("generated/ is up to date"),
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
