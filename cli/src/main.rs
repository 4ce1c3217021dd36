//! The `diagwire` command-line tool.
//!
//! A command whose standard output (or error) is a pipe whose reader went away ends as `cat` does
//! there: killed by SIGPIPE at its next write, quietly (status 141 in a shell), whatever it was
//! printing. Rust programs ignore SIGPIPE and turn the failed write into a panic of `println!`;
//! [`main`] restores the signal's default disposition (the `sigpipe` crate, since the workspace
//! forbids `unsafe`) before running any command but `serve`, so this holds for every command and
//! every print at once. `serve` keeps SIGPIPE ignored: a collector never dies of a client's
//! closed socket.

use std::path::PathBuf;
use std::process::ExitCode;

mod behaviour;
mod convert;
mod fleet;
mod follow;
mod help;
mod output_schema;
mod replay;
mod review;
mod summary;
mod upgrade;
mod validate;

use clap::{Parser, Subcommand};
use diagwire::bundle::read::Limits;
use diagwire::units::parse_duration;
use diagwire::v1::RecordKind;

/// The swactor diagnostics wire contract: its schemas, a run's bundle, the collector, the fleet.
#[derive(Parser)]
#[command(name = "diagwire", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Classify every change between two schema trees under the review's rule catalog
    ///
    /// OLD and NEW are folders of schema files, `current` (`schemas/`) or frozen release versions
    /// (`1.0.0`). Each change gets a rule id, its effect on old readers of new records and new
    /// readers of old records, and the bump it needs; breaking changes come with a counterexample
    /// record confirmed by the readers. Exit status: 0 when the change needs at most a minor bump
    /// and everything is classified, 1 otherwise (naming the breaking rules), 2 on an error.
    Diff {
        /// The tree before.
        old: String,
        /// The tree after.
        new: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = review::Format::Md)]
        format: review::Format,
    },
    /// Review the working tree's schemas for a pull request (Markdown or JSON)
    ///
    /// The working tree is reviewed against the git revision BASE and against every frozen release of the current major version, with the required and declared
    /// version bump, the changelog and generated-code checks, and the rollout order per role.
    /// Prints Markdown ready to paste as a comment (or JSON); exit status 1 when the review fails.
    /// `--catalog` prints the review's rule catalog instead (the source of docs/review-rules.md).
    Review {
        /// The git revision the pull request is based on.
        #[arg(long, conflicts_with = "catalog")]
        base: Option<String>,
        /// Print the rule catalog the review classifies changes under, and review nothing.
        #[arg(long)]
        catalog: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = review::Format::Md)]
        format: review::Format,
    },
    /// Draft the CHANGELOG.md section of the next release
    ///
    /// From the changes since the last release.
    Changelog {
        /// The date of the heading (YYYY-MM-DD); today when left out.
        #[arg(long)]
        date: Option<String>,
        /// The release to start from; the newest when left out.
        #[arg(long)]
        since: Option<String>,
    },
    /// Run swactor's collector: ingest, assembly, bundles, the live stream
    ///
    /// The ingest routes, finalize and assembly, `GET /diag/bundle`, `/diag/runs` and the live stream `/diag/stream/{run_id}`, with every body checked against
    /// the contract at ingest and every post durable before it is acknowledged
    /// (`docs/collector.md`).
    #[cfg(feature = "serve")]
    Serve(diagwire_serve::ServeArgs),
    /// Run swactor's collector: ingest, assembly, bundles, the live stream
    ///
    /// `docs/collector.md`. This binary was built without it: build with the feature `serve`.
    #[cfg(not(feature = "serve"))]
    Serve {
        /// The arguments `diagwire serve` takes (`--root DIR --listen ADDR [--finalize-wait D]`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
    /// Post a bundle's records to a collector as its nodes would
    ///
    /// One emitter per node (nodes post concurrently), each node's records in its own order (its
    /// boot records, events, snapshots, vast.ai records), every finalize last; each file posted as
    /// it is. To move a run between collectors, load-test one, or reproduce an incident into a
    /// live `check --follow` (`docs/collector.md`). BUNDLE is a directory or a `.tar.gz`. Exit
    /// status 0 when every post was acknowledged, 1 when some were not (it says how many), 2 when
    /// the replay could not run.
    Replay {
        /// The bundle.
        bundle: PathBuf,
        /// The collector's base URL (`http://HOST:PORT`, optionally with a base path).
        #[arg(long, value_name = "URL")]
        collector: String,
        /// Post under this run id instead of the bundle's (boot records and snapshots name it
        /// too; other records are posted unchanged).
        #[arg(long, value_name = "ID")]
        run_id: Option<String>,
        /// Spool unacknowledged posts here, one folder per node id (the emitter's spool layout),
        /// so a later replay with the same spool sends them first.
        #[arg(long, value_name = "DIR")]
        spool: Option<PathBuf>,
        /// How long to wait for a node's acknowledgements (`30s`, `2m`).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
        timeout: std::time::Duration,
        /// Open a connection per post instead of keeping one open per node (for a path through
        /// proxies or load balancers that mishandle kept-alive connections).
        #[arg(long)]
        connection_per_post: bool,
    },
    /// The post-incident summary of a bundle (Markdown, JSON, HTML, TSV)
    ///
    /// Every section swactor's post-processor renders, plus subprocess buckets, validation,
    /// absence and what this reader does not know.
    ///
    /// BUNDLE is a directory or a `.tar.gz` of any generation and any release. Markdown by default;
    /// `--format json` prints the shape `docs/summary.md` documents; `--format html` one
    /// self-contained page with plots; `--format tsv --view reachability|timeline` the two TSV views.
    Summary {
        /// The bundle.
        bundle: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = summary::Format::Md)]
        format: summary::Format,
        /// The TSV view.
        #[arg(long, value_enum, default_value_t = summary::View::Reachability)]
        view: summary::View,
        /// Write to this file instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Compare two bundles' nodes, events, dials and probe RTTs
    ///
    /// Node set, finalize flag, event counts per node and type, the first peer to go Dead, dials and probe RTTs. Lines start with `=`, `+` (only in B), `-` (only in A) or
    /// `*` (changed). Exit status 0 when nothing differs, 1 when something does, 2 when a bundle
    /// cannot be opened.
    Compare {
        /// Bundle A.
        a: PathBuf,
        /// Bundle B.
        b: PathBuf,
    },
    /// Deprecated spelling of `review --catalog`, kept for one release.
    #[command(hide = true)]
    Rules {
        /// Output format.
        #[arg(long, value_enum, default_value_t = review::Format::Md)]
        format: review::Format,
    },
    /// Check bundles and record files against the contract's schemas and types
    ///
    /// PATH is a bundle (a directory, or a `.tar.gz` in the collector layout whatever its name) or a
    /// record file: an events file holds a JSON array of event records, every other file one
    /// record. Every record is checked against its type and, when it fails, its schema says where;
    /// a bundle's manifest, boot records, directories and sequence numbers are checked against each
    /// other. The record kind of a file comes from its name in swactor's layout (`boot.json`,
    /// `events-NNNNNN.json`, `snapshot-NNNNNN.json`, `finalize.json`, `MANIFEST.json`,
    /// `vastai_*.json`) or from `--kind`. Each path is reported on its own. Exit status: the worst
    /// of the paths: 0 when everything is valid, 1 when something is not, 2 when a path could not
    /// be checked (not found, not a bundle, unknown kind).
    Validate {
        /// Bundles and files to check.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The record kind of every record file (boot, event, event_batch, snapshot, finalize,
        /// manifest, post_ack, error, runs, live, vastai).
        #[arg(long, value_parser = parse_kind)]
        kind: Option<RecordKind>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = validate::Format::Human)]
        format: validate::Format,
        /// Largest file read, in bytes, in a bundle or given as a path (a decompression-bomb guard).
        #[arg(long, default_value_t = Limits::default().max_file_bytes)]
        max_file_bytes: u64,
        /// Largest total a bundle may unpack to, in bytes.
        #[arg(long, default_value_t = Limits::default().max_total_bytes)]
        max_total_bytes: u64,
        /// Run every record through the JSON Schema validator as well as the typed parse and
        /// report any disagreement (a defect of the contract). Slower.
        #[arg(long)]
        cross_check: bool,
    },
    /// Check a bundle's behaviour: ordering, pairing, absence; live with `--follow`
    ///
    /// The behavioural contract of a bundle's records (docs/behaviour.md).
    ///
    /// Every rule of the rule file (identity fields per scope, stable reason values, ordering,
    /// one terminal outcome per run, sequence numbers, dial pairing, absence and gaps) is
    /// evaluated in one streaming pass. Each finding names its rule, level, location and the
    /// records involved; rules that had nothing to check are listed as such. `--coverage` adds
    /// the coverage and absence tables, `--baseline` flags shifts against another bundle.
    /// Exit status: 0 when no violation, 1 otherwise (or a flagged shift, or coverage below P),
    /// 2 when a bundle cannot be opened.
    ///
    /// `--follow` checks a run directory while it is written (a bundle directory, a collector's
    /// staging directory of one run, or a staging root, waited on until its first run appears),
    /// or a collector's live stream (`http://HOST:PORT/diag/stream/RUN`, from the run's first
    /// record): each finding is printed the moment it is decided, and the check ends at the
    /// stream's end, once the finalize record has landed and nothing more has for `--settle`, at
    /// `--until`, or on Ctrl-C, with the report of what was read. Exit status 2 also when that
    /// report does not cover the whole run (it says what it missed).
    Check {
        /// The bundle (a directory or a `.tar.gz`); with `--follow`, the directory being written
        /// (a bundle, a run's staging directory or a staging root) or a collector's live stream
        /// URL, `http://HOST:PORT/diag/stream/RUN_ID[?from=N]`.
        bundle: PathBuf,
        /// Follow the run while it is written: a directory, or a collector's live stream URL
        /// (`http://HOST:PORT/diag/stream/RUN_ID`), read from the run's first record.
        #[arg(long, conflicts_with_all = ["coverage", "baseline", "fail_on_coverage_below"])]
        follow: bool,
        /// With `--follow`: how long the run must stay quiet after its finalize record (`2s`,
        /// `500ms`).
        #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration, requires = "follow")]
        settle: std::time::Duration,
        /// With `--follow`: stop after this long, with the report so far (`90s`, `10m`).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "follow")]
        until: Option<std::time::Duration>,
        /// Print the coverage and absence statistics.
        #[arg(long)]
        coverage: bool,
        /// Flag shifts in the coverage and absence ratios against this bundle.
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Fail when less than P percent of the contract's fields were seen.
        #[arg(long, value_name = "P")]
        fail_on_coverage_below: Option<f64>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = behaviour::Format::Md)]
        format: behaviour::Format,
    },
    /// Compare a simulated bundle with a production one (shape and distributions)
    ///
    /// Of the same scenario: shape parity, then the distributions of the fields the simulator must reproduce. Exit status: 0 when
    /// parity holds, 1 when it fails, 2 when a bundle cannot be opened.
    Parity {
        /// The simulated bundle.
        sim: PathBuf,
        /// The production bundle.
        prod: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = behaviour::Format::Md)]
        format: behaviour::Format,
    },
    /// Re-encode a bundle's record files as protobuf or JSON
    ///
    /// Written under OUT as a directory, or as a deterministic `.tar.gz` when OUT ends in `.tar.gz`. The manifest stays
    /// JSON; a file that does not decode (or would be over the per-file limit converted) is copied
    /// unchanged and reported, a file outside the layout is reported and left out. Streams one file
    /// at a time. OUT must not be a symbolic link, the bundle or inside it; an existing `.tar.gz`
    /// or non-empty run directory is never overwritten, and nothing appears under OUT unless the
    /// whole conversion succeeds. Exit status: 0 when every record file converted, 1 when some
    /// were copied unchanged or left out, 2 on an error.
    Convert {
        /// The bundle (a directory or a `.tar.gz`).
        bundle: PathBuf,
        /// The encoding to write.
        #[arg(long, value_enum)]
        to: EncodingArg,
        /// The folder to write the run directory into, or a `.tar.gz` file to write.
        out: PathBuf,
    },
    /// Turn the simulator's prod-shape output into a bundle
    ///
    /// The contract's bundle layout under OUT, listing everything it could not map. Every file written is within the reader's per-file
    /// limit (a large events file is split into several numbered ones). OUT must not be a symbolic
    /// link, the input or inside it; the run directory (or archive) appears only once it is
    /// complete. Each file is written as it is made, so memory stays bounded whatever the input.
    /// Exit status: 0 when everything was mapped, 1 when items were not (listed), 2 on an error.
    Upgrade {
        /// The simulator's bundle directory.
        input: PathBuf,
        /// The folder to write the run directory into, or a `.tar.gz` file to write.
        out: PathBuf,
    },
    /// Export bundles into a fleet dataset (Parquet)
    ///
    /// Parquet tables whose columns the contract defines (`docs/fleet.md`,
    /// `docs/reference/dataset.md`).
    ///
    /// Each bundle is one run; a run already in DATASET is replaced, so exporting twice adds
    /// nothing. Partitions touched are compacted into one file each unless `--no-compact`.
    /// Records that cannot be read are listed (located) and not exported. One writer at a time:
    /// an export or compaction waits (up to `--wait`) for another to finish. Exit status: 0 when
    /// every record was exported, 1 when some could not be read, 2 on an error (the dataset is
    /// then as it was). Needs the feature `fleet`.
    Export {
        /// The bundles (directories or `.tar.gz`).
        #[arg(required = true)]
        bundles: Vec<PathBuf>,
        /// The dataset folder (created when missing).
        #[arg(long, value_name = "DATASET")]
        to: PathBuf,
        /// Leave each run in a file of its own until `diagwire compact`.
        #[arg(long)]
        no_compact: bool,
        /// Wait this long at most for another export or compaction of DATASET to finish (`0s`:
        /// fail at once).
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        wait: std::time::Duration,
    },
    /// Merge the files of each partition of a fleet dataset into one
    ///
    /// One writer at a time: waits (up to `--wait`) for an export to finish. Needs the feature
    /// `fleet`.
    Compact {
        /// The dataset folder.
        dataset: PathBuf,
        /// Wait this long at most for another export or compaction of DATASET to finish (`0s`:
        /// fail at once).
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        wait: std::time::Duration,
    },
    /// Run SQL over a fleet dataset (embedded DataFusion)
    ///
    /// The tables `runs`, `nodes`, `events`, `snapshots`, `finalize`, `vastai` and the shipped views (`docs/fleet.md`).
    ///
    /// Read-only: only reading statements run (SELECT, WITH, EXPLAIN, VALUES); CREATE, DROP,
    /// INSERT, COPY … TO, SET and the like are refused before anything runs. The query holds at
    /// most `--memory-limit` (spilling sorts and joins to the temporary folder, up to 4 times
    /// that); a query needing more fails with an error. Every value is printed escaped: a
    /// control character, newline or bidirectional mark shows as `\u{…}` in a table or CSV and
    /// `\uXXXX` in JSON. Exit status: 0 with the rows, 2 on an error or a refused statement.
    /// Needs the feature `fleet`.
    Query {
        /// The dataset folder.
        dataset: PathBuf,
        /// One reading SQL statement.
        sql: String,
        /// How to print the rows.
        #[arg(long, value_enum, default_value_t = fleet::Format::Table)]
        format: fleet::Format,
        /// The memory the query may hold, like `1GiB`, `512MiB` or a number of bytes.
        #[arg(long, value_name = "SIZE", default_value = "1GiB")]
        memory_limit: bytesize::ByteSize,
    },
    /// The fleet report of a dataset (Markdown, JSON, HTML)
    ///
    /// Runs over time, fault reasons, dial failure rate by provider, datacenter and country, relay closes by initiator and reason, probe RTT
    /// quantiles by region pair, subprocess buckets, contract versions and writers seen
    /// (`docs/fleet.md`).
    ///
    /// Markdown by default; `--format html` one self-contained page with plots; `--format json`
    /// the shape of `schemas/tools/fleet.schema.json`. Exit status: 0 with the report, 2 on an
    /// error (a missing or invalid dataset, named with its path). Needs the feature `fleet`.
    Fleet {
        /// The dataset folder.
        dataset: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = fleet::ReportFormat::Md)]
        format: fleet::ReportFormat,
        /// Write to this file instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The JSON Schema of a command's JSON output
    ///
    /// `schemas/tools/` holds them all.
    ///
    /// Without arguments, lists every output with its format version and command; with NAME,
    /// prints its schema. `--write DIR` writes them all; `--check DIR` fails (exit 1) when a
    /// checked-in schema is stale or changed without a new format version.
    OutputSchema {
        /// The output's name (`summary`, `check`, …).
        name: Option<String>,
        /// Write every schema into this folder.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["name", "check"])]
        write: Option<PathBuf>,
        /// Check the schemas in this folder.
        #[arg(long, value_name = "DIR", conflicts_with = "name")]
        check: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli: Cli = help::parse();
    if !cli.command.serves() {
        sigpipe::reset();
    }
    match cli.command {
        Command::Validate {
            paths,
            kind,
            format,
            max_file_bytes,
            max_total_bytes,
            cross_check,
        } => {
            let limits = Limits {
                max_file_bytes,
                max_total_bytes,
                ..Limits::default()
            };
            validate::run(validate::Args {
                paths,
                kind,
                format,
                limits,
                cross_check,
            })
        }
        Command::Upgrade { input, out } => upgrade::upgrade(&input, &out),
        Command::Convert { bundle, to, out } => {
            let to = match to {
                EncodingArg::Pb => diagwire::layout::Encoding::Protobuf,
                EncodingArg::Json => diagwire::layout::Encoding::Json,
            };
            convert::convert(&bundle, to, &out)
        }
        Command::Check {
            bundle,
            follow: true,
            settle,
            until,
            format,
            ..
        } => follow::follow(&bundle, follow::Until { settle, until }, format),
        Command::Check {
            bundle,
            coverage,
            baseline,
            fail_on_coverage_below,
            format,
            ..
        } => behaviour::check(
            &bundle,
            coverage,
            baseline.as_deref(),
            fail_on_coverage_below,
            format,
        ),
        Command::Parity { sim, prod, format } => behaviour::parity(&sim, &prod, format),
        Command::Diff { old, new, format } => review::diff(&old, &new, format),
        Command::Review {
            catalog: true,
            format,
            ..
        } => review::catalog(format),
        Command::Review { base, format, .. } => review::review(base.as_deref(), format),
        Command::Changelog { date, since } => review::changelog(date.as_deref(), since.as_deref()),
        Command::Rules { format } => {
            eprintln!("{}", review::RULES_DEPRECATED);
            review::catalog(format)
        }
        #[cfg(feature = "serve")]
        Command::Serve(args) => diagwire_serve::run(&args),
        #[cfg(not(feature = "serve"))]
        Command::Serve { .. } => fail(NO_SERVE),
        Command::Replay {
            bundle,
            collector,
            run_id,
            spool,
            timeout,
            connection_per_post,
        } => replay::replay(&replay::Args {
            bundle,
            collector,
            run_id,
            spool,
            timeout,
            connection_per_post,
        }),
        Command::Summary {
            bundle,
            format,
            view,
            out,
        } => summary::summary(&bundle, format, view, out),
        Command::Compare { a, b } => summary::compare(&a, &b),
        Command::Export {
            bundles,
            to,
            no_compact,
            wait,
        } => fleet::export(&bundles, &to, no_compact, wait),
        Command::Compact { dataset, wait } => fleet::compact(&dataset, wait),
        Command::Query {
            dataset,
            sql,
            format,
            memory_limit,
        } => fleet::query(&dataset, &sql, format, memory_limit),
        Command::Fleet {
            dataset,
            format,
            out,
        } => fleet::report(&dataset, format, out.as_deref()),
        Command::OutputSchema { name, write, check } => {
            output_schema::run(name.as_deref(), write.as_deref(), check.as_deref())
        }
    }
}

