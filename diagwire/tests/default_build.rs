//! The default build of the library pulls in serde and serde_json only (and what they need), so
//! swactor's node and simulator pay nothing else for the contract types.

use std::process::Command;

/// Every package of the normal-dependency tree of `package` in its default build, itself included:
/// `cargo tree -p <package> -e normal --prefix none`, without the network.
fn dependency_tree(package: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
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
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// What the default build may depend on, at any depth.
const ALLOWED: &[&str] = &[
    // The diagwire crates.
    "diagwire",
    "diagwire-generated",
    "diagwire-runtime",
    // serde and its derive macro, with the macro's own dependencies.
    "serde",
    "serde_core",
    "serde_derive",
    "proc-macro2",
    "quote",
    "syn",
    "unicode-ident",
    // serde_json's dependencies (`zmij` formats floats).
    "serde_json",
    "itoa",
    "memchr",
    "zmij",
];

/// What the optional features bring, which the default build must never reach.
const FEATURE_ONLY: &[&str] = &[
    "jsonschema",
    "clap",
    "tar",
    "flate2",
    "indicatif",
    "prost",
    "diagwire-proto",
];

#[test]
fn default_library_build_depends_only_on_serde_and_serde_json() {
    for package in ["diagwire", "diagwire-generated", "diagwire-runtime"] {
        let tree = dependency_tree(package);
        assert!(
            tree.iter().any(|p| p == "serde_json") && tree.contains(&package.to_owned()),
            "`cargo tree -p {package}` listed {tree:?}"
        );
        let forbidden: Vec<&String> = tree
            .iter()
            .filter(|p| FEATURE_ONLY.contains(&p.as_str()))
            .collect();
        assert!(
            forbidden.is_empty(),
            "the default build of `{package}` depends on {forbidden:?}"
        );
        let unexpected: Vec<&String> = tree
            .iter()
            .filter(|p| !ALLOWED.contains(&p.as_str()))
            .collect();
        assert!(
            unexpected.is_empty(),
            "the default build of `{package}` depends on {unexpected:?}, which is not serde, \
             serde_json or what they need"
        );
    }
}
