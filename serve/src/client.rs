//! A small HTTP/1.1 client of the collector (hyper's client connection, over one keep-alive TCP
//! connection): [`Connection`] posts records as a node does (the tests and the load generator
//! use it), and [`subscribe`] / [`follow`] read a run's live stream and yield its records and
//! its `lagged` and `end` notices. The Server-Sent Events framing is read here (a few lines; no
//! SSE client crate is in the dependency tree).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use diagwire::v1::LiveRecord;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// A client error: the sentence says what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError(pub String);

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClientError {}

fn err(what: impl std::fmt::Display) -> ClientError {
    ClientError(what.to_string())
}

/// A reply: its status and body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Bytes,
}

/// One keep-alive connection to a collector, reopened when the server closed it.
pub struct Connection {
    addr: SocketAddr,
    sender: Option<SendRequest<Full<Bytes>>>,
}

async fn open(addr: SocketAddr) -> Result<SendRequest<Full<Bytes>>, ClientError> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| err(format!("cannot connect to {addr}: {e}")))?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| err(format!("HTTP handshake with {addr}: {e}")))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

impl Connection {
    /// A connection to `addr` (opened on first use).
    pub fn new(addr: SocketAddr) -> Connection {
        Connection { addr, sender: None }
    }

    /// Sends a request and reads the whole reply. A connection the server had closed is
    /// reopened once.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, ClientError> {
        for attempt in 0..2 {
            let sender = match &mut self.sender {
                Some(s) if !s.is_closed() => s,
                _ => self.sender.insert(open(self.addr).await?),
            };
            if sender.ready().await.is_err() {
                self.sender = None;
                continue;
            }
            let mut request = hyper::Request::builder()
                .method(method)
                .uri(path)
                .header("host", self.addr.to_string());
            for (k, v) in headers {
                request = request.header(*k, *v);
            }
            let request = request.body(Full::new(body.clone())).map_err(err)?;
            match sender.send_request(request).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body = response
                        .into_body()
                        .collect()
                        .await
                        .map_err(|e| err(format!("reading the reply: {e}")))?
                        .to_bytes();
                    return Ok(Reply { status, body });
                }
                Err(e) if attempt == 0 && e.is_canceled() || e.is_closed() => {
                    self.sender = None;
                }
                Err(e) => return Err(err(format!("{method} {path}: {e}"))),
            }
        }
        Err(err(format!("{method} {path}: the connection was closed")))
    }

    /// Posts one record as a node does: `POST /diag/<kind>` with `x-run-id`, `x-node-id`,
    /// `x-node-send-ms` and the content type.
    pub async fn post(
        &mut self,
        kind: &str,
        run_id: &str,
        node_id: &str,
        send_ms: u64,
        content_type: &str,
        body: Bytes,
    ) -> Result<Reply, ClientError> {
        let send = send_ms.to_string();
        self.request(
            "POST",
            &format!("/diag/{kind}"),
            &[
                ("content-type", content_type),
                ("x-run-id", run_id),
                ("x-node-id", node_id),
                ("x-node-send-ms", &send),
            ],
            body,
        )
        .await
    }

    /// `GET path`.
    pub async fn get(&mut self, path: &str) -> Result<Reply, ClientError> {
        self.request("GET", path, &[], Bytes::new()).await
    }
}

/// What a live stream delivers.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// An accepted record, with its stream id (resume after it with `from`).
    Record {
        /// The stream id.
        id: u64,
        /// The record.
        record: LiveRecord,
    },
    /// `skipped` records the collector could not give (their staged files are gone or do not
    /// read).
    Lagged {
        /// How many.
        skipped: u64,
    },
    /// The run's bundle is written and every record before it was sent; the stream closes.
    End {
        /// The run's last stream id.
        last: u64,
    },
}

/// How long a subscriber waits for the TCP connection and then for the response's head: a server
/// that accepts and never answers is given up on, not waited on for ever.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// How much of an error reply's body a subscriber reads to quote it (the rest is never read).
const ERROR_BODY_BYTES: usize = 4 << 10;

/// The largest event the subscriber buffers (a record's body may be 32 MiB, more as JSON
/// decoded from protobuf).
const MAX_EVENT_BYTES: usize = 256 << 20;

/// A run's live stream being read.
pub struct Subscription {
    body: Incoming,
    buf: Vec<u8>,
    /// How far `buf` was searched for the blank line that ends an event: each byte is looked at
    /// once, however many chunks a long event arrives in.
    scanned: usize,
}

