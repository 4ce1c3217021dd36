//! The HTTP protocol of swactor's collector (`docs/collector.md`): the ingest routes
//! (`POST /diag/<kind>`), finalize with its wait and assembly, `GET /diag/bundle/{run_id}` with
//! the serve decision, `GET /diag/runs` and the live stream `GET /diag/stream/{run_id}`, as an
//! embeddable axum [`Router`].

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use diagwire::layout::{self, FileKind};
use diagwire::quarantine::{Why, WhyProblem};
use diagwire::v1::{
    ClockEcho, ErrorBody, Hints, LiveRecord, PostAck, PostProblem, RunNodeSummary, RunSummary,
};
use http_body_util::BodyExt;

use crate::Collector;
use crate::budget::{Bounds, Place, Reserved, post_cost};
use crate::door::{self, Door, Problems, Verdict};
use crate::live::Delivery;
use crate::store::{Post, Quarantined, StoreError};
use crate::sync::lock;

/// The collector's routes over `collector`. Nest it under a base path to serve nodes configured
/// with one (`http://host:port/base`).
pub fn router(collector: Arc<Collector>) -> Router {
    Router::new()
        .route("/diag/runs", get(runs))
        .route("/diag/bundle/{run_id}", get(bundle))
        .route("/diag/stream/{run_id}", get(stream))
        .route("/diag/{kind}", post(ingest))
        .route("/metrics", get(crate::observe::metrics))
        .layer(DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(
            collector.clone(),
            crate::observe::layer,
        ))
        .with_state(collector)
}

/// Milliseconds since the epoch now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// An error reply: `{"error": message}` with `status`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = serde_json::to_vec(&ErrorBody::new(message)).unwrap_or_default();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

fn store_error(e: StoreError) -> Response {
    match e {
        StoreError::Limit(m) => error(StatusCode::PAYLOAD_TOO_LARGE, m),
        StoreError::Io(m) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
    }
}

/// `503` with `Retry-After`: the memory budget or the places asked for are spent for now. The
/// connection is closed after it (a body not read is not drained).
fn busy(bounds: &Bounds, message: impl Into<String>) -> Response {
    let mut response = error(StatusCode::SERVICE_UNAVAILABLE, message);
    let headers = response.headers_mut();
    headers.insert(
        header::RETRY_AFTER,
        HeaderValue::from(bounds.retry_after.as_secs().max(1)),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Reads an id header: present, not empty, at most `max` bytes, and one safe path component
/// (`[A-Za-z0-9._-]`, not `.` or `..`), so the id names its staging directory unchanged.
fn id_header(headers: &HeaderMap, name: &str, max: usize) -> Result<String, String> {
    let bad = |why: String| Err(why);
    let Some(value) = headers.get(name) else {
        return bad(format!("missing header {name}"));
    };
    let raw = value.as_bytes();
    if raw.is_empty() {
        return bad(format!("empty header {name}"));
    }
    if raw.len() > max {
        return bad(format!("header {name} is longer than {max} bytes"));
    }
    let text = String::from_utf8_lossy(raw);
    if layout::sanitize_component(&text) != text {
        return bad(format!(
            "header {name} {:?} is not a safe name (letters, digits, '.', '_', '-'; not . or ..)",
            diagwire::problem::printable(&text)
        ));
    }
    Ok(text.into_owned())
}

/// The file kind of an ingest route's last segment: `boot`, `events`, `snapshot`, `finalize`, or
/// `vastai_<kind>` (any vast.ai kind, later ones included).
fn route_kind(kind: &str) -> Option<FileKind> {
    match kind {
        "boot" => Some(FileKind::Boot),
        "events" => Some(FileKind::Events),
        "snapshot" => Some(FileKind::Snapshot),
        "finalize" => Some(FileKind::Finalize),
        other => {
            let k = other.strip_prefix("vastai_")?;
            (layout::is_vastai_kind(k) && other.len() <= 64).then(|| FileKind::Vastai(k.into()))
        }
    }
}

/// Reads a body of at most `max` bytes within `timeout`, with the memory it costs reserved
/// from the budget first: 413 without reading further when the declared length or the bytes
/// read pass the limit, 408 when the client is too slow, 503 when the budget does not hold it
/// (a body without a declared length reserves as it arrives, a MiB at a time).
async fn read_body(
    body: Body,
    headers: &HeaderMap,
    max: usize,
    timeout: Duration,
    bounds: &Bounds,
) -> Result<(Bytes, Vec<Reserved>), Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {max} bytes"),
        ));
    }
    let spent = |bounds: &Bounds| {
        busy(
            bounds,
            format!(
                "the collector's memory for bodies in flight ({} bytes) is spent; retry later",
                bounds.memory_bytes()
            ),
        )
    };
    const STEP: u64 = 1 << 20;
    let mut covered = declared.unwrap_or(STEP);
    let mut reserved = match bounds.try_reserve(post_cost(covered)) {
        Some(r) => vec![r],
        None => return Err(spent(bounds)),
    };
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    let mut body = body;
    let read = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                error(
                    StatusCode::BAD_REQUEST,
                    format!("the body could not be read: {e}"),
                )
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if bytes.len() + data.len() > max {
                return Err(error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the body is larger than {max} bytes"),
                ));
            }
            let need = (bytes.len() + data.len()) as u64;
            if need > covered {
                let more = (need - covered).max(STEP);
                match bounds.try_reserve(more.saturating_mul(4)) {
                    Some(r) => reserved.push(r),
                    None => return Err(spent(bounds)),
                }
                covered += more;
            }
            bytes.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout(timeout, read).await {
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {} ms", timeout.as_millis()),
        )),
        Ok(Err(r)) => Err(r),
        Ok(Ok(())) => Ok((Bytes::from(bytes), reserved)),
    }
}

