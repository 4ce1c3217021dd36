//! A TCP proxy that injects network faults by a seeded schedule, to put between any client and a
//! server in a test (the collector's exactly-once test puts it between posting nodes and
//! `diagwire serve`). It listens on 127.0.0.1 and decides once per accepted connection, from the
//! seed and the connection's number, what happens to it:
//!
//! * [`Fault::Pass`]: bytes flow both ways untouched;
//! * [`Fault::DropRequest`]: the request is read and thrown away, the connection closed: the
//!   server never sees it;
//! * [`Fault::LoseAnswer`]: the request is forwarded whole, the server's answer read and thrown
//!   away, the connection closed: the server acted, the client never hears;
//! * [`Fault::ResetMidBody`]: only the first bytes of the request are forwarded, then both sides
//!   are closed: the server sees a request cut short;
//! * [`Fault::Delay`]: the connection waits, then passes;
//! * a partition: from a connection the schedule picks, every connection is closed at once
//!   without reaching the server until the partition's time has passed.
//!
//! Each connection is served by threads of its own (std, no runtime), every read and write is
//! bounded by a time-out, and the proxy stops accepting when dropped, so a test using it ends by
//! itself. The upstream can be changed while it runs ([`Proxy::set_upstream`]), for a server that
//! restarts on another port. The pseudo-random schedule is a few lines of splitmix64 rather than a
//! crate, so a seed gives the same schedule whatever the crate versions.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What happens to one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Bytes flow both ways.
    Pass,
    /// The request is swallowed; the server never sees it.
    DropRequest,
    /// The request reaches the server; its answer is swallowed.
    LoseAnswer,
    /// The first bytes of the request reach the server, then both sides are closed.
    ResetMidBody,
    /// The connection waits this long, then passes.
    Delay(Duration),
    /// Closed at once: the network is partitioned.
    Partitioned,
}

/// How often each fault happens, in percent of connections (the rest pass), and how long delays
/// and partitions last.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The seed: the same seed gives the same fault to the same connection number.
    pub seed: u64,
    /// Percent of connections whose request is dropped.
    pub drop_request: u64,
    /// Percent of connections whose answer is lost.
    pub lose_answer: u64,
    /// Percent of connections closed mid-body.
    pub reset_mid_body: u64,
    /// Percent of connections delayed, by up to `max_delay`.
    pub delay: u64,
    /// The longest delay.
    pub max_delay: Duration,
    /// Percent of connections that start a partition of `partition_for`.
    pub partition: u64,
    /// How long a partition lasts.
    pub partition_for: Duration,
}

impl Schedule {
    /// A schedule of every fault, each on a few percent of connections, for `seed`.
    pub fn mixed(seed: u64) -> Schedule {
        Schedule {
            seed,
            drop_request: 8,
            lose_answer: 12,
            reset_mid_body: 8,
            delay: 10,
            max_delay: Duration::from_millis(200),
            partition: 1,
            partition_for: Duration::from_millis(300),
        }
    }

    /// The fault of connection number `n` (before partitions, which depend on time too).
    pub fn fault(&self, n: u64) -> Fault {
        let r = splitmix(self.seed ^ splitmix(n));
        let pick = r % 100;
        let mut edge = 0;
        for (percent, fault) in [
            (self.partition, Fault::Partitioned),
            (self.drop_request, Fault::DropRequest),
            (self.lose_answer, Fault::LoseAnswer),
            (self.reset_mid_body, Fault::ResetMidBody),
        ] {
            edge += percent;
            if pick < edge {
                return fault;
            }
        }
        edge += self.delay;
        if pick < edge {
            let ms = self.max_delay.as_millis().max(1) as u64;
            return Fault::Delay(Duration::from_millis((r >> 8) % ms));
        }
        Fault::Pass
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How many connections met each fault.
#[derive(Debug, Default)]
pub struct Tally {
    /// Connections passed untouched (delayed ones included).
    pub passed: AtomicU64,
    /// Requests dropped.
    pub dropped: AtomicU64,
    /// Answers lost.
    pub lost_answers: AtomicU64,
    /// Connections closed mid-body.
    pub reset: AtomicU64,
    /// Connections delayed.
    pub delayed: AtomicU64,
    /// Connections closed by a partition.
    pub partitioned: AtomicU64,
}

/// Every read and write of the proxy gives up after this long.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A running proxy; it stops accepting when dropped.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    upstream: Arc<Mutex<SocketAddr>>,
    /// What happened so far.
    pub tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Starts a proxy on 127.0.0.1 in front of `upstream`.
    pub fn start(upstream: SocketAddr, schedule: Schedule) -> io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let upstream = Arc::new(Mutex::new(upstream));
        let tally = Arc::new(Tally::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (up, t, s) = (upstream.clone(), tally.clone(), stop.clone());
        thread::spawn(move || accept(listener, up, schedule, t, s));
        Ok(Proxy {
            addr,
            upstream,
            tally,
            stop,
        })
    }

    /// Sends later connections to `upstream`.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap_or_else(|e| e.into_inner()) = upstream;
    }