/// Subscribes to `url` (`http://HOST:PORT/diag/stream/{run_id}`, a base path and a query string
/// allowed), resuming after stream id `from` when given (sent as `Last-Event-ID`; a `from` in the
/// query string wins): `Some(0)` reads the run from its first record.
pub async fn subscribe(url: &str, from: Option<u64>) -> Result<Subscription, ClientError> {
    let uri: hyper::Uri = url.parse().map_err(|e| err(format!("{url:?}: {e}")))?;
    if uri.scheme_str() != Some("http") {
        return Err(err(format!("{url:?}: only http:// URLs are followed")));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| err(format!("{url:?} names no host")))?
        .clone();
    let port = authority.port_u16().unwrap_or(80);
    let stream = tokio::time::timeout(
        ANSWER_WITHIN,
        tokio::net::TcpStream::connect((authority.host(), port)),
    )
    .await
    .map_err(|_| {
        err(format!(
            "cannot connect to {authority}: no connection within {ANSWER_WITHIN:?}"
        ))
    })?
    .map_err(|e| err(format!("cannot connect to {authority}: {e}")))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| err(format!("HTTP handshake with {authority}: {e}")))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let path = uri
        .path_and_query()
        .map_or("/".to_owned(), |p| p.as_str().to_owned());
    let mut request = hyper::Request::builder()
        .uri(&path)
        .header("host", authority.as_str())
        .header("accept", "text/event-stream");
    if let Some(from) = from {
        request = request.header("last-event-id", from.to_string());
    }
    let request = request.body(Full::new(Bytes::new())).map_err(err)?;
    let response = tokio::time::timeout(ANSWER_WITHIN, sender.send_request(request))
        .await
        .map_err(|_| err(format!("GET {url}: no answer within {ANSWER_WITHIN:?}")))?
        .map_err(|e| err(format!("GET {url}: {e}")))?;
    if !response.status().is_success() {
        let status = response.status();
        let body = error_body(response.into_body()).await;
        return Err(err(format!(
            "GET {url}: {status}: {}",
            diagwire::problem::printable(&String::from_utf8_lossy(&body))
        )));
    }
    Ok(Subscription {
        body: response.into_body(),
        buf: Vec::new(),
        scanned: 0,
    })
}

/// The first [`ERROR_BODY_BYTES`] of an error reply's body, read for at most [`ANSWER_WITHIN`]:
/// an endless or stalled body is cut, never collected whole.
async fn error_body(mut body: Incoming) -> Vec<u8> {
    let mut out = Vec::new();
    let read = async {
        while out.len() < ERROR_BODY_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        let room = ERROR_BODY_BYTES - out.len();
                        out.extend_from_slice(&data[..data.len().min(room)]);
                    }
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(ANSWER_WITHIN, read).await;
    out
}

impl Subscription {
    /// The next record or lag notice; `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Result<StreamEvent, ClientError>> {
        loop {
            if let Some(end) = find_blank_line(&self.buf, self.scanned) {
                let block: Vec<u8> = self.buf.drain(..end.1).collect();
                self.scanned = 0;
                match parse_event(&block[..end.0]) {
                    Ok(Some(event)) => return Some(Ok(event)),
                    Ok(None) => continue,
                    Err(e) => return Some(Err(e)),
                }
            }
            // The blank line may start in the last two bytes and end in the next chunk.
            self.scanned = self.buf.len().saturating_sub(2);
            if self.buf.len() > MAX_EVENT_BYTES {
                return Some(Err(err(format!(
                    "an event of the stream is longer than {MAX_EVENT_BYTES} bytes"
                ))));
            }
            match self.body.frame().await? {
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Err(e) => return Some(Err(err(format!("reading the stream: {e}")))),
            }
        }
    }
}

/// Where the first event block ends: (end of its text, end of the blank line), searching from
/// `from` (everything before it was searched already and holds no blank line).
fn find_blank_line(buf: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut i = from;
    while i + 1 < buf.len() {
        if buf[i] == b'\n' {
            if buf[i + 1] == b'\n' {
                return Some((i, i + 2));
            }
            if buf[i + 1] == b'\r' && buf.get(i + 2) == Some(&b'\n') {
                return Some((i, i + 3));
            }
        }
        i += 1;
    }
    None
}

/// One event block → an event; `None` for a comment (`: ping`) or an event of another name.
fn parse_event(block: &[u8]) -> Result<Option<StreamEvent>, ClientError> {
    let text = std::str::from_utf8(block).map_err(|_| err("an event is not UTF-8"))?;
    let (mut name, mut id, mut data) = ("message", None, String::new());
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = value,
            "id" => id = value.parse::<u64>().ok(),
            "data" => {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            _ => {}
        }
    }
    if data.is_empty() {
        return Ok(None);
    }
    if name == "lagged" {
        #[derive(serde::Deserialize)]
        struct Lagged {
            skipped: u64,
        }
        let lagged: Lagged =
            serde_json::from_str(&data).map_err(|e| err(format!("a lagged event: {e}")))?;
        return Ok(Some(StreamEvent::Lagged {
            skipped: lagged.skipped,
        }));
    }
    if name == "end" {
        #[derive(serde::Deserialize)]
        struct End {
            last: u64,
        }
        let end: End =
            serde_json::from_str(&data).map_err(|e| err(format!("an end event: {e}")))?;
        return Ok(Some(StreamEvent::End { last: end.last }));
    }
    let record: LiveRecord = serde_json::from_str(&data).map_err(|e| {
        err(format!(
            "event {:?} is not a live record: {e}",
            diagwire::problem::printable(name)
        ))
    })?;
    Ok(Some(StreamEvent::Record {
        id: id.unwrap_or(0),
        record,
    }))
}