/// What one post came to, for its reply.
struct Outcome {
    seq: Option<u64>,
    problems: Problems,
    quarantined: Option<String>,
    unreadable: Option<String>,
    /// Records left out as already staged: (nothing new was staged, how many, conflicts kept).
    deduplicated: Option<(bool, u64, u64)>,
}

impl Outcome {
    /// A body kept in quarantine, nothing staged.
    fn kept(at: String, problems: Problems, unreadable: Option<String>) -> Outcome {
        Outcome {
            seq: None,
            problems,
            quarantined: Some(at),
            unreadable,
            deduplicated: None,
        }
    }
}

/// A post admitted at the door: who posts what, read from its route and headers.
#[derive(Clone)]
struct Admitted {
    run_id: String,
    node: String,
    /// `x-node-send-ms`, echoed back (0 when missing or not an integer).
    send_ms: u64,
    /// The route's last segment, as posted.
    kind_name: String,
    /// The record kind; `None` for an unknown kind whose body is kept in quarantine.
    kind: Option<FileKind>,
    content_type: Option<String>,
    /// The body's encoding by its content type (JSON without one); `None` when neither.
    encoding: Option<layout::Encoding>,
    recv_ms: u64,
}

/// `POST /diag/<kind>`: admitted from its headers, its body read within the budget, decided by
/// the door while it is flushed, stored, then answered (a finalize after its wait and
/// assembly).
async fn ingest(
    State(c): State<Arc<Collector>>,
    Path(kind_name): Path<String>,
    request: Request,
) -> Response {
    let recv_ms = now_ms();
    let (parts, body) = request.into_parts();
    let admitted = match admit(&c, kind_name, &parts.headers, recv_ms) {
        Ok(a) => a,
        Err((status, why)) => return error(status, why),
    };
    let limits = &c.config.limits;
    let (bytes, _memory) = match read_body(
        body,
        &parts.headers,
        limits.max_body_bytes,
        limits.body_timeout,
        &c.store.bounds,
    )
    .await
    {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (run, outcome) = match store_post(&c, &admitted, bytes).await {
        Ok(stored) => stored,
        Err(r) => return r,
    };
    reply(&c, &admitted, &run, outcome).await
}

/// Reads who posts what: the id headers (400 when missing or unsafe), the send time, the kind
/// (404 for an unknown kind that cannot be kept), the content type; else the error's status and
/// message.
fn admit(
    c: &Collector,
    kind_name: String,
    headers: &HeaderMap,
    recv_ms: u64,
) -> Result<Admitted, (StatusCode, String)> {
    let max = c.config.limits.max_id_bytes;
    let run_id =
        id_header(headers, "x-run-id", max).map_err(|why| (StatusCode::BAD_REQUEST, why))?;
    let node =
        id_header(headers, "x-node-id", max).map_err(|why| (StatusCode::BAD_REQUEST, why))?;
    let send_ms = headers
        .get("x-node-send-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let kind = route_kind(&kind_name);
    // An unknown kind is answered with 404; a body posted under a name that could be a kind is
    // kept in quarantine first.
    let keep_unknown = kind.is_none()
        && !kind_name.is_empty()
        && kind_name.len() <= 64
        && kind_name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if kind.is_none() && !keep_unknown {
        return Err((StatusCode::NOT_FOUND, "unknown record kind".into()));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let encoding = match content_type.as_deref() {
        None => Some(layout::Encoding::Json),
        Some(ct) => layout::Encoding::of_content_type(ct),
    };
    Ok(Admitted {
        run_id,
        node,
        send_ms,
        kind_name,
        kind,
        content_type,
        encoding,
        recv_ms,
    })
}

/// Stores a read body under its node's sequence lock: flushed as posted while the door decides
/// what it is, then staged, staged in part or kept in quarantine as the door said.
async fn store_post(
    c: &Arc<Collector>,
    admitted: &Admitted,
    bytes: Bytes,
) -> Result<(Arc<crate::store::Run>, Outcome), Response> {
    let run = c
        .store
        .run_or_create(&admitted.run_id)
        .map_err(store_error)?;
    let seq_lock = c
        .store
        .node_seq(&run, &admitted.node)
        .map_err(store_error)?;
    let mut guard = seq_lock.lock_owned().await;
    let early = flush_early(c, admitted, &run, &mut guard, &bytes);
    let verdict = match &admitted.kind {
        Some(kind) => Some(explain(c, kind, admitted.content_type.clone(), bytes.clone()).await?),
        None => None,
    };
    let early = match early {
        Some(task) => Some(task.await.map_err(|e| {
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the post was not stored: {e}"),
            )
        })?),
        None => None,
    };
    let stored = {
        let (c, run, admitted) = (c.clone(), run.clone(), admitted.clone());
        tokio::task::spawn_blocking(move || {
            store_verdict(&c, &run, &admitted, &mut guard, &bytes, verdict, early)
        })
        .await
    };
    match stored {
        Ok(Ok(outcome)) => Ok((run, outcome)),
        Ok(Err(e)) => Err(store_error(e)),
        Err(e) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the post was not stored: {e}"),
        )),
    }
}

