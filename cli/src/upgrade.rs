//! `diagwire upgrade`: the simulator's prod-shape directory mapped onto the contract by
//! `diagwire_upgrade`, written under OUT (a run directory, or a deterministic `.tar.gz` when OUT
//! ends so) file by file as it is made, through a temporary name renamed into place once
//! complete, with every item it could not map printed.

use std::path::Path;
use std::process::ExitCode;

use diagwire::bundle::read::Limits;
use diagwire::bundle::target::check_output;
use diagwire::problem::printable;
use diagwire_upgrade::{Failed, Output};

use crate::fail;

/// `diagwire upgrade INPUT OUT`.
pub fn upgrade(input: &Path, out: &Path) -> ExitCode {
    if let Err(e) = check_output(input, out) {
        return fail(&printable(&e.to_string()));
    }
    let target = if out.to_string_lossy().ends_with(".tar.gz") {
        Output::TarGz(out)
    } else {
        Output::Dir(out)
    };
    let written = match diagwire_upgrade::upgrade_to(input, Limits::default(), target) {
        Ok(w) => w,
        Err(Failed::Input(e)) => return fail(&printable(&format!("{}: {e}", input.display()))),
        Err(Failed::Output(e)) => return fail(&printable(&format!("{}: {e}", out.display()))),
    };
    for problem in &written.problems {
        println!("not mapped: {}", printable(&problem.to_string()));
    }
    println!(
        "wrote {} file(s) to {}; {} item(s) not mapped",
        written.files,
        printable(&written.path.display().to_string()),
        written.problems.len()
    );
    // Something found: items that had no place in the contract (listed above).
    if written.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
