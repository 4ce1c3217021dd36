//! An observable collector: one structured log line per request (through `tracing`) and the
//! collector's metrics in the Prometheus text format at `GET /metrics` (`docs/collector.md`,
//! "Logs and metrics", names each one).
//!
//! [`layer`] is one axum middleware over every route: it times the request, reads the run and
//! node headers and the route's kind, and, once the handler answered, what the handler put in the
//! response's extensions ([`Posted`]: the staging number, the records left out as already staged,
//! where a body was quarantined), then logs the line and counts the post. Handlers only add that
//! extension; assembly, the live stream and the store count their own events through
//! [`Metrics`]. Every text taken from a request is escaped before it is logged, and a metric's
//! labels take only bounded values (a known kind or `other`, a status code).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::Collector;

/// What an ingest handler tells the request's log line and metrics about its post.
#[derive(Debug, Clone, Default)]
pub struct Posted {
    /// The staging number the post was given (or its records were staged under).
    pub seq: Option<u64>,
    /// Records left out as already staged.
    pub deduplicated: u64,
    /// Records kept with the identity of another (conflicts).
    pub conflicts: u64,
    /// Where the body was kept in quarantine, relative to the root.
    pub quarantined: Option<String>,
}

/// The labels of a post's counters: its kind and its status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PostLabels {
    /// `boot`, `events`, `snapshot`, `finalize`, `vastai` or `other`.
    pub kind: String,
    /// The reply's status code.
    pub status: String,
}

/// The label of a post's latency: its kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// As [`PostLabels::kind`].
    pub kind: String,
}

fn latency_buckets() -> Histogram {
    // 1 ms to about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The collector's metrics.
pub struct Metrics {
    registry: Registry,
    /// Posts by kind and status.
    pub posts: Family<PostLabels, Counter>,
    /// Bytes of posted bodies by kind and status.
    pub post_bytes: Family<PostLabels, Counter>,
    /// Posts whose body (or some of whose records) went to quarantine.
    pub quarantined: Counter,
    /// Records left out as already staged.
    pub deduplicated: Counter,
    /// Records staged with the identity of an earlier record of other content.
    pub conflicts: Counter,
    /// Time from a post's arrival to its acknowledgement, by kind.
    pub ack_seconds: Family<KindLabel, Histogram, fn() -> Histogram>,
    /// Runs the collector holds.
    pub open_runs: Gauge<i64, std::sync::atomic::AtomicI64>,
    /// Live-stream subscribers connected now.
    pub subscribers: Gauge<i64, std::sync::atomic::AtomicI64>,
    /// Records live subscribers skipped (`lagged` events).
    pub lagged: Counter<u64, AtomicU64>,
    /// Bundles assembled (finalizes and bundle requests).
    pub assemblies: Counter,
    /// Time one assembly took.
    pub assembly_seconds: Histogram,
    /// Connections closed as idle (`crate::server::Conns`).
    pub idle_closed: Counter,
    /// Links found under the root where a folder or a file was expected, never followed.
    pub links_refused: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// The metrics, registered under their names.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let m = Metrics {
            registry: Registry::default(),
            posts: Family::default(),
            post_bytes: Family::default(),
            quarantined: Counter::default(),
            deduplicated: Counter::default(),
            conflicts: Counter::default(),
            ack_seconds: Family::new_with_constructor(latency_buckets),
            open_runs: Gauge::default(),
            subscribers: Gauge::default(),
            lagged: Counter::default(),
            assemblies: Counter::default(),
            assembly_seconds: latency_buckets(),
            idle_closed: Counter::default(),
            links_refused: Counter::default(),
        };
        registry.register(
            "diagwire_serve_posts",
            "Posts by kind and status",
            m.posts.clone(),
        );
        registry.register(
            "diagwire_serve_post_bytes",
            "Bytes of posted bodies by kind and status",
            m.post_bytes.clone(),
        );
        registry.register(
            "diagwire_serve_quarantined_posts",
            "Posts whose body, or some of whose records, went to quarantine",
            m.quarantined.clone(),
        );
        registry.register(
            "diagwire_serve_deduplicated_records",
            "Records left out as already staged for their node",
            m.deduplicated.clone(),
        );
        registry.register(
            "diagwire_serve_conflicting_records",
            "Records staged with the identity of an earlier record of other content",
            m.conflicts.clone(),
        );
        registry.register(
            "diagwire_serve_ack_seconds",
            "Time from a post's arrival to its acknowledgement, by kind",
            m.ack_seconds.clone(),
        );
        registry.register(
            "diagwire_serve_open_runs",
            "Runs the collector holds",
            m.open_runs.clone(),
        );
        registry.register(
            "diagwire_serve_live_subscribers",
            "Live-stream subscribers connected now",
            m.subscribers.clone(),
        );
        registry.register(
            "diagwire_serve_lagged_records",
            "Records live subscribers skipped (lagged events)",
            m.lagged.clone(),
        );
        registry.register(
            "diagwire_serve_assemblies",
            "Bundles assembled (finalizes and bundle requests)",
            m.assemblies.clone(),
        );
        registry.register(
            "diagwire_serve_assembly_seconds",
            "Time one assembly took",
            m.assembly_seconds.clone(),
        );
        registry.register(
            "diagwire_serve_idle_connections_closed",
            "Connections closed as idle (no whole request head yet, or kept alive between requests)",
            m.idle_closed.clone(),
        );
        registry.register(
            "diagwire_serve_links_refused",
            "Links found under the root where the collector reads, never followed",
            m.links_refused.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String does not fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Counts one assembly that took `took`, and logs it.
    pub fn assembled(&self, run: &str, took: Duration, ok: bool) {
        self.assemblies.inc();
        self.assembly_seconds.observe(took.as_secs_f64());
        tracing::info!(
            target: "diagwire_serve::assembly",
            run = %printable(run),
            ok,
            ms = took.as_millis() as u64,
            "assembled"
        );
    }

    /// Counts records a live subscriber skipped, and logs it.
    pub fn lagged(&self, run: &str, skipped: u64) {
        self.lagged.inc_by(skipped);
        tracing::warn!(
            target: "diagwire_serve::live",
            run = %printable(run),
            skipped,
            "a live subscriber lagged"
        );
    }
}

/// A live subscriber, counted while it lives.
pub struct Subscribed(Arc<Collector>);

impl Subscribed {
    /// Counts a subscriber of `collector` until the value is dropped.
    pub fn new(collector: Arc<Collector>) -> Subscribed {
        collector.metrics.subscribers.inc();
        Subscribed(collector)
    }
}

impl Drop for Subscribed {
    fn drop(&mut self) {
        self.0.metrics.subscribers.dec();
    }
}

/// Text from a request, escaped for a log line.
fn printable(text: &str) -> String {
    diagwire::problem::printable(text).into_owned()
}

/// The kind label of an ingest route's last segment: a known kind, `vastai`, or `other`.
fn kind_label(kind: &str) -> &'static str {
    match kind {
        "boot" => "boot",
        "events" => "events",
        "snapshot" => "snapshot",
        "finalize" => "finalize",
        k if k.starts_with("vastai_") => "vastai",
        _ => "other",
    }
}