/// A staged file being written and flushed under a temporary name.
type Flushing = tokio::task::JoinHandle<Result<crate::store::Reserved, StoreError>>;

/// A record is most often staged as posted: its bytes are written and flushed under a
/// temporary name while the door parses them, so the flush and the parse overlap. The file is
/// linked to its staged name only once the door said to stage the body as posted (else it is
/// removed); the node's sequence lock, held throughout, keeps its number free. `None` for a
/// body that cannot be staged as posted (an unknown kind or content type).
fn flush_early(
    c: &Arc<Collector>,
    admitted: &Admitted,
    run: &Arc<crate::store::Run>,
    guard: &mut crate::store::NodeSeq,
    bytes: &Bytes,
) -> Option<Flushing> {
    let (Some(kind), Some(encoding)) = (&admitted.kind, admitted.encoding) else {
        return None;
    };
    let (c, run, node, bytes) = (c.clone(), run.clone(), admitted.node.clone(), bytes.clone());
    let (kind, n, recv_ms) = (kind.clone(), guard.next_number(kind), admitted.recv_ms);
    Some(tokio::task::spawn_blocking(move || {
        let post = Post {
            kind: &kind,
            bytes: &bytes,
            encoding,
            recv_ms,
        };
        c.store.flush(&run, &node, n, &post)
    }))
}

/// The door's verdict on a body of `kind`, decided on a blocking thread.
async fn explain(
    c: &Arc<Collector>,
    kind: &FileKind,
    content_type: Option<String>,
    bytes: Bytes,
) -> Result<Verdict, Response> {
    let (c, kind) = (c.clone(), kind.clone());
    tokio::task::spawn_blocking(move || {
        let door = Door {
            validate: c.config.validate,
            validators: &c.validators,
            max_problems: c.config.limits.max_problems,
        };
        door::decide(&door, &kind, content_type.as_deref(), &bytes)
    })
    .await
    .map_err(|e| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the post was not read: {e}"),
        )
    })
}

