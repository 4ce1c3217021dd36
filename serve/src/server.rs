//! Serving the router on a TCP listener: HTTP/1.1 connections through hyper with the
//! collector's header time-out, connection limit and idle bound (axum's own `serve` sets none of
//! them), and the `diagwire serve` command around it.
//!
//! **Idle connections.** A connection is idle while no request of it is being served: from its
//! accept until its first request head is complete, and between a reply's last byte and the next
//! head on a kept-alive connection. [`Conns`] queues the idle ones oldest first; the oldest is
//! closed when more than `Limits::max_idle_connections` are idle, and when a new connection
//! arrives while every connection place is taken. So connections that never send (or keep alive
//! and wait) never take the places a posting node needs. A connection is closed only while it is
//! idle: one whose request began is served to its end.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::Frame;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};

use crate::sync::lock;
use crate::{Collector, ServeArgs, router};

/// The connections served now, and which of them are idle (oldest first).
#[derive(Debug)]
pub struct Conns {
    max_idle: usize,
    state: Mutex<ConnState>,
}

#[derive(Debug, Default)]
struct ConnState {
    /// Numbers connections and the moments they became idle, in order.
    next: u64,
    /// Each connection: its requests being served, its place in the idle queue, its closer.
    open: HashMap<u64, Slot>,
    /// The idle connections by the moment they became idle: the first is the oldest.
    idle: BTreeMap<u64, u64>,
}

#[derive(Debug)]
struct Slot {
    serving: usize,
    idle_since: Option<u64>,
    close: Arc<Notify>,
}

/// One connection's part in [`Conns`]: forgotten when dropped.
#[derive(Debug)]
pub struct Conn {
    conns: Arc<Conns>,
    id: u64,
    /// Notified when the connection is to be closed as idle.
    pub close: Arc<Notify>,
}

/// A request being served; its connection is idle again once every one is dropped.
#[derive(Debug)]
pub struct Serving {
    conns: Arc<Conns>,
    id: u64,
}

impl ConnState {
    fn queue_idle(&mut self, id: u64) {
        let at = self.next;
        self.next += 1;
        if let Some(slot) = self.open.get_mut(&id) {
            slot.idle_since = Some(at);
            self.idle.insert(at, id);
        }
    }

    /// Asks the oldest idle connection to close; whether there was one.
    fn close_oldest(&mut self) -> bool {
        let Some((_, id)) = self.idle.pop_first() else {
            return false;
        };
        if let Some(slot) = self.open.get_mut(&id) {
            slot.idle_since = None;
            slot.close.notify_one();
        }
        true
    }

    fn trim(&mut self, max_idle: usize) {
        while self.idle.len() > max_idle.max(1) {
            self.close_oldest();
        }
    }
}

impl Conns {
    /// No connection yet; at most `max_idle` idle at once.
    pub fn new(max_idle: usize) -> Arc<Conns> {
        Arc::new(Conns {
            max_idle,
            state: Mutex::new(ConnState::default()),
        })
    }

    /// A connection just accepted: idle (it has sent no request head yet).
    pub fn open(self: &Arc<Conns>) -> Conn {
        let mut state = lock(&self.state);
        let id = state.next;
        state.next += 1;
        let close = Arc::new(Notify::new());
        state.open.insert(
            id,
            Slot {
                serving: 0,
                idle_since: None,
                close: close.clone(),
            },
        );
        state.queue_idle(id);
        state.trim(self.max_idle);
        Conn {
            conns: self.clone(),
            id,
            close,
        }
    }

    /// Asks the oldest idle connection to close (a new connection waits for a place); whether
    /// one was idle.
    pub fn close_oldest_idle(&self) -> bool {
        lock(&self.state).close_oldest()
    }

    /// How many connections are idle now.
    pub fn idle(&self) -> usize {
        lock(&self.state).idle.len()
    }

    fn serving(self: &Arc<Conns>, id: u64) -> Serving {
        let mut state = lock(&self.state);
        if let Some(slot) = state.open.get_mut(&id) {
            slot.serving += 1;
            if let Some(at) = slot.idle_since.take() {
                state.idle.remove(&at);
            }
        }
        Serving {
            conns: self.clone(),
            id,
        }
    }

    /// Whether the connection is serving a request now (then it is not closed as idle).
    fn is_serving(&self, id: u64) -> bool {
        lock(&self.state)
            .open
            .get(&id)
            .is_some_and(|s| s.serving > 0)
    }
}

impl Conn {
    /// Marks a request of this connection as being served until the guard is dropped.
    pub fn serving(&self) -> Serving {
        self.conns.serving(self.id)
    }

