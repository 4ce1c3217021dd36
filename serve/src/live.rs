//! The live stream of a run: every accepted record, in the order it was acknowledged, numbered
//! with a run-wide stream id (the SSE `id`) and kept in a bounded buffer (a count per run, a
//! byte budget over all runs) that every subscriber reads at its own cursor, resuming ones
//! (`Last-Event-ID` or `?from=`) included. A subscriber that falls out of the buffer, or resumes
//! from before it, is told how many records it missed in a `lagged` event; nothing is skipped
//! silently, and a slow subscriber holds no memory of its own.
//!
//! Stream ids continue across restarts: a recovered run's ids start after the number of records
//! already staged, so a subscriber resuming across a restart is told it lagged by the records it
//! cannot be given (the bundle holds them).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

/// One accepted record, ready to send: its stream id, its kind (the SSE event name) and its
/// `LiveRecord` JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveItem {
    /// The run-wide stream id.
    pub id: u64,
    /// The record kind (`events`, `snapshot`, …).
    pub kind: String,
    /// The `LiveRecord` as JSON text, on one line.
    pub data: String,
}

/// What a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A record.
    Item(Arc<LiveItem>),
    /// Records the subscriber missed: `skipped` of them, the next one it gets (if any) is later.
    Lagged {
        /// How many records were skipped.
        skipped: u64,
    },
}

/// The bytes every run's replay buffer may hold together; a run over it drops its own oldest
/// records first.
#[derive(Debug)]
pub struct Budget {
    used: AtomicU64,
    max: u64,
}

impl Budget {
    /// A budget of `max` bytes.
    pub fn new(max: u64) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            max,
        })
    }
}

struct Inner {
    next_id: u64,
    replay: VecDeque<Arc<LiveItem>>,
}

struct Shared {
    inner: Mutex<Inner>,
    cap: usize,
    budget: Arc<Budget>,
    newest: watch::Sender<u64>,
}

/// A run's live stream. Records are kept in one bounded buffer (at most `cap` records, within
/// the shared byte budget); each subscriber reads it at its own cursor, so a slow subscriber
/// costs no memory, and one whose cursor fell out of the buffer is told how many it missed.
/// Clones are the same stream; it lives while a clone or a subscription does.
#[derive(Clone)]
pub struct Hub {
    shared: Arc<Shared>,
}

/// A hub held without keeping it alive: how the collector remembers the stream of a run that
/// has subscribers but no post yet, so such a run takes none of the collector's places for runs.
#[derive(Clone)]
pub struct WeakHub(std::sync::Weak<Shared>);

impl WeakHub {
    /// The hub, while a clone of it or a subscription is alive.
    pub fn upgrade(&self) -> Option<Hub> {
        self.0.upgrade().map(|shared| Hub { shared })
    }

    /// Whether the hub is gone.
    pub fn is_gone(&self) -> bool {
        self.0.strong_count() == 0
    }
}