/// Does what the door decided (blocking): keeps an unknown kind's body, an unreadable body or
/// one that is not a record in quarantine, or stages the records not staged before (the body
/// as posted, through its early flush, when nothing was left out).
fn store_verdict(
    c: &Collector,
    run: &Arc<crate::store::Run>,
    admitted: &Admitted,
    guard: &mut crate::store::NodeSeq,
    bytes: &[u8],
    verdict: Option<Verdict>,
    early: Option<Result<crate::store::Reserved, StoreError>>,
) -> Result<Outcome, StoreError> {
    let (Some(kind), Some(verdict)) = (&admitted.kind, verdict) else {
        let why = why_json(Why {
            route: admitted.kind_name.clone(),
            problem: Some("unknown record kind".into()),
            ..Why::default()
        });
        let at = c.store.quarantine(
            run,
            &admitted.node,
            guard,
            &Quarantined {
                kind: &admitted.kind_name,
                body: bytes,
                extension: "bin",
                why,
                recv_ms: admitted.recv_ms,
            },
        )?;
        return Ok(Outcome::kept(at, Problems::default(), None));
    };
    match verdict {
        Verdict::Unreadable(message) => {
            drop(early);
            let problems = Problems {
                list: vec![crate::posted::DoorProblem {
                    pointer: String::new(),
                    message: message.clone(),
                }],
                omitted: 0,
            };
            let at = keep(c, run, admitted, guard, bytes, &problems)?;
            Ok(Outcome::kept(at, problems, Some(message)))
        }
        Verdict::NotARecord(problems) => {
            drop(early);
            let at = keep(c, run, admitted, guard, bytes, &problems)?;
            Ok(Outcome::kept(at, problems, None))
        }
        Verdict::Stage {
            bytes: staged,
            encoding,
            json,
            problems,
            events,
        } => {
            let staged = Staged {
                kind,
                staged,
                encoding,
                json,
                problems,
                events,
            };
            stage(c, run, admitted, guard, bytes, staged, early)
        }
    }
}

/// Keeps a body as posted in quarantine with its problems beside it (`.why.json`); where it is
/// kept, relative to the root.
fn keep(
    c: &Collector,
    run: &Arc<crate::store::Run>,
    admitted: &Admitted,
    guard: &mut crate::store::NodeSeq,
    bytes: &[u8],
    problems: &Problems,
) -> Result<String, StoreError> {
    let stem = admitted
        .kind
        .as_ref()
        .map(FileKind::staged_stem)
        .unwrap_or_default();
    let why = why_json(Why {
        route: stem.clone(),
        content_type: admitted.content_type.clone(),
        problems: problems
            .list
            .iter()
            .map(|p| WhyProblem {
                pointer: p.pointer.clone(),
                message: p.message.clone(),
            })
            .collect(),
        problem: None,
    });
    let why = with_omitted(why, problems.omitted);
    c.store.quarantine(
        run,
        &admitted.node,
        guard,
        &Quarantined {
            kind: &stem,
            body: bytes,
            extension: admitted.encoding.map_or("bin", |e| e.extension()),
            why,
            recv_ms: admitted.recv_ms,
        },
    )
}

/// What the door said to stage.
struct Staged<'a> {
    kind: &'a FileKind,
    /// The bytes to stage when not the body as posted (a batch without its bad records).
    staged: Option<Vec<u8>>,
    encoding: layout::Encoding,
    /// The record as one line of JSON (for the live stream and idempotent ingest).
    json: String,
    problems: Problems,
    /// An events batch's records as the door parsed them.
    events: Option<Vec<crate::dedupe::EventKey>>,
}

