//! `diagwire upgrade`: the simulator's prod-shape directory mapped onto the contract by
//! `diagwire_upgrade`, written under OUT, with every item it could not map printed.

use std::path::Path;
use std::process::ExitCode;

use crate::fail;

/// `diagwire upgrade INPUT OUT`.
pub fn upgrade(input: &Path, out: &Path) -> ExitCode {
    let upgraded = match diagwire_upgrade::upgrade(input) {
        Ok(u) => u,
        Err(e) => return fail(&format!("{}: {e}", input.display())),
    };
    let dir = match diagwire::bundle::output::write_dir(&upgraded.contents, out) {
        Ok(d) => d,
        Err(e) => return fail(&format!("{}: {e}", out.display())),
    };
    for problem in &upgraded.problems {
        println!("not mapped: {problem}");
    }
    println!(
        "wrote {} file(s) to {}; {} item(s) not mapped",
        upgraded.contents.files.len(),
        dir.display(),
        upgraded.problems.len()
    );
    ExitCode::SUCCESS
}