impl Hub {
    /// A stream whose next id is `base + 1`, keeping up to `cap` records within `budget`.
    pub fn new(base: u64, cap: usize, budget: Arc<Budget>) -> Hub {
        let (newest, _) = watch::channel(base);
        Hub {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    next_id: base + 1,
                    replay: VecDeque::new(),
                }),
                cap: cap.max(1),
                budget,
                newest,
            }),
        }
    }

    /// Publishes a record; `data` is its `LiveRecord` JSON on one line.
    pub fn publish(&self, kind: &str, data: String) {
        let s = &self.shared;
        let mut inner = lock(&s.inner);
        let id = inner.next_id;
        inner.next_id += 1;
        let size = data.len() as u64;
        inner.replay.push_back(Arc::new(LiveItem {
            id,
            kind: kind.to_owned(),
            data,
        }));
        s.budget.used.fetch_add(size, Ordering::Relaxed);
        while inner.replay.len() > s.cap
            || (s.budget.used.load(Ordering::Relaxed) > s.budget.max && !inner.replay.is_empty())
        {
            if let Some(old) = inner.replay.pop_front() {
                s.budget
                    .used
                    .fetch_sub(old.data.len() as u64, Ordering::Relaxed);
            }
        }
        s.newest.send_replace(id);
    }

    /// Empties the replay buffer, returning its bytes to the budget, unless someone is
    /// subscribed; called once the run's bundle is written, which holds every record. A
    /// subscriber resuming from before is then told how many it lagged, as after a restart.
    /// Returns whether the buffer was emptied.
    pub fn release_unwatched(&self) -> bool {
        let s = &self.shared;
        // Under the buffer's lock: `subscribe` registers its receiver under the same lock.
        let mut inner = lock(&s.inner);
        if s.newest.receiver_count() > 0 {
            return false;
        }
        let bytes: u64 = inner.replay.drain(..).map(|i| i.data.len() as u64).sum();
        s.budget.used.fetch_sub(bytes, Ordering::Relaxed);
        true
    }

    /// The hub without keeping it alive.
    pub fn downgrade(&self) -> WeakHub {
        WeakHub(Arc::downgrade(&self.shared))
    }

    /// Subscribes, starting after stream id `from` (`None`: only records from now on).
    pub fn subscribe(&self, from: Option<u64>) -> Subscription {
        let inner = lock(&self.shared.inner);
        let rx = self.shared.newest.subscribe();
        Subscription {
            shared: self.shared.clone(),
            cursor: from.map_or(inner.next_id, |f| f.saturating_add(1)),
            rx,
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let inner = lock(&self.inner);
        let bytes: u64 = inner.replay.iter().map(|i| i.data.len() as u64).sum();
        self.budget.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// A subscriber's view of a run's stream.
pub struct Subscription {
    shared: Arc<Shared>,
    cursor: u64,
    rx: watch::Receiver<u64>,
}

impl Subscription {
    /// The next delivery; `None` when the stream is closed.
    pub async fn next(&mut self) -> Option<Delivery> {
        loop {
            {
                let inner = lock(&self.shared.inner);
                let oldest = inner.replay.front().map_or(inner.next_id, |i| i.id);
                if self.cursor < oldest {
                    let skipped = oldest - self.cursor;
                    self.cursor = oldest;
                    return Some(Delivery::Lagged { skipped });
                }
                if self.cursor < inner.next_id {
                    let item = inner.replay[(self.cursor - oldest) as usize].clone();
                    self.cursor += 1;
                    return Some(Delivery::Item(item));
                }
            }
            // A record published after the look above has already changed the value.
            if self.rx.changed().await.is_err() {
                return None;
            }
        }
    }
}

/// Locks a std mutex, recovering the data of a lock poisoned by a panicking holder (the
/// accounting stays usable: every update is a single step).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(hub: &Hub, from: Option<u64>, take: usize) -> Vec<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut sub = hub.subscribe(from);
        rt.block_on(async {
            let mut out = Vec::new();
            for _ in 0..take {
                match sub.next().await {
                    Some(Delivery::Item(i)) => out.push(i.id.to_string()),
                    Some(Delivery::Lagged { skipped }) => out.push(format!("lagged {skipped}")),
                    None => break,
                }
            }
            out
        })
    }

    #[test]
    fn resuming_replays_what_is_kept_and_says_what_is_not() {
        let hub = Hub::new(10, 3, Budget::new(1 << 20));
        for i in 0..5 {
            hub.publish("events", i.to_string());
        }
        // Ids 11..=15; the replay buffer holds 13, 14, 15.
        assert_eq!(ids(&hub, Some(13), 2), ["14", "15"]);
        assert_eq!(ids(&hub, Some(10), 4), ["lagged 2", "13", "14", "15"]);
        // A subscriber from before a restart (ids up to 10 on disk, none kept).
        assert_eq!(ids(&hub, Some(4), 2), ["lagged 8", "13"]);
    }

    #[test]
    fn the_byte_budget_bounds_every_run_together() {
        let budget = Budget::new(10);
        let a = Hub::new(0, 100, budget.clone());
        for _ in 0..5 {
            a.publish("boot", "xxxx".into());
        }
        assert_eq!(
            budget.used.load(Ordering::Relaxed),
            8,
            "two records of four bytes fit"
        );
        assert_eq!(ids(&a, Some(0), 2), ["lagged 3", "4"]);
        drop(a);
        assert_eq!(budget.used.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_written_bundle_frees_an_unwatched_buffer_and_resumers_are_told() {
        let budget = Budget::new(1 << 20);
        let hub = Hub::new(0, 100, budget.clone());
        for i in 0..4 {
            hub.publish("boot", i.to_string());
        }
        let watcher = hub.subscribe(Some(0));
        assert!(!hub.release_unwatched(), "a subscriber keeps the buffer");
        assert_eq!(budget.used.load(Ordering::Relaxed), 4);
        drop(watcher);
        assert!(hub.release_unwatched());
        assert_eq!(budget.used.load(Ordering::Relaxed), 0);
        hub.publish("boot", "late".into());
        assert_eq!(ids(&hub, Some(0), 2), ["lagged 4", "5"]);
    }

    #[test]
    fn a_subscriber_that_falls_behind_is_told() {
        let hub = Hub::new(0, 2, Budget::new(1 << 20));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut sub = hub.subscribe(None);
        for i in 0..5 {
            hub.publish("boot", i.to_string());
        }
        let got = rt.block_on(async {
            let mut out = Vec::new();
            for _ in 0..3 {
                out.push(sub.next().await);
            }
            out
        });
        assert_eq!(got[0], Some(Delivery::Lagged { skipped: 3 }));
        assert!(matches!(&got[1], Some(Delivery::Item(i)) if i.id == 4));
        assert!(matches!(&got[2], Some(Delivery::Item(i)) if i.id == 5));
    }
}