/// Stages the records of a post not staged before (`crate::dedupe`), publishes them on the live
/// stream, and keeps the body as posted in quarantine when the door left some of its records
/// out.
fn stage(
    c: &Collector,
    run: &Arc<crate::store::Run>,
    admitted: &Admitted,
    guard: &mut crate::store::NodeSeq,
    bytes: &[u8],
    door_said: Staged<'_>,
    early: Option<Result<crate::store::Reserved, StoreError>>,
) -> Result<Outcome, StoreError> {
    let Staged {
        kind,
        staged,
        encoding,
        json,
        problems,
        events,
    } = door_said;
    let node = &admitted.node;
    // What the node staged already is left out (`crate::dedupe`).
    let plan = if c.config.dedupe {
        c.store.warm(&run.id, node, guard)?;
        let staged = |n| c.store.staged_events(&run.id, node, n);
        guard.dedupe.plan(kind, &json, events.as_deref(), &staged)
    } else {
        crate::dedupe::Plan::default()
    };
    // The body as posted goes to quarantine first, so a crash between the two never leaves the
    // left-out records nowhere; a repeat of a staged post was kept then.
    let quarantined = if problems.is_empty() || plan.duplicate {
        None
    } else {
        Some(keep(c, run, admitted, guard, bytes, &problems)?)
    };
    // Records kept in conflict are listed after the door's problems, within the same cap; the
    // rest are counted.
    let mut problems = problems;
    let room = c
        .config
        .limits
        .max_problems
        .saturating_sub(problems.list.len());
    problems
        .list
        .extend(plan.conflicts.iter().take(room).cloned());
    problems.omitted += plan.conflicts.len().saturating_sub(room) as u64;
    if plan.duplicate {
        drop(early);
        guard.dedupe.commit(&plan, 0, c.config.dedupe_window);
        run.count_dedupe(node, &plan);
        return Ok(Outcome {
            seq: plan.seq,
            problems,
            quarantined,
            unreadable: None,
            deduplicated: Some((true, plan.left_out, 0)),
        });
    }
    let (staged, encoding, json) = match plan.kept.clone() {
        Some(kept) => (
            Some(kept.clone().into_bytes()),
            layout::Encoding::Json,
            kept,
        ),
        None => (staged, encoding, json),
    };
    let post = Post {
        kind,
        bytes: staged.as_deref().unwrap_or(bytes),
        encoding,
        recv_ms: admitted.recv_ms,
    };
    let seq = match (staged.is_none(), early) {
        (true, Some(flushed)) => c.store.commit(run, node, guard, flushed?, &post)?,
        (_, early) => {
            drop(early);
            c.store.stage(run, node, guard, &post)?
        }
    };
    let record = LiveRecord::new(
        &run.id,
        node,
        crate::live::live_kind(&kind.staged_stem()),
        admitted.recv_ms,
        seq,
        diagwire::Json(serde_json::Value::Null),
    );
    if c.config.dedupe {
        guard.dedupe.commit(&plan, seq, c.config.dedupe_window);
        run.count_dedupe(node, &plan);
        if *kind == FileKind::Finalize {
            guard.cool();
        }
    }
    run.live.publish(node, kind, live_data(&record, &json));
    Ok(Outcome {
        seq: Some(seq),
        problems,
        quarantined,
        unreadable: None,
        deduplicated: (plan.left_out > 0 || !plan.conflicts.is_empty()).then_some((
            false,
            plan.left_out,
            plan.conflicts.len() as u64,
        )),
    })
}

/// Waits the finalize wait and answers with the run's canonical tarball: the one a finalize just
/// wrote when it holds the run as it is now (finalizes of one run are coalesced), else one
/// assembled now. Its path, for the PostAck's `body`.
async fn finalize(
    c: &Arc<Collector>,
    run: &Arc<crate::store::Run>,
    run_id: &str,
) -> Result<serde_json::Value, Response> {
    run.hint_all();
    tokio::time::sleep(c.config.finalize_wait).await;
    let _assembling = run.assembly.lock().await;
    let generation = run.generation();
    let written = if run.bundled_at(generation) && c.is_canonical_file(run_id) {
        Ok(Ok(c.store.bundles.join(format!("{run_id}.tar.gz"))))
    } else {
        let Some(_place) = c.store.bounds.assembly().await else {
            return Err(busy(&c.store.bounds, "no place to assemble the bundle in"));
        };
        let worker = c.clone();
        let id = run_id.to_owned();
        let started = std::time::Instant::now();
        let written = tokio::task::spawn_blocking(move || worker.write_bundle(&id)).await;
        let ok = matches!(written, Ok(Ok(_)));
        c.metrics.assembled(run_id, started.elapsed(), ok);
        written
    };
    match written {
        Ok(Ok(path)) => {
            run.set_bundled(generation);
            run.live.finish();
            run.live.release_unwatched();
            Ok(serde_json::json!({ "bundle_path": path.display().to_string() }))
        }
        Ok(Err(e)) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the bundle of run {run_id:?} could not be assembled: {e}"),
        )),
        Err(e) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

