//! Writes the golden bundle of a release when it is cut: `-- <version>`. Refuses to overwrite one.

use std::process::ExitCode;

use diagwire_compat_tests::golden;

fn main() -> ExitCode {
    let Some(version) = std::env::args().nth(1) else {
        eprintln!("usage: make_golden_bundle <version>");
        return ExitCode::from(2);
    };
    let path = golden::path(&version);
    if path.exists() {
        eprintln!(
            "{} exists; golden bundles are never rewritten",
            path.display()
        );
        return ExitCode::from(1);
    }
    let bundle = golden::bundle_for(&version);
    let mut bytes = Vec::new();
    if let Err(e) = diagwire::bundle::output::write_tar_gz(&bundle, &mut bytes) {
        eprintln!("{e}");
        return ExitCode::from(1);
    }
    if let Err(e) = std::fs::create_dir_all(path.parent().expect("a fixtures folder"))
        .and_then(|()| std::fs::write(&path, &bytes))
    {
        eprintln!("{}: {e}", path.display());
        return ExitCode::from(1);
    }
    println!(
        "wrote {} ({} files, {} bytes)",
        path.display(),
        bundle.files.len(),
        bytes.len()
    );
    ExitCode::SUCCESS
}
