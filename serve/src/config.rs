//! What a collector is configured with: where it keeps staging, how long finalize waits, whether
//! the contract is enforced at ingest, its limits and time-outs, and the command-line arguments of
//! `diagwire serve` (shared by the `diagwire` binary and `diagwire-serve`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use diagwire::units::{parse_duration, parse_size};

/// Events remembered with their content for a node's current incarnation, by default
/// (`--dedupe-window`; idempotent ingest, `dedupe.rs`).
pub const EVENT_WINDOW: usize = 1_024;

/// A hook called before each durable write with the path about to be written; an error it
/// returns is the write's error. Tests inject a full disk (`ENOSPC`) through it.
pub type WriteFault = Arc<dyn Fn(&Path) -> std::io::Result<()> + Send + Sync>;

/// The collector's limits. The count limits are answered with 413 when a post would pass them,
/// the memory budget and the places for streams and downloads with 503 and `Retry-After`, the
/// time-outs with 408 (a slow body; a connection whose headers are slow is closed).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body, in bytes (32 MiB, as swactor's collector).
    pub max_body_bytes: usize,
    /// Most runs staging holds (a post that would start another is refused).
    pub max_runs: usize,
    /// Most nodes one run holds.
    pub max_nodes_per_run: usize,
    /// Most files (staged and quarantined) one node holds in one run.
    pub max_files_per_node: u64,
    /// Most bytes one run's staging and quarantine hold together (and so the disk a finalize or
    /// a bundle request writes; assembly streams, its memory does not grow with the run).
    pub max_run_bytes: u64,
    /// Longest `x-run-id` or `x-node-id`, in bytes.
    pub max_id_bytes: usize,
    /// Most connections served at once (4,096); a connection arriving past it closes the
    /// oldest idle one, else it waits to be accepted.
    pub max_connections: usize,
    /// Most idle connections at once (2,048): connections that have not sent a whole request
    /// head yet, or are kept alive between requests. Past it the oldest idle one is closed, so
    /// connections that send nothing never take the places posters need.
    pub max_idle_connections: usize,
    /// Time a client has to send a request's headers (the connection is closed after it).
    pub header_timeout: Duration,
    /// Time a client has to send a request's body once its headers arrived (408 after it).
    pub body_timeout: Duration,
    /// The memory the collector holds for what requests bring, in bytes (512 MiB): bodies in
    /// flight and their parse, stream read-backs and assemblies reserve from it, and the live
    /// buffers keep `Config::live_budget_bytes` of it. A post that finds it spent is answered
    /// 503 with `Retry-After`.
    pub memory_budget_bytes: u64,
    /// Most live streams (`GET /diag/stream`) served at once (1,024), well under
    /// `max_connections`, so subscribers never take the places posters need; 503 past it.
    pub max_streams: usize,
    /// Most runs without a post that subscribers wait on at once (64); 503 past it.
    pub max_waiting_runs: usize,
    /// Most bundles assembled at once, finalizes and downloads together (2); others wait.
    pub max_assemblies: usize,
    /// Most bundle downloads (`GET /diag/bundle`) served at once (8); 503 past it.
    pub max_downloads: usize,
    /// Most disk the bundles of downloads in flight hold together, in bytes (4 GiB): a file
    /// being served stays on disk until its client has read it, even once replaced or removed.
    /// A download that would pass it is answered 503; a bundle larger than the whole of it is
    /// served when no other download holds any.
    pub max_download_disk_bytes: u64,
    /// Most problems a PostAck and a `.why.json` list (100); the rest are counted.
    pub max_problems: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 32 << 20,
            max_runs: 1_000,
            max_nodes_per_run: 4_096,
            max_files_per_node: 1_000_000,
            max_run_bytes: 1 << 30,
            max_id_bytes: 128,
            max_connections: 4_096,
            max_idle_connections: 2_048,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            memory_budget_bytes: 512 << 20,
            max_streams: 1_024,
            max_waiting_runs: 64,
            max_assemblies: 2,
            max_downloads: 8,
            max_download_disk_bytes: 4 << 30,
            max_problems: 100,
        }
    }
}

