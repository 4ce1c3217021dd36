//! The two TSV views of swactor's post-processor: the reachability matrix (per snapshot, the
//! observer's SWIM opinion of every node) and the per-pair timeline (every event that names another
//! node). Fields from the bundle have tabs and line breaks escaped, so a row is always one line.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;

use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::records::walk;
use diagwire::v1::{Event, Record};
use diagwire::{NodeId, Problem};
use diagwire_runtime::short_hex;

/// A field of a row: tabs and line breaks as `\t`, `\n`, `\r`, other control characters escaped
/// as everywhere else ([`diagwire::problem::printable`]).
pub fn field(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    diagwire::problem::printable(&out).into_owned()
}

fn io(e: std::io::Error) -> Problem {
    Problem::new(
        diagwire::ProblemKind::Read(diagwire::problem::ReadErrorKind::Io),
        diagwire::Location::file("<output>"),
        e.to_string(),
    )
}

/// `time_ms`, `observer`, then one column per node label (the manifest's, then any other node
/// directory) with the observer's `current_swim_opinion`: `-` for the observer itself, `?` when it
/// has no opinion. Rows are sorted by time, then observer.
pub fn reachability(
    bundle: &Path,
    limits: Limits,
    out: &mut impl Write,
    on_problem: &mut dyn FnMut(Problem),
) -> Result<(), Problem> {
    let mut reader = BundleReader::open(bundle, limits).map_err(Problem::from)?;
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut columns: Vec<String> = Vec::new();
    // The columns already there, so adding one is not a search of the others.
    let mut named: HashSet<String> = HashSet::new();
    let mut rows: Vec<(u64, String, BTreeMap<String, String>)> = Vec::new();
    walk(
        &mut reader,
        |item| match item.record {
            Record::Manifest(m) => {
                for n in &m.nodes {
                    labels.insert(n.node_id_hex.0.clone(), n.label.clone());
                    if named.insert(n.label.clone()) {
                        columns.push(n.label.clone());
                    }
                }
            }
            Record::Snapshot(s) => {
                let me = item.node.unwrap_or_default().to_owned();
                labels.insert(s.identity.node_id_hex.0.clone(), me.clone());
                if named.insert(me.clone()) {
                    columns.push(me.clone());
                }
                let opinions = s
                    .body
                    .reachability
                    .iter()
                    .map(|r| {
                        (
                            r.peer_node_id_hex.0.clone(),
                            r.current_swim_opinion.to_string(),
                        )
                    })
                    .collect();
                rows.push((s.wall_ms, me, opinions));
            }
            _ => {}
        },
        &mut *on_problem,
    );
    rows.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut header = vec!["time_ms".to_owned(), "observer".to_owned()];
    header.extend(columns.iter().map(|c| field(c)));
    writeln!(out, "{}", header.join("\t")).map_err(io)?;
    for (t, observer, opinions) in rows {
        let by_label: BTreeMap<&str, &str> = opinions
            .iter()
            .map(|(hex, o)| {
                (
                    labels.get(hex).map_or(hex.as_str(), |l| l.as_str()),
                    o.as_str(),
                )
            })
            .collect();
        let mut row = vec![t.to_string(), field(&observer)];
        for c in &columns {
            row.push(if *c == observer {
                "-".to_owned()
            } else {
                by_label
                    .get(c.as_str())
                    .map_or("?".to_owned(), |o| field(o))
            });
        }
        writeln!(out, "{}", row.join("\t")).map_err(io)?;
    }
    Ok(())
}

