//! `diagwire check --follow PATH`: the behavioural rules over a run directory while it is written
//! (a bundle directory, or a collector's staging directory), or over a collector's live stream
//! (`http://HOST:PORT/diag/stream/{run_id}`, with the feature `serve`). Findings are printed the
//! moment they are decided — Markdown lines for people, or with `--format json` one JSON object per line (a
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
use diagwire_check::follow::{Follower, Landed};
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

/// Where the records come from.
trait Source {
    /// The run's name, for the report.
    fn name(&self) -> String;
    /// What it is, as shown.
    fn shown(&self) -> String;
    /// Feeds what arrived since the last call; waits at most one poll period.
    fn poll(&mut self, monitor: &mut Monitor<'_>, settle: Duration) -> Landed;
    /// Whether the run's finalize record has arrived.
    fn finalized(&self) -> bool;
    /// Whether nothing more can arrive (a stream the collector closed).
    fn closed(&self) -> bool {
        false
    }
    /// Ends the follow: reports what is still pending.
    fn finish(&mut self, monitor: &mut Monitor<'_>);
}

impl Source for Follower {
    fn name(&self) -> String {
        self.root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
    fn shown(&self) -> String {
        self.root().display().to_string()
    }
    fn poll(&mut self, monitor: &mut Monitor<'_>, settle: Duration) -> Landed {
        let landed = Follower::poll(self, monitor, settle);
        if landed.files == 0 {
            std::thread::sleep(POLL);
        }
        landed
    }
    fn finalized(&self) -> bool {
        self.finalized
    }
    fn finish(&mut self, monitor: &mut Monitor<'_>) {
        Follower::finish(self, monitor);
    }
}

/// Why the follow ended.
enum End {
    Settled,
    Closed,
    Deadline,
    Interrupted,
}

/// `diagwire check --follow PATH`. Exit status: 0 when no violation, 1 otherwise, 2 when PATH
/// cannot be followed.
pub fn follow(path: &Path, until: Until, format: Format) -> ExitCode {
    let text = path.to_string_lossy();
    let source: Result<Box<dyn Source>, String> =
        if text.starts_with("http://") || text.starts_with("https://") {
            stream::open(&text)
        } else {
            Follower::new(path, Limits::default()).map(|f| Box::new(f) as Box<dyn Source>)
        };
    match source {
        Ok(source) => run(source, until, format),
        Err(e) => {
            eprintln!("error: {}", printable(&e));
            ExitCode::from(2)
        }
    }
}

fn run(mut source: Box<dyn Source>, until: Until, format: Format) -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // Without a handler (another one is set) Ctrl-C ends the process as usual.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    let rulebook = Rulebook::builtin();
    let run = source.name();
    let shown = source.shown();
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
        let landed = source.poll(&mut monitor, until.settle);
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
        if source.finalized() && last_landing.elapsed() >= until.settle {
            break End::Settled;
        }
        if source.closed() {
            break End::Closed;
        }
    };
    source.finish(&mut monitor);
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
                End::Closed => println!("_The stream ended: the report covers what arrived._\n"),
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
                    End::Closed => "closed",
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

/// A collector's live stream as a source (`diagwire serve`'s `/diag/stream/{run_id}`).
#[cfg(feature = "serve")]
mod stream {
    use std::time::Duration;

    use diagwire::Location;
    use diagwire::problem::{Problem, ProblemKind, ReadErrorKind, printable};
    use diagwire::v1::{Record, RecordKind as Kind};
    use diagwire_check::follow::Landed;
    use diagwire_check::{Fed, Monitor, RecordRef};
    use diagwire_serve::client::{self, Follow, StreamEvent, Waited};

    use super::{POLL, Source};

    /// The stream of one run.
    pub struct Stream {
        url: String,
        run: String,
        follow: Follow,
        finalized: bool,
        closed: bool,
    }

    /// Subscribes to `url`.
    pub fn open(url: &str) -> Result<Box<dyn Source>, String> {
        let follow = client::follow(url, None).map_err(|e| format!("{url}: {}", e.0))?;
        let run = url
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        Ok(Box::new(Stream {
            url: url.to_owned(),
            run,
            follow,
            finalized: false,
            closed: false,
        }))
    }

    impl Source for Stream {
        fn name(&self) -> String {
            self.run.clone()
        }
        fn shown(&self) -> String {
            self.url.clone()
        }
        fn poll(&mut self, monitor: &mut Monitor<'_>, _settle: Duration) -> Landed {
            let mut landed = Landed::default();
            let mut wait = POLL;
            loop {
                let item = match self.follow.wait(wait) {
                    Waited::Item(item) => item,
                    Waited::Nothing => break,
                    Waited::Ended => {
                        self.closed = true;
                        break;
                    }
                };
                wait = Duration::ZERO;
                match item {
                    Ok(StreamEvent::Record { id, record }) => {
                        landed.files += 1;
                        let at = Location::record(format!("{}#{id}", self.url), 0, "");
                        let kind = match record.kind.as_str() {
                            "boot" => Kind::Boot,
                            "events" => Kind::EventBatch,
                            "snapshot" => Kind::Snapshot,
                            "finalize" => Kind::Finalize,
                            _ => Kind::Vastai,
                        };
                        match Record::parse(kind, &record.body.0.to_string()) {
                            Ok(r) => {
                                if matches!(r, Record::Finalize(_)) {
                                    self.finalized = true;
                                }
                                landed.records += match &r {
                                    Record::EventBatch(b) => b.len() as u64,
                                    _ => 1,
                                };
                                monitor.take(&Fed {
                                    node: Some(&record.node_id),
                                    record: RecordRef::from(&r),
                                    text: None,
                                    location: at,
                                });
                            }
                            Err(e) => monitor.problem(&Problem::new(
                                ProblemKind::Parse,
                                at,
                                format!("not a {} record: {}", record.kind, printable(&e.to_string())),
                            )),
                        }
                    }
                    Ok(StreamEvent::Lagged { skipped }) => monitor.problem(&Problem::new(
                        ProblemKind::Read(ReadErrorKind::Io),
                        Location::file(&self.url),
                        format!(
                            "the live stream skipped {skipped} record(s) this follow could not keep up with; the run's bundle holds them"
                        ),
                    )),
                    Err(e) => {
                        monitor.problem(&Problem::new(
                            ProblemKind::Read(ReadErrorKind::Io),
                            Location::file(&self.url),
                            format!("the live stream failed: {}", printable(&e.0)),
                        ));
                        self.closed = true;
                        break;
                    }
                }
            }
            landed
        }
        fn finalized(&self) -> bool {
            self.finalized
        }
        fn closed(&self) -> bool {
            self.closed
        }
        fn finish(&mut self, _monitor: &mut Monitor<'_>) {}
    }
}

/// Without the collector's client, a live stream cannot be followed.
#[cfg(not(feature = "serve"))]
mod stream {
    use super::Source;

    pub fn open(url: &str) -> Result<Box<dyn Source>, String> {
        Err(format!(
            "{url}: this build of diagwire follows a live stream only with the feature `serve` (cargo install --path cli --features serve)"
        ))
    }
}