    /// How many connections met each fault: (passed, dropped, lost answers, reset, delayed,
    /// partitioned).
    pub fn counts(&self) -> [u64; 6] {
        let t = &self.tally;
        [
            &t.passed,
            &t.dropped,
            &t.lost_answers,
            &t.reset,
            &t.delayed,
            &t.partitioned,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

fn accept(
    listener: TcpListener,
    upstream: Arc<Mutex<SocketAddr>>,
    schedule: Schedule,
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
) {
    let mut partitioned_until: Option<Instant> = None;
    for (n, conn) in (0u64..).zip(listener.incoming()) {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = conn else { continue };
        let mut fault = schedule.fault(n);
        if partitioned_until.is_some_and(|t| Instant::now() < t) {
            fault = Fault::Partitioned;
        } else if fault == Fault::Partitioned {
            partitioned_until = Some(Instant::now() + schedule.partition_for);
        }
        let to = *upstream.lock().unwrap_or_else(|e| e.into_inner());
        let tally = tally.clone();
        thread::spawn(move || {
            let _ = serve(client, to, fault, &tally);
        });
    }
}

fn timeouts(s: &TcpStream) -> io::Result<()> {
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))
}

/// Reads what the client sends within a short while (a request, or its first part).
fn read_some(client: &mut TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    client.set_read_timeout(Some(Duration::from_millis(500)))?;
    let n = client.read(buf);
    client.set_read_timeout(Some(IO_TIMEOUT))?;
    n
}

fn serve(mut client: TcpStream, to: SocketAddr, fault: Fault, tally: &Tally) -> io::Result<()> {
    timeouts(&client)?;
    let count = |c: &AtomicU64| {
        c.fetch_add(1, Ordering::Relaxed);
    };
    match fault {
        Fault::Partitioned => {
            count(&tally.partitioned);
            return client.shutdown(Shutdown::Both);
        }
        Fault::DropRequest => {
            count(&tally.dropped);
            let mut buf = [0u8; 16 << 10];
            let _ = read_some(&mut client, &mut buf);
            return client.shutdown(Shutdown::Both);
        }
        Fault::Delay(d) => {
            count(&tally.delayed);
            thread::sleep(d);
        }
        _ => {}
    }
    let mut server = TcpStream::connect_timeout(&to, Duration::from_secs(2))?;
    timeouts(&server)?;
    match fault {
        Fault::ResetMidBody => {
            count(&tally.reset);
            let mut buf = [0u8; 16 << 10];
            let n = read_some(&mut client, &mut buf)?;
            // Headers and a part of the body at most: never the whole request.
            let cut = (n / 2).max(1).min(n);
            server.write_all(&buf[..cut])?;
            let _ = server.shutdown(Shutdown::Both);
            client.shutdown(Shutdown::Both)
        }
        Fault::LoseAnswer => {
            count(&tally.lost_answers);
            // The request goes through whole; the answer's first bytes are read and dropped.
            let mut c = client.try_clone()?;
            let mut s = server.try_clone()?;
            let forward = thread::spawn(move || io::copy(&mut c, &mut s));
            let mut buf = [0u8; 4096];
            let _ = server.read(&mut buf);
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
            let _ = forward.join();
            Ok(())
        }
        _ => {
            if fault == Fault::Pass {
                count(&tally.passed);
            }
            let mut c = client.try_clone()?;
            let mut s = server.try_clone()?;
            let forward = thread::spawn(move || {
                let r = io::copy(&mut c, &mut s);
                let _ = s.shutdown(Shutdown::Write);
                r
            });
            let _ = io::copy(&mut server, &mut client);
            let _ = client.shutdown(Shutdown::Both);
            let _ = forward.join();
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_schedule_and_every_fault_happens() {
        let a: Vec<Fault> = (0..1000).map(|n| Schedule::mixed(7).fault(n)).collect();
        let b: Vec<Fault> = (0..1000).map(|n| Schedule::mixed(7).fault(n)).collect();
        assert_eq!(a, b);
        let c: Vec<Fault> = (0..1000).map(|n| Schedule::mixed(8).fault(n)).collect();
        assert_ne!(a, c);
        for want in [
            Fault::Pass,
            Fault::DropRequest,
            Fault::LoseAnswer,
            Fault::ResetMidBody,
            Fault::Partitioned,
        ] {
            assert!(a.contains(&want), "{want:?}");
        }
        assert!(a.iter().any(|f| matches!(f, Fault::Delay(_))));
    }
}
