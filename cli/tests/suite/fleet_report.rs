//! `diagwire fleet DATASET`: the report of a dataset exported from the example bundles in each
//! format (the JSON meets its checked-in schema), a missing or invalid dataset as a located error
//! with exit status 2, hostile strings from a bundle escaped on the terminal and in the HTML, and
//! the HTML page loaded in headless Chromium with no console error and its plots rendered.
//! Without the feature `fleet` the command says how to build it.
//!
//! The browser case needs Chromium (`chromium` or `chromium-browser` on the `PATH`, or the
//! program named by `CHROMIUM`); where there is none it fails, unless `DIAGWIRE_SKIP_BROWSER=1`
//! says to skip it.

use crate::common;
use common::{diagwire, text};

#[cfg(not(feature = "fleet"))]
#[test]
fn without_the_feature_the_command_says_how_to_build_it() {
    let out = diagwire(&["fleet", "some-dataset"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("built without the feature `fleet`"), "{err}");
    assert!(err.contains("--features fleet"), "{err}");
}

#[cfg(feature = "fleet")]
mod with_fleet {
    use super::*;
    use common::repo;
    use serde_json::Value;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// A dataset of `bundles`, exported with the command.
    fn dataset(bundles: &[&Path]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut args: Vec<String> = vec!["export".into()];
        args.extend(bundles.iter().map(|b| b.display().to_string()));
        args.extend(["--to".into(), data.display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = diagwire(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        dir
    }

    fn examples() -> tempfile::TempDir {
        let root = repo();
        dataset(&[
            &root.join("examples/bundles/n3-relay-flap"),
            &root.join("examples/bundles/n3-relay-flap-oldest"),
        ])
    }

    fn report(dir: &Path, format: &str) -> String {
        let data = dir.join("data");
        let out = diagwire(&["fleet", &data.to_string_lossy(), "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    }

    /// The section headings every rendering has.
    const SECTIONS: &[&str] = &[
        "Runs over time",
        "Fault reasons",
        "Dial failure rate by provider, datacenter and country",
        "Relay closes by initiator and reason",
        "Probe RTT by region pair",
        "Subprocess buckets",
        "Contract versions and writers seen",
    ];

    #[test]
    fn the_markdown_has_every_section_and_the_examples_numbers() {
        let dir = examples();
        let md = report(dir.path(), "md");
        assert!(md.starts_with("# Fleet report\n"), "{md}");
        assert!(md.contains("2 run(s) in the dataset."), "{md}");
        for s in SECTIONS {
            assert!(md.contains(&format!("## {s}\n")), "{s}: {md}");
        }
        // The oldest-generation example names no writer and declares no contract version.
        assert!(md.contains("not declared (read as 1.0.0)"), "{md}");
        assert!(
            md.contains("| 1.3.0 | sim | diagwire-example | 0.1.0 | 1 |"),
            "{md}"
        );
    }

    #[test]
    fn the_json_meets_its_checked_in_schema() {
        let dir = examples();
        let json: Value = serde_json::from_str(&report(dir.path(), "json")).unwrap();
        let path = repo().join("schemas/tools/fleet.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        assert_eq!(
            json["format_version"],
            schema["properties"]["format_version"]["const"]
        );
        assert_eq!(json["runs"], 2);
    }

    #[test]
    fn out_writes_the_report_to_a_file() {
        let dir = examples();
        let page = dir.path().join("fleet.html");
        let data = dir.path().join("data");
        let out = diagwire(&[
            "fleet",
            &data.to_string_lossy(),
            "--format",
            "html",
            "--out",
            &page.to_string_lossy(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty());
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    }

    /// One way the dataset argument can be wrong: the arguments' tail after `fleet`, and what
    /// the error must say.
    struct BadDataset {
        name: &'static str,
        setup: fn(&Path) -> PathBuf,
        says: &'static str,
    }

    const BAD_DATASETS: &[BadDataset] = &[
        BadDataset {
            name: "a_missing_folder",
            setup: |d| d.join("nowhere"),
            says: "not a dataset (no _dataset.json)",
        },
        BadDataset {
            name: "a_folder_without_an_index",
            setup: |d| d.to_path_buf(),
            says: "not a dataset (no _dataset.json)",
        },
        BadDataset {
            name: "an_index_that_is_not_json",
            setup: |d| {
                std::fs::write(d.join("_dataset.json"), "{not json").unwrap();
                d.to_path_buf()
            },
            says: "_dataset.json",
        },
    ];

    fn check_bad_dataset(case: &BadDataset) {
        let dir = tempfile::tempdir().unwrap();
        let path = (case.setup)(dir.path());
        let out = diagwire(&["fleet", &path.to_string_lossy()]);
        assert_eq!(out.status.code(), Some(2), "{}", case.name);
        let err = text(&out.stderr);
        assert!(
            err.starts_with("error: ") && err.contains(&*path.to_string_lossy()),
            "{}: {err}",
            case.name
        );
        assert!(err.contains(case.says), "{}: {err}", case.name);
        assert!(out.stdout.is_empty(), "{}", case.name);
    }

    #[test]
    fn a_missing_or_invalid_dataset_is_a_located_error_with_status_2() {
        for case in BAD_DATASETS {
            check_bad_dataset(case);
        }
    }

    const HOSTILE: &str = "<script>alert(1)</script>\u{1b}[31mred\u{7}\u{202e}";

    /// The example bundle with a hostile provider, datacenter and country in every boot record
    /// and a hostile writer name in its manifest.
    fn hostile_bundle(dir: &Path) -> PathBuf {
        let src = repo().join("examples/bundles/n3-relay-flap");
        let dst = dir.join("n3-relay-flap");
        copy_dir(&src, &dst);
        for entry in std::fs::read_dir(&dst).unwrap() {
            let boot = entry.unwrap().path().join("boot.json");
            if !boot.is_file() {
                continue;
            }
            let mut v: Value =
                serde_json::from_str(&std::fs::read_to_string(&boot).unwrap()).unwrap();
            for key in ["host_provider", "datacenter_id", "host_country"] {
                v[key] = Value::String(format!("{key} {HOSTILE}"));
            }
            std::fs::write(&boot, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        }
        let manifest = dst.join("MANIFEST.json");
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        v["writer"]["name"] = Value::String(HOSTILE.into());
        std::fs::write(&manifest, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        dst
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }

    fn hidden(s: &str) -> Option<char> {
        s.chars()
            .find(|c| (c.is_control() && *c != '\n') || *c == '\u{202e}')
    }

    #[test]
    fn hostile_strings_reach_neither_the_terminal_nor_the_page_raw() {
        let tmp = tempfile::tempdir().unwrap();
        let bundle = hostile_bundle(tmp.path());
        let dir = dataset(&[&bundle]);
        let md = report(dir.path(), "md");
        assert_eq!(hidden(&md), None, "{md}");
        assert!(
            md.contains("host_provider <script>"),
            "the value is not shown: {md}"
        );
        assert!(md.contains("\\u{1b}[31mred"), "{md}");
        let html = report(dir.path(), "html");
        assert_eq!(hidden(&html), None);
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        let json = report(dir.path(), "json");
        assert_eq!(hidden(&json), None, "{json}");
        let v: Value = serde_json::from_str(&json).unwrap();
        assert!(
            v["writers"][0]["writer_name"].as_str() == Some(HOSTILE),
            "JSON keeps the exact string: {json}"
        );
    }

    fn chromium() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("CHROMIUM") {
            return Some(PathBuf::from(p));
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
            .find(|p| p.is_file())
    }

    /// Runs Chromium headless with `args` on `page`, within two minutes; its standard output
    /// and error.
    fn headless(work: &Path, args: &[&str], page: &Path) -> (String, String) {
        let browser = chromium().expect("chromium");
        let mut child = Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1280,2400",
            ])
            .arg(format!(
                "--user-data-dir={}",
                work.join("profile").display()
            ))
            .args(args)
            .arg(format!("file://{}", page.display()))
            .stdout(std::fs::File::create(work.join("out")).unwrap())
            .stderr(std::fs::File::create(work.join("err")).unwrap())
            .spawn()
            .expect("start chromium");
        let started = std::time::Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if started.elapsed() > std::time::Duration::from_secs(120) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within two minutes");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        (
            std::fs::read_to_string(work.join("out")).unwrap_or_default(),
            std::fs::read_to_string(work.join("err")).unwrap_or_default(),
        )
    }

    #[test]
    fn the_page_loads_in_headless_chromium_with_its_plots_and_no_console_error() {
        if chromium().is_none() {
            assert!(
                std::env::var("DIAGWIRE_SKIP_BROWSER").as_deref() == Ok("1"),
                "no Chromium found (install the `chromium` package, or name it in CHROMIUM); \
                 DIAGWIRE_SKIP_BROWSER=1 skips this test"
            );
            eprintln!("skipped: no Chromium and DIAGWIRE_SKIP_BROWSER=1");
            return;
        }
        let dir = examples();
        let page = dir.path().join("fleet.html");
        std::fs::write(&page, report(dir.path(), "html")).unwrap();
        let (dom, console) = headless(
            dir.path(),
            &["--enable-logging=stderr", "--v=0", "--dump-dom"],
            &page,
        );
        let errors: Vec<&str> = console
            .lines()
            .filter(|l| {
                (l.contains("CONSOLE(")
                    || l.contains("Uncaught")
                    || (l.contains("ERROR:")
                        && (l.contains("console") || l.contains("Failed to load"))))
                    && !l.contains("dbus")
            })
            .collect();
        assert!(
            errors.is_empty(),
            "the page logged errors:\n{}",
            errors.join("\n")
        );
        for id in [
            "runs-over-time",
            "fault-reasons",
            "dial-failure-rate",
            "relay-closes",
            "probe-rtt-by-region",
            "subprocess-buckets",
            "contract-versions-and-writers",
        ] {
            assert!(
                dom.contains(&format!("<section id=\"{id}\">")),
                "no section #{id} in the rendered page"
            );
        }
        // One plot each: runs per day, dial failure rate, RTT quantiles per region pair.
        assert_eq!(dom.matches("<svg").count(), 3, "{dom}");
        assert!(dom.matches("<rect").count() >= 6, "the plots drew no bars");
    }
}