/// The reply to a stored post: 404 for an unknown kind and 400 for an unreadable body (each
/// naming where the body is kept), else the PostAck (a finalize's after its wait and
/// assembly). What the request's log line and metrics say of the post goes in the reply's
/// extensions (`crate::observe`).
async fn reply(
    c: &Arc<Collector>,
    admitted: &Admitted,
    run: &Arc<crate::store::Run>,
    outcome: Outcome,
) -> Response {
    let posted = crate::observe::Posted {
        seq: outcome.seq,
        deduplicated: outcome.deduplicated.map_or(0, |d| d.1),
        conflicts: outcome.deduplicated.map_or(0, |d| d.2),
        quarantined: outcome.quarantined.clone(),
    };
    let with_posted = |mut r: Response| {
        r.extensions_mut().insert(posted.clone());
        r
    };
    if admitted.kind.is_none() {
        return with_posted(error(
            StatusCode::NOT_FOUND,
            format!(
                "unknown record kind; the body is kept as {}",
                outcome.quarantined.unwrap_or_default()
            ),
        ));
    }
    if let Some(message) = outcome.unreadable {
        return with_posted(error(
            StatusCode::BAD_REQUEST,
            format!(
                "{message}; the body is kept as {}",
                outcome.quarantined.unwrap_or_default()
            ),
        ));
    }
    let body = if admitted.kind == Some(FileKind::Finalize) {
        match finalize(c, run, &admitted.run_id).await {
            Ok(body) => Some(body),
            Err(r) => return r,
        }
    } else {
        None
    };
    let mut ack = PostAck::new(ClockEcho::new(admitted.send_ms, admitted.recv_ms, now_ms()));
    if run.take_hint(&admitted.node) {
        let mut hints = Hints::new();
        hints.snapshot_now = true;
        ack.hints = Some(hints);
    }
    ack.body = body.map(diagwire::Json);
    ack.seq = outcome.seq;
    ack.problems = outcome
        .problems
        .list
        .into_iter()
        .map(|p| PostProblem::new(p.pointer, p.message))
        .collect();
    ack.problems_omitted = outcome.problems.omitted;
    ack.quarantined = outcome.quarantined;
    if let Some((duplicate, left_out, _)) = outcome.deduplicated.filter(|d| d.1 > 0) {
        ack.duplicate = Some(duplicate);
        ack.deduplicated = left_out;
    }
    with_posted(json_reply(StatusCode::OK, &ack))
}

/// A `LiveRecord`'s JSON with `body` the stored record's text: the record is written with a
/// `null` body, which its serialization puts last (it has no unknown keys), and the text is put
/// in its place, so the stored record is not parsed into a value only to be written again.
/// `body` is one line already ([`door::Verdict::Stage`]).
fn live_data(record: &LiveRecord, body: &str) -> String {
    let mut data = serde_json::to_string(record).unwrap_or_default();
    match data.strip_suffix("\"body\":null}") {
        Some(head) => {
            let mut out = String::with_capacity(head.len() + body.len() + 9);
            out.push_str(head);
            out.push_str("\"body\":");
            out.push_str(body);
            out.push('}');
            out
        }
        None => {
            // Not the expected layout: fall back to a parsed body.
            let mut r = record.clone();
            r.body = diagwire::Json(serde_json::from_str(body).unwrap_or_default());
            data.clear();
            serde_json::to_string(&r).unwrap_or_default()
        }
    }
}

fn json_reply(status: StatusCode, value: &impl serde::Serialize) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        serde_json::to_vec(value).unwrap_or_default(),
    )
        .into_response()
}

