//! `diagwire upgrade`: the simulator's prod-shape directory mapped onto the contract by
//! `diagwire_upgrade`, written under OUT through a temporary directory renamed into place once
//! complete, with every item it could not map printed.

use std::path::Path;
use std::process::ExitCode;

use diagwire::bundle::target::{PendingDir, check_output};
use diagwire::problem::printable;

use crate::fail;

/// `diagwire upgrade INPUT OUT`.
pub fn upgrade(input: &Path, out: &Path) -> ExitCode {
    if let Err(e) = check_output(input, out) {
        return fail(&printable(&e.to_string()));
    }
    let upgraded = match diagwire_upgrade::upgrade(input) {
        Ok(u) => u,
        Err(e) => return fail(&printable(&format!("{}: {e}", input.display()))),
    };
    let written = PendingDir::create(out, &upgraded.contents.run_id).and_then(|pending| {
        for (path, bytes) in &upgraded.contents.files {
            pending.write(path, bytes)?;
        }
        pending.commit()
    });
    let dir = match written {
        Ok(d) => d,
        Err(e) => return fail(&printable(&format!("{}: {e}", out.display()))),
    };
    for problem in &upgraded.problems {
        println!("not mapped: {}", printable(&problem.to_string()));
    }
    println!(
        "wrote {} file(s) to {}; {} item(s) not mapped",
        upgraded.contents.files.len(),
        printable(&dir.display().to_string()),
        upgraded.problems.len()
    );
    ExitCode::SUCCESS
}