/// `time_ms`, `source`, `kind`, `peer`, `details` for every event that names another node, written
/// as the bundle is read: grouped by source node, each node's rows in its own order (`sort -n`
/// orders them by time). A peer is named by its label once the manifest or its boot record has been
/// read, by its first 8 id characters before.
pub fn timeline(
    bundle: &Path,
    limits: Limits,
    out: &mut impl Write,
    on_problem: &mut dyn FnMut(Problem),
) -> Result<(), Problem> {
    let mut reader = BundleReader::open(bundle, limits).map_err(Problem::from)?;
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut error = None;
    let _ = writeln!(out, "time_ms\tsource\tkind\tpeer\tdetails").map_err(|e| error = Some(io(e)));
    walk(
        &mut reader,
        |item| {
            let me = item.node.unwrap_or_default();
            let row = match item.record {
                Record::Manifest(m) => {
                    for n in &m.nodes {
                        labels.insert(n.node_id_hex.0.clone(), n.label.clone());
                    }
                    None
                }
                Record::Boot(b) => {
                    labels.insert(b.node_id_hex.0.clone(), me.to_owned());
                    None
                }
                Record::Event(r) => {
                    let name = |id: &NodeId| {
                        let hex = crate::collect::hex(id);
                        labels
                            .get(&hex)
                            .cloned()
                            .unwrap_or_else(|| short_hex(&hex).to_owned())
                    };
                    let hex_name = |hex: &str| {
                        labels
                            .get(hex)
                            .cloned()
                            .unwrap_or_else(|| short_hex(hex).to_owned())
                    };
                    let (peer, details) = match &r.event {
                        Event::SwimTransition(x) => (
                            name(&x.peer),
                            format!("{} → {} ({})", x.from, x.to, x.reason),
                        ),
                        Event::DialStarted(x) => (
                            name(&x.peer),
                            format!("attempt {}, timeout {} ms", x.attempt, x.timeout_ms),
                        ),
                        Event::DialOutcome(x) => (
                            name(&x.peer),
                            format!(
                                "attempt {}: {:?} after {} ms",
                                x.attempt, x.outcome, x.duration_ms
                            ),
                        ),
                        Event::IrohConnTypeChanged(x) => {
                            (name(&x.peer), format!("{} → {}", x.old, x.new))
                        }
                        Event::MessageSent(x) => {
                            (name(&x.peer), format!("{} {} bytes", x.kind, x.size))
                        }
                        Event::MessageReceived(x) => {
                            (name(&x.peer), format!("{} {} bytes", x.kind, x.size))
                        }
                        Event::SwimMetadataReceived(x) => {
                            (name(&x.peer), format!("version {}", x.version))
                        }
                        Event::ConnectionCacheHit(x) => {
                            (name(&x.peer), format!("generation {}", x.generation))
                        }
                        Event::ConnectionCacheMiss(x) => (name(&x.peer), String::new()),
                        Event::ConnectionCacheInvalidated(x) => (
                            name(&x.peer),
                            format!("generation {}: {}", x.generation, x.reason),
                        ),
                        Event::NodeMapUpdate(x) => (
                            name(&x.peer),
                            format!("from {}, accepted {}", x.from_source, x.accepted),
                        ),
                        Event::GossipReceived(x) => (
                            name(&x.source_peer),
                            format!(
                                "{} {} bytes, {} items",
                                x.payload_kind, x.payload_bytes, x.item_count
                            ),
                        ),
                        Event::SwimProbeSent(x) => {
                            (name(&x.target), format!("{} #{}", x.kind, x.sequence))
                        }
                        Event::SwimProbeAcked(x) => {
                            (name(&x.target), format!("{} #{} acked", x.kind, x.sequence))
                        }
                        Event::SwimProbeTimedOut(x) => (
                            name(&x.target),
                            format!("{} #{} timed out", x.kind, x.sequence),
                        ),
                        Event::InferenceResponseSent(x) => (
                            name(&x.target_peer),
                            format!("{} {} bytes: {}", x.request_id, x.byte_size, x.send_outcome),
                        ),
                        Event::RelaySessionOpened(x) => {
                            (hex_name(&x.peer_node_id_hex.0), String::new())
                        }
                        Event::RelaySessionClosed(x) => (
                            hex_name(&x.peer_node_id_hex.0),
                            format!("{} {}", x.close_initiator, x.close_reason),
                        ),
                        _ => return,
                    };
                    Some(format!(
                        "{}\t{}\t{}\t{}\t{}",
                        r.wall_ms,
                        field(me),
                        field(r.event.tag()),
                        field(&peer),
                        field(&details)
                    ))
                }
                _ => None,
            };
            if let Some(row) = row
                && let Err(e) = writeln!(out, "{row}")
            {
                error.get_or_insert(io(e));
            }
        },
        &mut *on_problem,
    );
    error.map_or(Ok(()), Err)
}