async fn runs(State(c): State<Arc<Collector>>) -> Response {
    let mut listing = Vec::new();
    for run in c.store.runs() {
        let account = lock(&run.account);
        if account.nodes.is_empty() {
            continue;
        }
        let nodes = account
            .nodes
            .iter()
            .map(|(id, n)| {
                let mut node = RunNodeSummary::new(
                    id.clone(),
                    n.boots > 0,
                    n.event_batches,
                    n.snapshots,
                    n.finalizes > 0,
                );
                node.quarantined = n.quarantined;
                node.deduplicated = n.deduplicated;
                node.conflicts = n.conflicts;
                node
            })
            .collect();
        let mut summary = RunSummary::new(run.id.clone(), account.finalize_received(), nodes);
        summary.run_start_collector_ms = account.start_ms;
        summary.run_end_collector_ms = account.end_ms;
        summary.quarantined = account.nodes.values().map(|n| n.quarantined).sum();
        listing.push(summary);
    }
    json_reply(StatusCode::OK, &listing)
}

async fn bundle(State(c): State<Arc<Collector>>, Path(run_id): Path<String>) -> Response {
    if layout::sanitize_component(&run_id) != run_id || run_id.len() > c.config.limits.max_id_bytes
    {
        return error(StatusCode::NOT_FOUND, "no staging for this run");
    }
    // A bounded number of downloads at once: each may hold an assembled bundle on disk until
    // its client has read it.
    let Some(place) = c.store.bounds.download() else {
        return busy(&c.store.bounds, "every place for bundle downloads is taken");
    };
    // One assembly of a run at a time, finalizes included: each writes a whole bundle to disk.
    let run = c.store.run(&run_id);
    let _assembling = match &run {
        Some(run) => Some(run.assembly.lock().await),
        None => None,
    };
    let generation = run.as_ref().map(|r| r.generation());
    // Current: no post since the canonical tarball was written, and it is still a regular file
    // (one swapped for a link is never read; the bundle is assembled again instead).
    let current = run
        .as_ref()
        .zip(generation)
        .is_some_and(|(r, g)| r.bundled_at(g))
        && c.is_canonical_file(&run_id);
    // Assembling holds memory and a place; serving the current canonical tarball holds neither.
    let _assembly = if current {
        None
    } else {
        match c.store.bounds.assembly().await {
            Some(a) => Some(a),
            None => return busy(&c.store.bounds, "no place to assemble the bundle in"),
        }
    };
    let worker = c.clone();
    let id = run_id.clone();
    let started = std::time::Instant::now();
    let served = tokio::task::spawn_blocking(move || {
        let file = if current {
            worker.canonical_file(&id).map(|f| Some((f, true)))
        } else {
            worker.bundle_file(&id)
        }?;
        file.map(|(f, cached)| f.metadata().map(|m| (f, m.len(), cached)))
            .transpose()
    })
    .await;
    // An assembly is measured; a download of the current canonical tarball assembles nothing.
    let assembled = match &served {
        Ok(Ok(Some((_, _, cached)))) => !cached,
        Ok(Err(_)) => true,
        _ => false,
    };
    if assembled {
        c.metrics
            .assembled(&run_id, started.elapsed(), matches!(served, Ok(Ok(_))));
    }
    match served {
        Ok(Ok(Some((file, len, cached)))) => {
            if let (true, Some(run), Some(g)) = (cached, &run, generation) {
                run.set_bundled(g);
            }
            // The file stays on disk until its client has read it: the downloads in flight
            // hold a bounded number of bytes.
            let Some(disk) = c.store.bounds.download_disk(len) else {
                return busy(
                    &c.store.bounds,
                    format!(
                        "the disk for bundles being downloaded ({} bytes) is taken",
                        c.store.bounds.download_disk_bytes()
                    ),
                );
            };
            (
                StatusCode::OK,
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/gzip"),
                    ),
                    (
                        header::CONTENT_DISPOSITION,
                        HeaderValue::from_str(&format!("attachment; filename=\"{run_id}.tar.gz\""))
                            .unwrap_or(HeaderValue::from_static("attachment")),
                    ),
                    (header::CONTENT_LENGTH, HeaderValue::from(len)),
                ],
                file_body(file, (place, disk)),
            )
                .into_response()
        }
        Ok(Ok(None)) => error(StatusCode::NOT_FOUND, "no staging for this run"),
        Ok(Err(e)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the bundle could not be assembled: {e}"),
        ),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// A body read from an open file in chunks as the client takes them, so a bundle is never held