/// How a collector runs.
#[derive(Clone)]
pub struct Config {
    /// The folder holding `staging/`, `quarantine/` and `bundles/`.
    pub root: PathBuf,
    /// How long a finalize post waits for the run's last posts before assembling (5 s).
    pub finalize_wait: Duration,
    /// Whether each body is parsed as its record kind at ingest (the contract at the door). Off,
    /// every JSON body is stored as posted, as swactor's collector does.
    pub validate: bool,
    /// The limits.
    pub limits: Limits,
    /// How many recent records of a run the live stream keeps in memory: a subscriber that falls
    /// further behind (or resumes further back) has the older records read back from staging.
    pub live_replay: usize,
    /// The bytes the live streams of all runs keep together (each run drops its own oldest
    /// records first), part of the memory budget.
    pub live_budget_bytes: u64,
    /// The bytes one run's live stream keeps at most (16 MiB), so one run never takes the whole
    /// live budget from the others.
    pub live_run_bytes: u64,
    /// The name the collector writes into each manifest's `writer`.
    pub writer_name: String,
    /// A test hook called before every durable write.
    pub write_fault: Option<WriteFault>,
    /// Whether a post repeating records already staged for its (run, node) stages nothing new
    /// (idempotent ingest, `crate::dedupe`). On unless turned off (`--no-dedupe`).
    pub dedupe: bool,
    /// How many of a node's latest events are remembered with their content (and staging
    /// number), for each node ([`EVENT_WINDOW`] unless set).
    pub dedupe_window: usize,
}

impl Config {
    /// The defaults for a root folder.
    pub fn new(root: impl Into<PathBuf>) -> Config {
        Config {
            root: root.into(),
            finalize_wait: Duration::from_secs(5),
            validate: true,
            limits: Limits::default(),
            live_replay: 4_096,
            live_budget_bytes: 64 << 20,
            live_run_bytes: 16 << 20,
            writer_name: "diagwire-serve".into(),
            write_fault: None,
            dedupe: true,
            dedupe_window: EVENT_WINDOW,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("root", &self.root)
            .field("finalize_wait", &self.finalize_wait)
            .field("validate", &self.validate)
            .field("limits", &self.limits)
            .field("live_replay", &self.live_replay)
            .field("live_budget_bytes", &self.live_budget_bytes)
            .field("live_run_bytes", &self.live_run_bytes)
            .field("write_fault", &self.write_fault.is_some())
            .field("dedupe", &self.dedupe)
            .field("dedupe_window", &self.dedupe_window)
            .finish()
    }
}

/// The arguments of `diagwire serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The folder holding staging (`staging/`), quarantined posts (`quarantine/`) and assembled
    /// bundles (`bundles/`); created when missing.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// The address to listen on, `HOST:PORT`: an IP address or a host name, e.g.
    /// `127.0.0.1:8080`, `[::1]:8080` or `localhost:8080` (port 0 picks a free port; the address
    /// is printed on the first line of standard output).
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_listen)]
    pub listen: String,
    /// How long a finalize post waits for the run's last posts before the bundle is assembled,
    /// e.g. `5s` or `500ms`.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub finalize_wait: Duration,
    /// Store every JSON body as posted, without parsing it as its record kind.
    #[arg(long)]
    pub no_validate: bool,
    /// Stage every post, even one repeating records already staged for its node (a node's retry
    /// is then stored twice).
    #[arg(long)]
    pub no_dedupe: bool,
    /// Which log lines to write to standard error, as `RUST_LOG` says it (`info`, one line per
    /// request, unless given here or in `RUST_LOG`; `warn` for problems only).
    #[arg(long, value_name = "FILTER")]
    pub log: Option<String>,
    /// Most idle connections at once (connected without a whole request head yet, or kept alive
    /// between requests); past it the oldest idle one is closed.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_idle_connections)]
    pub max_idle_connections: usize,
    /// Most disk the bundles being downloaded hold together, e.g. `4GiB` or `500MB`; a download
    /// that would pass it is answered 503 with `Retry-After`.
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = parse_size)]
    pub max_download_disk: u64,
    /// How log lines are written: `text`, or `json` (one JSON object per line).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

impl ServeArgs {
    /// The collector configuration these arguments give.
    pub fn config(&self) -> Config {
        let mut config = Config::new(&self.root);
        config.finalize_wait = self.finalize_wait;
        config.validate = !self.no_validate;
        config.dedupe = !self.no_dedupe;
        config.limits.max_idle_connections = self.max_idle_connections;
        config.limits.max_download_disk_bytes = self.max_download_disk;
        config
    }
}

/// A listening address as `--listen` takes it: `HOST:PORT`, the host an IP address (IPv6 in
/// brackets) or a name resolved when the collector starts.
fn parse_listen(s: &str) -> Result<String, String> {
    if s.parse::<SocketAddr>().is_ok() {
        return Ok(s.to_owned());
    }
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("{s:?}: write HOST:PORT, e.g. 127.0.0.1:8080 or localhost:8080"))?;
    port.parse::<u16>()
        .map_err(|_| format!("{s:?}: the port must be a number from 0 to 65535"))?;
    if host.is_empty() || host.contains(['[', ']', ' ', '/', ':']) {
        return Err(format!(
            "{s:?}: not a host name or an IP address (write an IPv6 address in brackets, [::1]:8080)"
        ));
    }
    Ok(s.to_owned())
}
