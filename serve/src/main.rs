//! The `diagwire-serve` binary: `diagwire serve` on its own (the same arguments and code), for
//! deployments and tests that want the collector without the rest of the tool.

use clap::Parser;

/// swactor's collector protocol, with the contract enforced at ingest.
#[derive(Parser)]
#[command(name = "diagwire-serve", version)]
struct Cli {
    #[command(flatten)]
    args: diagwire_serve::ServeArgs,
}

fn main() -> std::process::ExitCode {
    diagwire_serve::run(&Cli::parse().args)
}