/// whole in memory; the download's place and disk are given back when it ends.
fn file_body(file: std::fs::File, place: (Place, Reserved)) -> Body {
    let file = tokio::fs::File::from_std(file);
    let chunks = futures_util::stream::unfold(Some((file, place)), |file| async move {
        let (mut file, place) = file?;
        let mut buf = vec![0u8; 64 << 10];
        match tokio::io::AsyncReadExt::read(&mut file, &mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((
                    Ok::<Bytes, std::io::Error>(Bytes::from(buf)),
                    Some((file, place)),
                ))
            }
            Err(e) => Some((Err(e), None)),
        }
    });
    Body::from_stream(chunks)
}

/// `?from=N`: resume after stream id N.
#[derive(serde::Deserialize)]
struct From {
    from: Option<u64>,
}

async fn stream(
    State(c): State<Arc<Collector>>,
    Path(run_id): Path<String>,
    Query(query): Query<From>,
    headers: HeaderMap,
) -> Response {
    if layout::sanitize_component(&run_id) != run_id || run_id.len() > c.config.limits.max_id_bytes
    {
        return error(StatusCode::NOT_FOUND, "no such run");
    }
    let last_event = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    // Streams have places of their own, fewer than the connections, so posters always have room.
    let Some(place) = c.store.bounds.stream() else {
        return busy(&c.store.bounds, "every place for live streams is taken");
    };
    let Some(hub) = c.store.live(&run_id) else {
        return busy(
            &c.store.bounds,
            "too many streams wait for runs that have no post yet",
        );
    };
    let sub = hub.subscribe(query.from.or(last_event));
    let counted = (
        crate::observe::Subscribed::new(c.clone()),
        c.clone(),
        run_id,
    );
    let events = futures_util::stream::unfold((sub, counted), |(mut sub, counted)| async move {
        let frame = match sub.next().await? {
            Delivery::Item(item) => item.frame.clone(),
            Delivery::Lagged { skipped } => {
                counted.1.metrics.lagged(&counted.2, skipped);
                Bytes::from(format!(
                    "event: lagged\ndata: {{\"skipped\":{skipped}}}\n\n"
                ))
            }
            Delivery::End { last } => Bytes::from(format!(
                "event: end\nid: {last}\ndata: {{\"last\":{last}}}\n\n"
            )),
        };
        Some((frame, (sub, counted)))
    });
    let body = Events {
        events: Box::pin(events),
        ping: Box::pin(tokio::time::sleep(PING)),
        _place: place,
    };
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// How long a stream stays quiet before a `ping` comment.
const PING: Duration = Duration::from_secs(15);

/// A live stream's body: each delivery's Server-Sent Event (a record's is the buffer's bytes,
/// shared by every subscriber, never copied per subscriber), and a `ping` comment after
/// [`PING`] without one. Holds the stream's place until the subscriber goes.
struct Events {
    events: std::pin::Pin<Box<dyn futures_util::Stream<Item = Bytes> + Send>>,
    ping: std::pin::Pin<Box<tokio::time::Sleep>>,
    _place: Place,
}

impl futures_util::Stream for Events {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        match self.events.as_mut().poll_next(cx) {
            Poll::Ready(Some(frame)) => {
                let at = tokio::time::Instant::now() + PING;
                self.ping.as_mut().reset(at);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.ping.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let at = tokio::time::Instant::now() + PING;
                    self.ping.as_mut().reset(at);
                    Poll::Ready(Some(Ok(Bytes::from_static(b":ping\n\n"))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

/// A reason with `problems_omitted`, how many problems its list leaves out, when any (a key
/// the library's readers pass over).
fn with_omitted(mut why: serde_json::Value, omitted: u64) -> serde_json::Value {
    if omitted > 0
        && let Some(map) = why.as_object_mut()
    {
        map.insert("problems_omitted".into(), omitted.into());
    }
    why
}

/// A quarantined body's reason as its `.why.json` holds it (the library's shape, which readers
/// of a bundle read).
fn why_json(why: Why) -> serde_json::Value {
    serde_json::to_value(why).expect("OK because a reason always serializes")
}