/// `GET /metrics`.
pub async fn metrics(State(c): State<Arc<Collector>>) -> Response {
    c.metrics
        .open_runs
        .set(c.store.runs().len().try_into().unwrap_or(i64::MAX));
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        c.metrics.encode(),
    )
        .into_response()
}

/// A request's method, path, run and node headers (escaped) and declared body length.
fn describe(request: &Request) -> (Method, String, Option<String>, Option<String>, u64) {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .map(|v| printable(&String::from_utf8_lossy(v.as_bytes())))
    };
    let bytes = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (
        request.method().clone(),
        request.uri().path().to_owned(),
        header("x-run-id"),
        header("x-node-id"),
        bytes,
    )
}

/// The middleware over every route: one log line per request, and the post's metrics.
pub async fn layer(State(c): State<Arc<Collector>>, request: Request, next: Next) -> Response {
    let start = Instant::now();
    let (method, path, run, node, bytes) = describe(&request);
    let response = next.run(request).await;
    let took = start.elapsed();
    let status = response.status().as_u16();
    let posted = response.extensions().get::<Posted>().cloned();
    let kind = (method == Method::POST)
        .then(|| path.strip_prefix("/diag/"))
        .flatten()
        .map(kind_label);
    if let Some(kind) = kind {
        let labels = PostLabels {
            kind: kind.to_owned(),
            status: status.to_string(),
        };
        c.metrics.posts.get_or_create(&labels).inc();
        c.metrics.post_bytes.get_or_create(&labels).inc_by(bytes);
        if status == 200 {
            c.metrics
                .ack_seconds
                .get_or_create(&KindLabel {
                    kind: kind.to_owned(),
                })
                .observe(took.as_secs_f64());
        }
    }
    let p = posted.unwrap_or_default();
    if let Some(at) = &p.quarantined {
        c.metrics.quarantined.inc();
        tracing::info!(
            target: "diagwire_serve::quarantine",
            run = run.as_deref(), node = node.as_deref(), at = %printable(at),
            "body kept in quarantine"
        );
    }
    if p.deduplicated > 0 || p.conflicts > 0 {
        c.metrics.deduplicated.inc_by(p.deduplicated);
        c.metrics.conflicts.inc_by(p.conflicts);
        tracing::info!(
            target: "diagwire_serve::dedupe",
            run = run.as_deref(), node = node.as_deref(), seq = p.seq,
            deduplicated = p.deduplicated, conflicts = p.conflicts,
            "records already staged left out"
        );
    }
    tracing::info!(
        target: "diagwire_serve::request",
        method = %method,
        path = %printable(&path),
        run = run.as_deref(),
        node = node.as_deref(),
        kind,
        seq = p.seq,
        status,
        bytes,
        latency_ms = took.as_secs_f64() * 1e3,
        "request"
    );
    response
}

/// Starts the process's log: `filter` as `RUST_LOG` writes it (`--log`; else `RUST_LOG`; else
/// `info`: a line per request), to standard error, as text or one JSON object per line. A second call does nothing.
pub fn init_logging(filter: Option<&str>, json: bool) -> Result<(), String> {
    use tracing_subscriber::EnvFilter;
    let filter = match filter {
        Some(f) => EnvFilter::try_new(f).map_err(|e| format!("--log {f:?}: {e}"))?,
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    Ok(())
}
