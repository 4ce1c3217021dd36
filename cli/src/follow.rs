//! `diagwire check --follow PATH`: the behavioural rules over a run directory while it is written
//! (a bundle directory, a collector's staging directory, or a staging root, waited on until its
//! first run appears), or over a collector's live stream
//! (`http://HOST:PORT/diag/stream/{run_id}`, with the feature `serve`), read from the run's first
//! record whenever the follow attaches. Findings are printed the moment they are decided —
//! Markdown lines for people, or with `--format json` one JSON object per line (a finding each,
//! then the report) — with a status line on a terminal. The follow ends when the collector sends
//! the stream's `end`, once the finalize record has landed and nothing has landed for the settle
//! time, at `--until`, or on Ctrl-C, each time with the report of what was read. The exit status is
//! `check`'s (0 no violation, 1 a violation), or 2 when the report does not cover the whole run:
//! records the follow could not have, a stream that ended before the run did, a follow stopped
//! before the finalize, no run found. The report then says why and names the rules whose pass it
//! cannot vouch for.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use diagwire::bundle::read::Limits;
use diagwire::problem::printable;
use diagwire_check::follow::{Follower, Landed};
use diagwire_check::output::{CheckOutput, FollowLine, Incomplete};
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
    /// The run's name, for the report; `None` while no run is known (a staging root before its
    /// first run).
    fn name(&self) -> Option<String>;
    /// What it is, as shown.
    fn shown(&self) -> String;
    /// Looks for the run while none is known; an error ends the follow (several runs).
    fn find(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Feeds what arrived since the last call; waits at most one poll period.
    fn poll(&mut self, monitor: &mut Monitor<'_>, settle: Duration) -> Landed;
    /// Whether the run's finalize record has arrived.
    fn finalized(&self) -> bool;
    /// Whether nothing more can arrive (a stream the collector closed).
    fn closed(&self) -> bool {
        false
    }
    /// Whether the source said the run is over and every record was sent (the collector's `end`).
    fn ended(&self) -> bool {
        false
    }
    /// What of the run this follow could not read: why, and how many records when known.
    fn missing(&self) -> Option<(String, Option<u64>)> {
        None
    }
    /// Ends the follow: reports what is still pending.
    fn finish(&mut self, monitor: &mut Monitor<'_>);
}

impl Source for Follower {
    fn name(&self) -> Option<String> {
        if self.waiting() {
            return None;
        }
        Some(dir_name(self.root()))
    }
    fn shown(&self) -> String {
        self.root().display().to_string()
    }
    fn find(&mut self) -> Result<(), String> {
        self.find_run()
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

fn dir_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Why the follow ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Settled,
    Closed,
    Deadline,
    Interrupted,
}

/// `diagwire check --follow PATH`. Exit status: 0 when the whole run was read without a
/// violation, 1 when it was read and has one, 2 when PATH cannot be followed or the report
/// does not cover the whole run (records missing, no run found, stopped before its end).
pub fn follow(path: &Path, until: Until, format: Format) -> ExitCode {
    // Ctrl-C and `--until` are honoured from the start, while a collector is being reached too.
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // Without a handler (another one is set) Ctrl-C ends the process as usual.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    let started = Instant::now();
    let give_up =
        || stop.load(Ordering::SeqCst) || until.until.is_some_and(|d| started.elapsed() >= d);
    let text = path.to_string_lossy();
    let source: Result<Box<dyn Source>, String> =
        if text.starts_with("http://") || text.starts_with("https://") {
            stream::open(&text, &give_up)
        } else {
            Follower::new(path, Limits::default()).map(|f| Box::new(f) as Box<dyn Source>)
        };
    match source {
        Ok(source) => run(source, until, format, &stop, started),
        Err(e) => crate::fail(&e),
    }
}

fn run(
    mut source: Box<dyn Source>,
    until: Until,
    format: Format,
    stop: &AtomicBool,
    started: Instant,
) -> ExitCode {
    let status = std::io::stderr().is_terminal();
    let deadline = || until.until.is_some_and(|d| started.elapsed() >= d);
    // A staging root with no run yet: wait for the first.
    let mut said = false;
    let waited = loop {
        if let Err(e) = source.find() {
            if said && status {
                clear_status();
            }
            return crate::fail(&e);
        }
        if source.name().is_some() {
            break None;
        }
        if !said {
            let line = format!("waiting for a run in {}", printable(&source.shown()));
            if status {
                eprint!("\r\x1b[2K{line}");
            } else {
                eprintln!("{line}");
            }
            said = true;
        }
        if stop.load(Ordering::SeqCst) {
            break Some(End::Interrupted);
        }
        if deadline() {
            break Some(End::Deadline);
        }
        std::thread::sleep(POLL);
    };
    if said && status {
        clear_status();
    }
    let rulebook = Rulebook::builtin();
    let found = waited.is_none();
    let run = source
        .name()
        .unwrap_or_else(|| dir_name(Path::new(&source.shown())));
    let shown = source.shown();
    let mut monitor = Monitor::with(
        &rulebook,
        &run,
        diagwire_check::Options::default(),
        diagwire_check::Nodes::ManifestOrSeen,
    );
    let mut last_landing = Instant::now();
    let mut files = 0u64;
    let end = match waited {
        Some(end) => end,
        None => loop {
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
            if source.ended() {
                break End::Settled;
            }
            if deadline() {
                break End::Deadline;
            }
            if source.finalized() && last_landing.elapsed() >= until.settle {
                break End::Settled;
            }
            if source.closed() {
                break End::Closed;
            }
        },
    };
    source.finish(&mut monitor);
    if status {
        clear_status();
    }
    let decided = monitor.decided();
    let report = monitor.finish();
    let incomplete = incomplete(source.as_ref(), found, end)
        .map(|(why, missing)| Incomplete::new(&report, why, missing));
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
            if let Some(incomplete) = &incomplete {
                println!("{}", incomplete.to_markdown());
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
                incomplete.clone(),
            ));
        }
    }
    let _ = std::io::stdout().flush();
    if incomplete.is_some() {
        ExitCode::from(2)
    } else if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Why the report does not cover the whole run, and how many records are missing when known;
/// `None` when it does (the run was read to its end, every record of it).
fn incomplete(source: &dyn Source, found: bool, end: End) -> Option<(String, Option<u64>)> {
    if !found {
        return Some((format!("no run appeared in {}", source.shown()), None));
    }
    let mut why = Vec::new();
    let mut count = None;
    if let Some((what, n)) = source.missing() {
        why.push(what);
        count = n;
    }
    if !source.ended() && !source.finalized() {
        why.push(
            match end {
                End::Deadline => "stopped at `--until` before the run's finalize record",
                End::Interrupted => "interrupted before the run's finalize record",
                End::Closed | End::Settled => "the stream closed before the run's finalize record",
            }
            .to_owned(),
        );
    }
    (!why.is_empty()).then(|| (why.join("; "), count))
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

/// A collector's live stream as a source (`diagwire serve`'s `/diag/stream/{run_id}`), read from
/// the run's first record (the collector reads back from staging what it no longer keeps in
/// memory) unless the URL's query resumes it (`?from=N`), until the collector's `end` event.
#[cfg(feature = "serve")]
mod stream {
    use std::time::Duration;

    use diagwire::Location;
    use diagwire::problem::{Problem, ProblemKind, printable};
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
        /// The stream id the follow started after (`?from=N`), when not the run's start.
        from: Option<u64>,
        finalized: bool,
        closed: bool,
        ended: bool,
        /// Records the collector said it could not give.
        skipped: u64,
        /// Why the stream failed, if it did.
        failed: Option<String>,
    }

    /// The URL, run id and resume point of a live stream's URL
    /// (`http://HOST:PORT[/base]/diag/stream/{run_id}[?from=N]`).
    pub(crate) fn parse(url: &str) -> Result<(url::Url, String, Option<u64>), String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("{url}: not a URL: {e}"))?;
        if parsed.scheme() != "http" {
            return Err(format!(
                "{url}: only http:// live streams are followed (`diagwire serve` speaks plain HTTP)"
            ));
        }
        let mut segments: Vec<&str> = parsed
            .path_segments()
            .map(|s| s.filter(|p| !p.is_empty()).collect())
            .unwrap_or_default();
        let run = segments.pop().unwrap_or_default().to_owned();
        if segments.last() != Some(&"stream") || run.is_empty() {
            return Err(format!(
                "{url}: not a live stream's URL (`http://HOST:PORT/diag/stream/RUN_ID`)"
            ));
        }
        let mut from = None;
        for (key, value) in parsed.query_pairs() {
            if key == "from" {
                from = Some(value.parse::<u64>().map_err(|_| {
                    format!("{url}: `from` must be a stream id (a whole number), not {value:?}")
                })?);
            }
        }
        Ok((parsed, run, from))
    }

    /// Subscribes to `url`, giving up when `give_up` says so.
    pub fn open(url: &str, give_up: &dyn Fn() -> bool) -> Result<Box<dyn Source>, String> {
        let (parsed, run, from) = parse(url)?;
        // Without `from` in the query, the run from its first record (`Last-Event-ID: 0`).
        let resume = if from.is_some() { None } else { Some(0) };
        let follow = client::follow_unless(parsed.as_str(), resume, give_up)
            .map_err(|e| format!("{}: {}", printable(url), printable(&e.0)))?;
        Ok(Box::new(Stream {
            url: parsed.to_string(),
            run,
            follow,
            from: from.filter(|&f| f > 0),
            finalized: false,
            closed: false,
            ended: false,
            skipped: 0,
            failed: None,
        }))
    }

    impl Source for Stream {
        fn name(&self) -> Option<String> {
            Some(self.run.clone())
        }
        fn shown(&self) -> String {
            self.url.clone()
        }
        fn poll(&mut self, monitor: &mut Monitor<'_>, _settle: Duration) -> Landed {
            let mut landed = Landed::default();
            let mut wait = POLL;
            while !self.closed {
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
                                format!(
                                    "not a {} record: {}",
                                    record.kind,
                                    printable(&e.to_string())
                                ),
                            )),
                        }
                    }
                    Ok(StreamEvent::Lagged { skipped }) => self.skipped += skipped,
                    Ok(StreamEvent::End { .. }) => {
                        self.ended = true;
                        self.closed = true;
                    }
                    Err(e) => {
                        self.failed = Some(format!("the live stream failed: {}", printable(&e.0)));
                        self.closed = true;
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
        fn ended(&self) -> bool {
            self.ended
        }
        fn missing(&self) -> Option<(String, Option<u64>)> {
            let mut why = Vec::new();
            let mut count = 0;
            if let Some(from) = self.from {
                why.push(format!(
                    "the follow started after stream id {from} (`from`): the records before it were not read"
                ));
                count += from;
            }
            if self.skipped > 0 {
                why.push(format!(
                    "the collector could not give {} record(s) (their staged files are gone or do not read)",
                    self.skipped
                ));
                count += self.skipped;
            }
            let known = self.failed.is_none();
            why.extend(self.failed.clone());
            (!why.is_empty()).then(|| (why.join("; "), known.then_some(count)))
        }
        fn finish(&mut self, _monitor: &mut Monitor<'_>) {}
    }
}

