//! The live stream of a run: every accepted record, in the order it was acknowledged, numbered
//! with a run-wide stream id (the SSE `id`), kept in a bounded replay buffer for subscribers that
//! resume (`Last-Event-ID` or `?from=`), and fanned out to subscribers through a bounded queue.
//! A subscriber that falls behind, or resumes from before the replay buffer, is told how many
//! records it missed in a `lagged` event; nothing is skipped silently.
//!
//! Stream ids continue across restarts: a recovered run's ids start after the number of records
//! already staged, so a subscriber resuming across a restart is told it lagged by the records it
//! cannot be given (the bundle holds them).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use crate::store::lock;

/// One accepted record, ready to send: its stream id, its kind (the SSE event name) and its
/// `LiveRecord` JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveItem {
    /// The run-wide stream id.
    pub id: u64,
    /// The record kind (`events`, `snapshot`, …).
    pub kind: String,
    /// The `LiveRecord` as JSON text.
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

struct Inner {
    next_id: u64,
    replay: VecDeque<Arc<LiveItem>>,
}

/// A run's live stream.
pub struct Hub {
    inner: Mutex<Inner>,
    replay_cap: usize,
    tx: broadcast::Sender<Arc<LiveItem>>,
}

impl Hub {
    /// A stream whose next id is `base + 1`, keeping `replay` records for resuming subscribers
    /// and letting a subscriber fall `queue` records behind.
    pub fn new(base: u64, replay: usize, queue: usize) -> Hub {
        let (tx, _) = broadcast::channel(queue.max(1));
        Hub {
            inner: Mutex::new(Inner {
                next_id: base + 1,
                replay: VecDeque::new(),
            }),
            replay_cap: replay,
            tx,
        }
    }

    /// Publishes a record; `make` builds its JSON given its stream id.
    pub fn publish(&self, kind: &str, make: impl FnOnce(u64) -> String) {
        let mut inner = lock(&self.inner);
        let id = inner.next_id;
        inner.next_id += 1;
        let item = Arc::new(LiveItem {
            id,
            kind: kind.to_owned(),
            data: make(id),
        });
        if self.replay_cap > 0 {
            if inner.replay.len() == self.replay_cap {
                inner.replay.pop_front();
            }
            inner.replay.push_back(item.clone());
        }
        // No subscriber is not an error.
        let _ = self.tx.send(item);
    }

    /// Subscribes, starting after stream id `from` (`None`: only records from now on). The
    /// replayed records and the live queue join without a gap or a repeat.
    pub fn subscribe(&self, from: Option<u64>) -> Subscription {
        let inner = lock(&self.inner);
        let rx = self.tx.subscribe();
        let mut backlog = VecDeque::new();
        let mut skipped = 0;
        if let Some(from) = from {
            let oldest = inner.replay.front().map_or(inner.next_id, |i| i.id);
            let newest = inner.next_id - 1;
            if from < newest {
                skipped = oldest.saturating_sub(from + 1);
                backlog.extend(inner.replay.iter().filter(|i| i.id > from).cloned());
            }
        }
        let last = backlog.back().map(|i: &Arc<LiveItem>| i.id);
        Subscription {
            skipped,
            backlog,
            last,
            rx,
        }
    }
}

/// A subscriber's view of a run's stream.
pub struct Subscription {
    skipped: u64,
    backlog: VecDeque<Arc<LiveItem>>,
    last: Option<u64>,
    rx: broadcast::Receiver<Arc<LiveItem>>,
}

impl Subscription {
    /// The next delivery; `None` when the stream is closed.
    pub async fn next(&mut self) -> Option<Delivery> {
        if self.skipped > 0 {
            let skipped = std::mem::take(&mut self.skipped);
            return Some(Delivery::Lagged { skipped });
        }
        if let Some(item) = self.backlog.pop_front() {
            return Some(Delivery::Item(item));
        }
        loop {
            match self.rx.recv().await {
                Ok(item) => {
                    // Records already replayed from the backlog arrive on the queue too.
                    if self.last.is_some_and(|last| item.id <= last) {
                        continue;
                    }
                    return Some(Delivery::Item(item));
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    return Some(Delivery::Lagged { skipped: n });
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
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
        let hub = Hub::new(10, 3, 8);
        for _ in 0..5 {
            hub.publish("events", |id| id.to_string());
        }
        // Ids 11..=15; the replay buffer holds 13, 14, 15.
        assert_eq!(ids(&hub, Some(13), 2), ["14", "15"]);
        assert_eq!(ids(&hub, Some(10), 4), ["lagged 2", "13", "14", "15"]);
        // A subscriber from before a restart (ids up to 10 on disk, none kept).
        assert_eq!(ids(&hub, Some(4), 2), ["lagged 8", "13"]);
    }

    #[test]
    fn a_subscriber_that_falls_behind_is_told() {
        let hub = Hub::new(0, 0, 2);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut sub = hub.subscribe(None);
        for _ in 0..5 {
            hub.publish("boot", |id| id.to_string());
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
