//! `diagwire check --follow PATH`: the behavioural rules over a run directory while it is written
//! (a bundle directory, or a collector's staging directory). Findings are printed the moment they
//! are decided — Markdown lines for people, or with `--format json` one JSON object per line (a
//! finding each, then the report) — with a status line on a terminal. The follow ends once the
//! finalize record has landed and nothing has landed for the settle time, at `--until`, or on
//! Ctrl-C, each time with the report of what was read; the exit status is `check`'s.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use diagwire::bundle::read::Limits;
use diagwire::problem::printable;
use diagwire_check::follow::Follower;
use diagwire_check::output::{CheckOutput, FollowLine};
use diagwire_check::{Finding, Monitor, Rulebook};

use crate::behaviour::{Format, print_json_line};

/// How often the directory is listed: well under the quarter second a finding may take to show.
const POLL: Duration = Duration::from_millis(50);

/// When the follow ends.
#[derive(Debug, Clone, Copy)]
pub struct Until {
    /// Quiet time after the finalize record before the run counts as over.
    pub settle: Duration,
    /// The longest the follow may take, if any.
    pub until: Option<Duration>,
}

/// Why the follow ended.
enum End {
    Settled,
    Deadline,
    Interrupted,
}

/// `diagwire check --follow PATH`. Exit status: 0 when no violation, 1 otherwise, 2 when PATH
/// cannot be followed.
pub fn follow(path: &Path, until: Until, format: Format) -> ExitCode {
    let mut follower = match Follower::new(path, Limits::default()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {}", printable(&e));
            return ExitCode::from(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // Without a handler (another one is set) Ctrl-C ends the process as usual.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    let rulebook = Rulebook::builtin();
    let run = follower
        .root()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shown = follower.root().display().to_string();
    let mut monitor = Monitor::with(
        &rulebook,
        &run,
        diagwire_check::Options::default(),
        diagwire_check::Nodes::ManifestOrSeen,
    );
    let status = std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut last_landing = Instant::now();
    let mut files = 0u64;
    let end = loop {
        let landed = follower.poll(&mut monitor, until.settle);
        files += landed.files;
        if landed.files > 0 {
            last_landing = Instant::now();
        }
        let decided = monitor.decided();
        if status && !decided.is_empty() {
            clear_status();
        }
        for f in &decided {
            print_finding(f, format);
        }
        if status {
            show_status(&shown, files, &monitor);
        }
        if stop.load(Ordering::SeqCst) {
            break End::Interrupted;
        }
        if until.until.is_some_and(|d| started.elapsed() >= d) {
            break End::Deadline;
        }
        if follower.finalized && last_landing.elapsed() >= until.settle {
            break End::Settled;
        }
        std::thread::sleep(POLL);
    };
    follower.finish(&mut monitor);
    if status {
        clear_status();
    }
    let decided = monitor.decided();
    let report = monitor.finish();
    // Findings decided only at the end (they need the whole run) are printed with the report.
    match format {
        Format::Md => {
            for f in &decided {
                print_finding(f, format);
            }
            println!();
            match end {
                End::Settled => {}
                End::Deadline => {
                    println!("_Stopped at `--until`: the report covers what had landed._\n")
                }
                End::Interrupted => println!("_Interrupted: the report covers what had landed._\n"),
            }
            print!("{}", report.to_markdown());
        }
        Format::Json => {
            for f in &decided {
                print_finding(f, format);
            }
            print_json_line(&FollowLine::report(
                CheckOutput::new(&report, None, None, None),
                match end {
                    End::Settled => "settled",
                    End::Deadline => "until",
                    End::Interrupted => "interrupted",
                },
            ));
        }
    }
    let _ = std::io::stdout().flush();
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print_finding(f: &Finding, format: Format) {
    match format {
        Format::Md => println!("{}", f.to_markdown_line()),
        Format::Json => print_json_line(&FollowLine::finding(f)),
    }
    let _ = std::io::stdout().flush();
}

fn clear_status() {
    eprint!("\r\x1b[2K");
}

fn show_status(path: &str, files: u64, monitor: &Monitor<'_>) {
    let p = monitor.progress();
    eprint!(
        "\r\x1b[2Kfollowing {}: {} file(s), {} record(s); {} of {} rule(s) failed, {} finding(s)",
        printable(path),
        files,
        p.records,
        p.rules_failed,
        p.rules,
        p.findings
    );
}