/// Without the collector's client, a live stream cannot be followed.
#[cfg(not(feature = "serve"))]
mod stream {
    use super::Source;

    pub fn open(url: &str, _give_up: &dyn Fn() -> bool) -> Result<Box<dyn Source>, String> {
        Err(format!(
            "{url}: this build of diagwire follows a live stream only with the feature `serve` (cargo install --path cli --features serve)"
        ))
    }
}

#[cfg(all(test, feature = "serve"))]
mod tests {
    /// A live stream's URL is read as a URL: its run id is the last path segment, its query
    /// string says where to resume; anything else is refused with the reason.
    #[test]
    fn a_stream_url_is_read_as_a_url() {
        /// The run id and `from` read, or a part of the refusal's reason.
        type Read<'a> = Result<(&'a str, Option<u64>), &'a str>;
        let cases: [(&str, Read<'_>); 8] = [
            ("http://127.0.0.1:7/diag/stream/r-1", Ok(("r-1", None))),
            ("http://127.0.0.1:7/diag/stream/r-1/", Ok(("r-1", None))),
            (
                "http://127.0.0.1:7/diag/stream/r-1?from=0",
                Ok(("r-1", Some(0))),
            ),
            (
                "http://h:7/base/diag/stream/r?x=1&from=42",
                Ok(("r", Some(42))),
            ),
            ("http://h:7/diag/stream/r#frag", Ok(("r", None))),
            (
                "http://h:7/diag/stream/r?from=x",
                Err("`from` must be a stream id"),
            ),
            ("http://h:7/diag/runs", Err("not a live stream's URL")),
            ("https://h/diag/stream/r", Err("only http://")),
        ];
        for (url, want) in cases {
            match (super::stream::parse(url), want) {
                (Ok((_, run, from)), Ok((want_run, want_from))) => {
                    assert_eq!((run.as_str(), from), (want_run, want_from), "{url}")
                }
                (Err(e), Err(part)) => assert!(e.contains(part), "{url}: {e}"),
                (got, want) => panic!("{url}: got {:?}, expected {want:?}", got.map(|g| g.1)),
            }
        }
    }
}