impl Command {
    /// Whether this is `serve`, the one command a closed reader must never end.
    fn serves(&self) -> bool {
        #[cfg(feature = "serve")]
        return matches!(self, Command::Serve(_));
        #[cfg(not(feature = "serve"))]
        return matches!(self, Command::Serve { .. });
    }
}

/// The encoding `convert` writes.
#[derive(Clone, Copy, clap::ValueEnum)]
enum EncodingArg {
    /// The binary form, `.pb` files.
    Pb,
    /// JSON, `.json` files.
    Json,
}

fn parse_kind(s: &str) -> Result<RecordKind, String> {
    s.parse::<RecordKind>().map_err(|e| {
        let all: Vec<&str> = RecordKind::ALL.iter().map(|k| k.as_str()).collect();
        format!("{e} (one of {})", all.join(", "))
    })
}

/// What `diagwire serve` says in a binary built without the collector.
#[cfg(not(feature = "serve"))]
const NO_SERVE: &str = "this diagwire was built without the collector (the feature `serve`, \
which adds tokio and axum); build it with `cargo build -p diagwire-cli --features serve`, run \
`cargo run -p diagwire-cli --features serve -- serve …`, or use the `diagwire-serve` binary";

/// The one error printer of every command: a command that could not run says why on standard
/// error as `error: <message>`, escaped by `printable` (a line break of a message continues it on
/// an indented line, so no value can start a line of its own), and exits with status 2.
pub fn fail(message: &str) -> ExitCode {
    let lines: Vec<String> = message
        .split('\n')
        .map(|l| diagwire::problem::printable(l).into_owned())
        .collect();
    eprintln!("error: {}", lines.join("\n  "));
    ExitCode::from(2)
}
