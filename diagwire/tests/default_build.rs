//! The default build of the library pulls in serde and serde_json only, so swactor's node and
//! simulator pay nothing else for the contract types.

use std::process::Command;

fn direct_dependencies(package: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--depth",
            "1",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn default_library_build_depends_only_on_serde_and_serde_json() {
    let allowed = [
        "serde",
        "serde_json",
        "diagwire-generated",
        "diagwire-runtime",
    ];
    for package in ["diagwire", "diagwire-generated", "diagwire-runtime"] {
        let deps = direct_dependencies(package);
        let extra: Vec<&String> = deps
            .iter()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "`{package}` depends on {extra:?} in its default build"
        );
    }
}