    /// Whether a request of this connection is being served now.
    pub fn is_serving(&self) -> bool {
        self.conns.is_serving(self.id)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let mut state = lock(&self.conns.state);
        if let Some(slot) = state.open.remove(&self.id)
            && let Some(at) = slot.idle_since
        {
            state.idle.remove(&at);
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let mut state = lock(&self.conns.state);
        let idle_again = state.open.get_mut(&self.id).is_some_and(|slot| {
            slot.serving = slot.serving.saturating_sub(1);
            slot.serving == 0 && slot.idle_since.is_none()
        });
        if idle_again {
            state.queue_idle(self.id);
            state.trim(self.conns.max_idle);
        }
    }
}

/// A reply's body holding its request's [`Serving`] until hyper has sent it (or dropped it).
struct Served {
    body: Body,
    _serving: Serving,
}

impl hyper::body::Body for Served {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Serves `collector` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    collector: Arc<Collector>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let limits = collector.config.limits.clone();
    let app = router(collector.clone());
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let conns = Conns::new(limits.max_idle_connections);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of descriptors or a connection reset before accept: try again shortly.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        // Every place taken: the oldest idle connection makes room for this one (when none is
        // idle, it waits for a connection to end).
        let permit = match permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                conns.close_oldest_idle();
                tokio::select! {
                    p = permits.clone().acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => return Ok(()),
                    },
                    () = &mut shutdown => return Ok(()),
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let conn = conns.open();
        let header_timeout = limits.header_timeout;
        let inner = TowerToHyperService::new(app.clone());
        let collector = collector.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(|request| {
                let serving = conn.serving();
                let reply = hyper::service::Service::call(&inner, request);
                async move {
                    let reply = reply.await?;
                    Ok::<_, Infallible>(reply.map(|body| Served {
                        body,
                        _serving: serving,
                    }))
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            loop {
                tokio::select! {
                    // A connection that fails (a client gone, a time-out) ends on its own.
                    _ = connection.as_mut() => break,
                    () = conn.close.notified() => {
                        // Closed as idle, unless a request began meanwhile (then it is served,
                        // and the connection is queued again once idle).
                        if !conn.is_serving() {
                            collector.metrics.idle_closed.inc();
                            break;
                        }
                    }
                }
            }
        });
    }
}

/// The exit status of a collector that could not start or keep serving: 2, as every `diagwire`
/// command that could not run.
fn could_not_run() -> ExitCode {
    ExitCode::from(2)
}

/// `diagwire serve`: opens the collector on `--root`, listens on `--listen`, prints
/// `listening on ADDR` as the first line of standard output and serves until interrupted.
pub fn run(args: &ServeArgs) -> ExitCode {
    if let Err(e) = crate::observe::init_logging(args.log.as_deref(), args.log_format == "json") {
        eprintln!("error: {e}");
        return could_not_run();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return could_not_run();
        }
    };
    runtime.block_on(async {
        let collector = match Collector::open(args.config()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {}: {e}", args.root.display());
                return could_not_run();
            }
        };
        let listener = match TcpListener::bind(args.listen.as_str()).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {}: {e}", args.listen);
                return could_not_run();
            }
        };
        match listener.local_addr() {
            Ok(addr) => println!("listening on {addr}"),
            Err(_) => println!("listening on {}", args.listen),
        }
        let _ = std::io::stdout().flush();
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match serve(listener, collector, shutdown).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                could_not_run()
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    /// What happens to the connections, in order.
    enum Step {
        /// A connection arrives (named by its index in arrival order).
        Open,
        /// A request of connection `i` begins.
        Serve(usize),
        /// The request of connection `i` ends (its reply sent).
        Done(usize),
        /// Connection `i` ends on its own.
        End(usize),
        /// A connection arrives while every place is taken.
        AtTheCap,
    }

    /// The connections asked to close as idle after `steps`, with at most `max_idle` idle.
    fn closed(max_idle: usize, steps: &[Step]) -> Vec<usize> {
        let conns = Conns::new(max_idle);
        let mut open: Vec<Option<Conn>> = Vec::new();
        let mut serving: Vec<Option<Serving>> = Vec::new();
        for step in steps {
            match step {
                Step::Open => {
                    open.push(Some(conns.open()));
                    serving.push(None);
                }
                Step::Serve(i) => serving[*i] = open[*i].as_ref().map(Conn::serving),
                Step::Done(i) => serving[*i] = None,
                Step::End(i) => open[*i] = None,
                Step::AtTheCap => {
                    conns.close_oldest_idle();
                }
            }
        }
        open.iter()
            .enumerate()
            .filter(|(_, c)| {
                c.as_ref()
                    .is_some_and(|c| c.close.notified().now_or_never().is_some())
            })
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn idle_connections_are_closed_oldest_first() {
        use Step::*;
        let cases: &[(&str, usize, &[Step], &[usize])] = &[
            (
                "under the bound, none is closed",
                3,
                &[Open, Open, Open],
                &[],
            ),
            (
                "past the bound, the oldest idle is closed",
                2,
                &[Open, Open, Open, Open],
                &[0, 1],
            ),
            (
                "a connection being served is never closed as idle",
                1,
                &[Open, Serve(0), Open, Open],
                &[1],
            ),
            (
                "a kept-alive connection idles again as the newest once its reply is sent",
                2,
                &[Open, Open, Serve(0), Done(0), Open],
                &[1],
            ),
            (
                "a connection that ended is not in the queue",
                1,
                &[Open, End(0), Open],
                &[],
            ),
            (
                "at the connection cap, the oldest idle makes room",
                8,
                &[Open, Serve(0), Open, Open, AtTheCap],
                &[1],
            ),
            (
                "at the connection cap with none idle, none is closed",
                8,
                &[Open, Serve(0), AtTheCap],
                &[],
            ),
        ];
        for (name, max_idle, steps, want) in cases {
            assert_eq!(closed(*max_idle, steps), *want, "{name}");
        }
    }
}
