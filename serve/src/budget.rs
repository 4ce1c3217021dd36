//! The collector bounded as a whole: one memory budget that bodies in flight, stream read-backs
//! and assemblies reserve from before they hold anything (the live buffers keep a fixed part of
//! it, [`crate::live::Budget`]), the counted places for streams, assemblies and bundle
//! downloads, apart from the connections posters need, and the disk the bundles of downloads in
//! flight hold. A request that finds the budget or its
//! places spent is answered `503` with `Retry-After` (nodes spool and retry), never queued
//! without bound.
//!
//! Each reservation is a set of permits of a tokio [`Semaphore`], one permit a KiB, released
//! when dropped; tokio's semaphore is fair and needs nothing else here.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::config::Limits;

/// What the door needs for a body of `n` bytes: the bytes, the typed parse and the record's
/// line and event for the live stream (about four times the body), plus the small parts.
pub fn post_cost(n: u64) -> u64 {
    n.saturating_mul(4).saturating_add(64 << 10)
}

/// What reading a staged file of `n` bytes back for the live stream holds: the bytes, the
/// parsed record and its line.
pub fn read_back_cost(n: u64) -> u64 {
    n.saturating_mul(4).saturating_add(64 << 10)
}

/// The collector's memory budget and places.
#[derive(Debug)]
pub struct Bounds {
    memory: Arc<Semaphore>,
    memory_kib: u64,
    streams: Arc<Semaphore>,
    assemblies: Arc<Semaphore>,
    downloads: Arc<Semaphore>,
    download_disk: Arc<Semaphore>,
    download_disk_kib: u64,
    /// What an assembly reserves from the memory budget (one staged file, the manifest's
    /// records read for their version and the compressor).
    pub assembly_cost: u64,
    /// The `Retry-After` of a `503`.
    pub retry_after: Duration,
    begun: std::sync::atomic::AtomicU64,
}

/// Memory reserved from the budget, given back when dropped.
#[derive(Debug)]
pub struct Reserved(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// A counted place (a stream, an assembly, a download), given back when dropped.
#[derive(Debug)]
pub struct Place(#[allow(dead_code)] OwnedSemaphorePermit);

fn kib(bytes: u64) -> u32 {
    bytes.div_ceil(1024).min(u64::from(u32::MAX)) as u32
}

impl Bounds {
    /// The budget and places `limits` give; the live buffers' part (`live_bytes`) is kept out
    /// of what requests reserve.
    pub fn new(limits: &Limits, live_bytes: u64) -> Bounds {
        let memory = limits
            .memory_budget_bytes
            .saturating_sub(live_bytes)
            .max(1 << 20);
        let memory_kib = u64::from(kib(memory));
        Bounds {
            memory: Arc::new(Semaphore::new(memory_kib as usize)),
            memory_kib,
            streams: Arc::new(Semaphore::new(limits.max_streams.max(1))),
            assemblies: Arc::new(Semaphore::new(limits.max_assemblies.max(1))),
            downloads: Arc::new(Semaphore::new(limits.max_downloads.max(1))),
            download_disk: Arc::new(Semaphore::new(kib(limits.max_download_disk_bytes) as usize)),
            download_disk_kib: u64::from(kib(limits.max_download_disk_bytes)),
            assembly_cost: (limits.max_body_bytes as u64).saturating_add(16 << 20),
            retry_after: Duration::from_secs(1),
            begun: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The part of the budget requests reserve from, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_kib * 1024
    }

    /// Reserves `bytes` now, or `None` when the budget does not hold them (a request larger
    /// than the whole budget never fits).
    pub fn try_reserve(&self, bytes: u64) -> Option<Reserved> {
        let n = kib(bytes);
        if n == 0 {
            return Some(Reserved(None));
        }
        match self.memory.clone().try_acquire_many_owned(n) {
            Ok(p) => Some(Reserved(Some(p))),
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => None,
        }
    }

    /// Reserves `bytes`, waiting for them (at most the whole budget is asked for, so the wait
    /// ends once what others hold is given back).
    pub async fn reserve(&self, bytes: u64) -> Reserved {
        let n = kib(bytes).min(self.memory_kib as u32);
        if n == 0 {
            return Reserved(None);
        }
        Reserved(self.memory.clone().acquire_many_owned(n).await.ok())
    }

    /// A place for a live stream, or `None` when every one is taken.
    pub fn stream(&self) -> Option<Place> {
        self.streams.clone().try_acquire_owned().ok().map(Place)
    }

    /// A place for a bundle download, or `None` when every one is taken.
    pub fn download(&self) -> Option<Place> {
        self.downloads.clone().try_acquire_owned().ok().map(Place)
    }

    /// The disk a download of a file of `bytes` holds until its client has read it, or `None`
    /// when the downloads in flight hold too much already (a file larger than the whole
    /// allowance takes all of it).
    pub fn download_disk(&self, bytes: u64) -> Option<Reserved> {
        let n = kib(bytes).min(self.download_disk_kib as u32);
        if n == 0 {
            return Some(Reserved(None));
        }
        self.download_disk
            .clone()
            .try_acquire_many_owned(n)
            .ok()
            .map(|p| Reserved(Some(p)))
    }

    /// The disk downloads in flight may hold together, in bytes.
    pub fn download_disk_bytes(&self) -> u64 {
        self.download_disk_kib * 1024
    }

    /// A place to assemble a bundle in, waiting for one, with its memory reserved (`None` only
    /// if the places were closed, which they never are).
    pub async fn assembly(&self) -> Option<(Place, Reserved)> {
        let place = Place(self.assemblies.clone().acquire_owned().await.ok()?);
        let memory = self.reserve(self.assembly_cost).await;
        self.begun
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some((place, memory))
    }

    /// How many assemblies were given a place since the collector started.
    pub fn assemblies_begun(&self) -> u64 {
        self.begun.load(std::sync::atomic::Ordering::Relaxed)
    }
}