/// A live stream read on a thread of its own, as a blocking iterator: each item a record, a lag
/// notice, or the error that ended the stream. Dropping it ends the thread at its next event.
pub struct Follow {
    rx: std::sync::mpsc::Receiver<Result<StreamEvent, ClientError>>,
}

impl Iterator for Follow {
    type Item = Result<StreamEvent, ClientError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rx.recv().ok()
    }
}

impl Follow {
    /// The next item, waiting at most `timeout`; `None` when nothing came (or the stream ended).
    pub fn next_within(&mut self, timeout: Duration) -> Option<Result<StreamEvent, ClientError>> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// The next item, waiting at most `timeout`, telling a quiet stream from one that ended.
    pub fn wait(&mut self, timeout: Duration) -> Waited {
        match self.rx.recv_timeout(timeout) {
            Ok(item) => Waited::Item(item),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Waited::Nothing,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Waited::Ended,
        }
    }
}

/// What waiting on a followed stream gave.
#[derive(Debug)]
pub enum Waited {
    /// A record, a lag notice or the error that ended the stream.
    Item(Result<StreamEvent, ClientError>),
    /// Nothing within the time.
    Nothing,
    /// The stream ended (the collector closed it).
    Ended,
}

/// Follows `url` ([`subscribe`]) from a blocking caller; fails when the subscription is refused.
pub fn follow(url: &str, from: Option<u64>) -> Result<Follow, ClientError> {
    follow_unless(url, from, &|| false)
}

/// [`follow`], giving up while it waits for the subscription as soon as `give_up` says so (it is
/// asked every 50 ms: a deadline, or Ctrl-C).
pub fn follow_unless(
    url: &str,
    from: Option<u64>,
    give_up: &dyn Fn() -> bool,
) -> Result<Follow, ClientError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(256);
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
    let url = url.to_owned();
    std::thread::Builder::new()
        .name("diagwire-follow".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = ready_tx.send(Err(err(e)));
                    return;
                }
            };
            runtime.block_on(async move {
                let mut sub = match subscribe(&url, from).await {
                    Ok(s) => {
                        let _ = ready_tx.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Some(item) = sub.next().await {
                    let stop = item.is_err();
                    if tx.send(item).is_err() || stop {
                        return;
                    }
                }
            });
        })
        .map_err(err)?;
    loop {
        match ready_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(ready) => break ready?,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(err("the stream's thread ended before subscribing"));
            }
            // The thread ends at its next event once `rx` is dropped.
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if give_up() => {
                return Err(err("gave up waiting for the collector's answer"));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    Ok(Follow { rx })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_blocks_are_read_as_the_collector_writes_them() {
        let record =
            r#"{"run_id":"r","node_id":"n","kind":"boot","recv_ms":1,"seq":1,"body":null}"#;
        let cases: Vec<(String, Option<StreamEvent>)> = vec![
            (": ping".into(), None),
            (
                "event: lagged\ndata: {\"skipped\":7}".into(),
                Some(StreamEvent::Lagged { skipped: 7 }),
            ),
            (
                "event: end\nid: 12\ndata: {\"last\":12}".into(),
                Some(StreamEvent::End { last: 12 }),
            ),
            (
                format!("event: boot\nid: 9\ndata: {record}"),
                Some(StreamEvent::Record {
                    id: 9,
                    record: serde_json::from_str(record).unwrap(),
                }),
            ),
            (
                format!("event: boot\r\nid: 9\r\ndata: {record}\r"),
                Some(StreamEvent::Record {
                    id: 9,
                    record: serde_json::from_str(record).unwrap(),
                }),
            ),
        ];
        for (block, want) in cases {
            assert_eq!(parse_event(block.as_bytes()).unwrap(), want, "{block}");
        }
        assert!(parse_event(b"event: boot\ndata: {").is_err());
    }

    /// A blank line is found wherever the chunks of the stream split it, searching each byte
    /// once: the search of a chunk starts where the previous one's ended, two bytes back.
    #[test]
    fn the_blank_line_ending_an_event_is_found_across_chunks() {
        let events: [&[u8]; 2] = [b"data: x\n\ndata: y", b"data: x\r\n\r\ndata: y"];
        for text in events {
            let want = find_blank_line(text, 0).expect("a blank line");
            for split in 1..text.len() {
                let mut scanned = 0;
                let mut found = find_blank_line(&text[..split], scanned);
                if found.is_none() {
                    scanned = split.saturating_sub(2);
                    found = find_blank_line(text, scanned);
                }
                assert_eq!(found, Some(want), "{text:?} split at {split}");
            }
        }
        assert_eq!(find_blank_line(b"a\n\nb", 0), Some((1, 3)));
        assert_eq!(find_blank_line(b"a\r\n\r\nb", 0), Some((2, 5)));
        assert_eq!(find_blank_line(b"data: no end\n", 0), None);
    }
}
