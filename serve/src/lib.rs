//! `diagwire serve`: swactor's collector protocol over HTTP (axum), with the contract enforced
//! at ingest, durable staging and a live stream (`docs/collector.md` is the protocol and the
//! policies).
//!
//! [`Collector`] holds the state; [`router`] is the embeddable axum router over it; [`serve`]
//! runs it on a listener with the collector's time-outs and connection limit; [`run`] is the
//! command (`diagwire serve`, and the `diagwire-serve` binary). [`client`] holds a small HTTP
//! client: the poster the tests and the load generator use, and a live-stream subscriber.
//! [`observe`] holds the request log and the metrics of `GET /metrics`.

pub mod assembly;
pub mod budget;
pub mod client;
pub mod config;
pub mod confined;
pub mod dedupe;
pub mod door;
pub mod durable;
pub mod live;
pub mod observe;
pub mod posted;
pub mod routes;
pub mod server;
pub mod store;
pub mod sync;

use std::sync::Arc;

use diagwire::v1::{BundleWriter, WriterKind};
use diagwire::validate::Validators;

pub use config::{Config, Limits, ServeArgs, WriteFault};
pub use routes::router;
pub use server::{run, serve};

/// A collector: its configuration, its durable staging and the compiled validators that explain
/// refused records.
pub struct Collector {
    /// How it runs.
    pub config: Arc<Config>,
    /// Staging, quarantine, bundles and the accounting.
    pub store: store::Store,
    /// The metrics `GET /metrics` serves.
    pub metrics: observe::Metrics,
    validators: Validators,
}

impl Collector {
    /// Opens a collector on `config.root`, recovering every run staged there.
    pub fn open(config: Config) -> std::io::Result<Arc<Collector>> {
        let config = Arc::new(config);
        let metrics = observe::Metrics::new();
        let store = store::Store::open(config.clone(), metrics.links_refused.clone())?;
        let validators = Validators::new().map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Arc::new(Collector {
            config,
            store,
            metrics,
            validators,
        }))
    }

    /// The `writer` each assembled manifest names.
    fn writer(&self) -> BundleWriter {
        BundleWriter::new(
            WriterKind::Collector,
            self.config.writer_name.as_str(),
            env!("CARGO_PKG_VERSION"),
        )
    }
}
