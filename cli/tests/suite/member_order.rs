//! A bundle's archive reads the same whatever order it holds its members in: the `validate`
//! report, the summary's JSON and the `check` rule tables of the same bundle archived in name order
//! (as the collector writes it), in the order `tar czf` of its directory gives, and in reverse (the
//! manifest last) are the same, for a bundle whose files the reader keeps in memory (the example
//! run) and one it keeps in a temporary file (a generated run of 6 MB). One case per command, each
//! through [`same_for_every_order`].

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use diagwire_testkit::bundles::{MB, Template};
use diagwire_testkit::orders::{MemberOrder, unpack, write_tar_gz_in_order};

use crate::common;
use common::{diagwire, repo, text};

/// One bundle archived in every order: `(order, archive)`, every archive with the same file name
/// (in a directory of its own), so that the locations in the reports are spelled alike.
struct Archived {
    name: &'static str,
    archives: Vec<(MemberOrder, PathBuf)>,
}

/// The bundles, archived once for the whole file.
fn bundles() -> &'static [Archived] {
    static DIR: OnceLock<(tempfile::TempDir, Vec<Archived>)> = OnceLock::new();
    let (_, bundles) = DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("temp dir");
        let generated = tmp.path().join("generated.tar.gz");
        Template::new()
            .write_run(6 * MB, &generated, "bench-6mb")
            .expect("the bundle is generated");
        let unpacked = unpack(&generated, &tmp.path().join("unpacked")).expect("unpacks");
        let runs: [(&'static str, PathBuf); 2] = [
            (
                "the example run",
                repo().join("examples/bundles/n3-relay-flap"),
            ),
            ("a run of 6 MB", unpacked),
        ];
        let mut bundles = Vec::new();
        for (i, (name, run_dir)) in runs.into_iter().enumerate() {
            let run_id = run_dir
                .file_name()
                .and_then(|n| n.to_str())
                .expect("a run directory name")
                .to_owned();
            let mut archives = Vec::new();
            for (j, order) in MemberOrder::ALL.into_iter().enumerate() {
                let dir = tmp.path().join(format!("bundle-{i}-order-{j}"));
                std::fs::create_dir_all(&dir).expect("a directory");
                let archive = dir.join(format!("{run_id}.tar.gz"));
                write_tar_gz_in_order(&run_dir, &run_id, order, &archive).expect("archived");
                archives.push((order, archive));
            }
            let names: Vec<Vec<String>> = archives.iter().map(|(_, a)| member_names(a)).collect();
            assert!(
                names[0].first().is_some_and(|n| n.ends_with("/"))
                    && names[0]
                        .get(1)
                        .is_some_and(|n| n.ends_with("/MANIFEST.json")),
                "name order starts with the run directory and its manifest: {:?}",
                &names[0][..2]
            );
            assert!(
                names[1..].iter().all(|other| *other != names[0]),
                "every other order differs from name order"
            );
            assert!(
                names[2].last().is_some_and(|n| n.ends_with("/")),
                "reverse order ends with the run directory"
            );
            bundles.push(Archived { name, archives });
        }
        (tmp, bundles)
    });
    bundles
}

/// The names of an archive's members, in its order.
fn member_names(archive: &Path) -> Vec<String> {
    let file = std::fs::File::open(archive).expect("the archive opens");
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    tar.entries()
        .expect("entries")
        .map(|e| {
            let e = e.expect("an entry");
            e.path().expect("a path").display().to_string()
        })
        .collect()
}

/// Runs `diagwire <args> <archive>` on every archive of every bundle: the exit status and the
/// output (the archive's directory spelled `{dir}`) must be those of the name order.
#[track_caller]
fn same_for_every_order(args: &[&str]) {
    for bundle in bundles() {
        let mut runs = Vec::new();
        for (order, archive) in &bundle.archives {
            let path = archive.to_str().expect("UTF-8 path");
            let dir = archive.parent().and_then(Path::to_str).expect("UTF-8 dir");
            let mut all = args.to_vec();
            all.push(path);
            let o = diagwire(&all);
            let out = text(&o.stdout).replace(dir, "{dir}");
            assert!(
                !out.trim().is_empty(),
                "`diagwire {}` printed nothing for {} in {}: {}",
                args.join(" "),
                bundle.name,
                order.name(),
                text(&o.stderr)
            );
            runs.push((order, o.status.code(), out));
        }
        let (_, status, out) = &runs[0];
        for (order, other_status, other) in &runs[1..] {
            assert_eq!(
                (other_status, other),
                (status, out),
                "`diagwire {}` of {} in {} differs from name order",
                args.join(" "),
                bundle.name,
                order.name()
            );
        }
    }
}

#[test]
fn the_validate_report_is_the_same_for_every_member_order() {
    same_for_every_order(&["validate", "--format", "json"]);
}

#[test]
fn the_summary_json_is_the_same_for_every_member_order() {
    same_for_every_order(&["summary", "--format", "json"]);
}

#[test]
fn the_check_rule_table_is_the_same_for_every_member_order() {
    same_for_every_order(&["check"]);
}

#[test]
fn the_check_coverage_table_is_the_same_for_every_member_order() {
    same_for_every_order(&["check", "--coverage"]);
}
