//! The summary as one self-contained HTML page: no network, no script, the same bytes for the same
//! bundle. Inline SVG plots come first — a state timeline per node with fault windows shaded across
//! all lanes, dial outcomes per peer over time, the RTT distribution per observer → target, the
//! kernel drop counters over time and the bytes each node sent and received — then every section
//! of the Markdown summary as HTML. Long lanes are cut while reading
//! ([`crate::model::MAX_SERIES_POINTS`]), counters thinned ([`crate::model::Series`]), and each
//! plot says so.

use std::fmt::Write;

use diagwire::v1::PeerState;

use crate::model::{Direction, MAX_COUNTER_POINTS, MAX_SERIES_POINTS, Point, Summary, run_span};
use crate::render::markdown;
use crate::svg::{Scale, Svg, esc};

/// The plots' width, in pixels.
pub const WIDTH: f64 = 1100.0;
/// Where a plot's data area starts (the lane names are right-aligned before it).
pub const LEFT: f64 = 230.0;
/// The margin after a plot's data area.
pub const RIGHT: f64 = 20.0;
/// The height of one lane.
pub const LANE: f64 = 16.0;
/// Most lanes a plot draws.
pub const MAX_LANES: usize = 64;

/// The page's style sheet (the fleet report's page shares it).
pub const CSS: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}\
th{background:#f3f3f3}code{background:#f5f5f5;padding:0 2px}.note{color:#666;font-size:12px}\
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:12px;height:10px;margin-right:4px}";

fn state_color(s: &PeerState) -> &'static str {
    match s {
        PeerState::Alive => "#4caf50",
        PeerState::Suspect => "#ff9800",
        PeerState::Dead => "#e53935",
        _ => "#9e9e9e",
    }
}

fn relay_color(s: &str) -> &'static str {
    match s {
        "connected" => "#4caf50",
        "connecting" => "#fdd835",
        "disconnected" => "#e53935",
        _ => "#9e9e9e",
    }
}

/// A legend: a colour swatch and an escaped name per item.
pub fn legend(items: &[(&str, &str)]) -> String {
    let mut o = String::from("<p class=\"legend\">");
    for (color, name) in items {
        let _ = write!(
            o,
            "<span><i style=\"background:{color}\"></i>{}</span>",
            esc(name)
        );
    }
    o.push_str("</p>");
    o
}

/// The time axis: ticks in seconds since the start of the span.
fn time_axis(svg: &mut Svg, x: &Scale, y: f64) {
    svg.line(x.p0, y, x.p1, y, "#999");
    let span = (x.d1 - x.d0).max(1.0);
    for i in 0..=5 {
        let t = x.d0 + span * f64::from(i) / 5.0;
        let px = x.at(t);
        svg.line(px, y, px, y + 4.0, "#999");
        svg.text(
            px,
            y + 15.0,
            &format!("{:.1} s", (t - x.d0) / 1000.0),
            "middle",
            10.0,
        );
    }
}

/// Intervals where any lane is in a fault state, merged.
fn windows(lanes: &[Vec<(u64, bool)>], end: u64) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for lane in lanes {
        for (i, (t, fault)) in lane.iter().enumerate() {
            if *fault {
                let until = lane.get(i + 1).map_or(end, |(t2, _)| *t2);
                spans.push((*t, until.max(*t)));
            }
        }
    }
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in spans {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// A lane of the state timeline: its name and its changes (time, colour, state).
type Lane = (String, Vec<(u64, &'static str, String)>);

fn timeline(s: &Summary, span: (u64, u64), o: &mut String) {
    let mut lanes: Vec<Lane> = Vec::new();
    for ((obs, peer), points) in &s.swim_lanes {
        let pts = points
            .iter()
            .map(|(t, st)| (*t, state_color(st), st.to_string()))
            .collect();
        lanes.push((format!("{obs} → {peer}"), pts));
    }
    for (node, points) in &s.relay_lanes {
        let pts = points
            .iter()
            .map(|(t, st)| (*t, relay_color(st), st.clone()))
            .collect();
        lanes.push((format!("{node} relay session"), pts));
    }
    o.push_str("<section id=\"timeline\"><h2>State timeline</h2>");
    if lanes.is_empty() {
        o.push_str(
            "<p>No SWIM transitions and no relay-session changes in the bundle.</p></section>",
        );
        return;
    }
    let total = lanes.len();
    lanes.truncate(MAX_LANES);
    let dead: Vec<Vec<(u64, bool)>> = s
        .swim_lanes
        .values()
        .map(|l| {
            l.iter()
                .map(|(t, st)| (*t, *st == PeerState::Dead))
                .collect()
        })
        .collect();
    let relay_down: Vec<Vec<(u64, bool)>> = s
        .relay_lanes
        .values()
        .map(|l| l.iter().map(|(t, st)| (*t, st == "disconnected")).collect())
        .collect();
    let height = 30.0 + lanes.len() as f64 * (LANE + 4.0) + 30.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = Scale {
        d0: span.0 as f64,
        d1: span.1 as f64,
        p0: LEFT,
        p1: WIDTH - RIGHT,
    };
    let top = 20.0;
    let bottom = top + lanes.len() as f64 * (LANE + 4.0);
    for (a, b) in windows(&dead, span.1) {
        svg.rect(
            x.at(a as f64),
            top - 4.0,
            x.at(b as f64) - x.at(a as f64),
            bottom - top + 4.0,
            "#ffcdd2",
            "a peer is Dead",
        );
    }
    for (a, b) in windows(&relay_down, span.1) {
        svg.rect(
            x.at(a as f64),
            top - 4.0,
            x.at(b as f64) - x.at(a as f64),
            bottom - top + 4.0,
            "#e1bee7",
            "a relay session is down",
        );
    }
    for (i, (name, pts)) in lanes.iter().enumerate() {
        let y = top + i as f64 * (LANE + 4.0);
        svg.text(LEFT - 6.0, y + LANE - 4.0, name, "end", 11.0);
        let first = pts.first().map_or(span.1, |p| p.0);
        svg.rect(
            x.at(span.0 as f64),
            y,
            x.at(first as f64) - x.at(span.0 as f64),
            LANE,
            "#eeeeee",
            "no transition yet",
        );
        for (j, (t, color, what)) in pts.iter().enumerate() {
            let until = pts.get(j + 1).map_or(span.1, |p| p.0);
            svg.rect(
                x.at(*t as f64),
                y,
                x.at(until as f64) - x.at(*t as f64),
                LANE,
                color,
                &format!("{name}: {what} from {t}"),
            );
        }
    }
    time_axis(&mut svg, &x, bottom + 4.0);
    o.push_str(&svg.finish());
    o.push_str(&legend(&[
        ("#4caf50", "Alive / connected"),
        ("#ff9800", "Suspect"),
        ("#fdd835", "connecting"),
        ("#e53935", "Dead / disconnected"),
        ("#9e9e9e", "Unknown"),
        ("#ffcdd2", "window: a peer is Dead"),
        ("#e1bee7", "window: a relay session is down"),
    ]));
    if total > MAX_LANES {
        let _ = write!(
            o,
            "<p class=\"note\">Showing {MAX_LANES} of {total} lanes.</p>"
        );
    }
    if s.swim_lanes
        .values()
        .chain(std::iter::empty())
        .any(|l| l.len() >= MAX_SERIES_POINTS)
        || s.relay_lanes.values().any(|l| l.len() >= MAX_SERIES_POINTS)
    {
        let _ = write!(
            o,
            "<p class=\"note\">Lanes are cut at {MAX_SERIES_POINTS} transitions each.</p>"
        );
    }
    o.push_str("</section>");
}

fn dials(s: &Summary, span: (u64, u64), o: &mut String) {
    o.push_str("<section id=\"dial-outcomes\"><h2>Dial outcomes per peer</h2>");
    if s.dial_points.is_empty() {
        o.push_str("<p>No dial outcomes in the bundle.</p></section>");
        return;
    }
    let mut peers: Vec<&String> = s.dial_points.iter().map(|p| &p.2).collect();
    peers.sort();
    peers.dedup();
    peers.truncate(MAX_LANES);
    let height = 30.0 + peers.len() as f64 * (LANE + 4.0) + 30.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = Scale {
        d0: span.0 as f64,
        d1: span.1 as f64,
        p0: LEFT,
        p1: WIDTH - RIGHT,
    };
    let top = 20.0;
    for (i, p) in peers.iter().enumerate() {
        let y = top + i as f64 * (LANE + 4.0);
        svg.text(
            LEFT - 6.0,
            y + LANE - 4.0,
            &format!("dials to {p}"),
            "end",
            11.0,
        );
        svg.line(LEFT, y + LANE / 2.0, WIDTH - RIGHT, y + LANE / 2.0, "#eee");
    }
    for (t, observer, peer, ok) in &s.dial_points {
        if let Some(i) = peers.iter().position(|p| *p == peer) {
            let y = top + i as f64 * (LANE + 4.0) + LANE / 2.0;
            let what = if *ok { "success" } else { "failed" };
            svg.circle(
                x.at(*t as f64),
                y,
                3.5,
                if *ok { "#4caf50" } else { "#e53935" },
                &format!("{observer} → {peer}: {what} at {t}"),
            );
        }
    }
    time_axis(&mut svg, &x, top + peers.len() as f64 * (LANE + 4.0) + 4.0);
    o.push_str(&svg.finish());
    o.push_str(&legend(&[("#4caf50", "succeeded"), ("#e53935", "failed")]));
    if s.dial_points_total > s.dial_points.len() as u64 {
        let _ = write!(
            o,
            "<p class=\"note\">Showing the first {} of {} dial outcomes.</p>",
            s.dial_points.len(),
            s.dial_points_total
        );
    }
    o.push_str("</section>");
}

fn rtt(s: &Summary, o: &mut String) {
    o.push_str("<section id=\"rtt-distribution\"><h2>RTT distribution per observer → target</h2>");
    let pairs: Vec<_> = s
        .rtt
        .iter()
        .filter(|(_, p)| !p.rtts.is_empty())
        .take(MAX_LANES)
        .collect();
    if pairs.is_empty() {
        o.push_str("<p>No acknowledged SWIM probes in the bundle.</p></section>");
        return;
    }
    let max = pairs
        .iter()
        .filter_map(|(_, p)| p.rtts.percentile(100))
        .max()
        .unwrap_or(1)
        .max(1);
    let height = 30.0 + pairs.len() as f64 * (LANE + 4.0) + 30.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = Scale {
        d0: 0.0,
        d1: max as f64,
        p0: LEFT,
        p1: WIDTH - RIGHT,
    };
    let top = 20.0;
    for (i, ((obs, target), p)) in pairs.iter().enumerate() {
        let y = top + i as f64 * (LANE + 4.0);
        let q = |pct| p.rtts.percentile(pct).unwrap_or(0) as f64;
        let (lo, p50, p95, p99, hi) = (q(1), q(50), q(95), q(99), q(100));
        svg.text(
            LEFT - 6.0,
            y + LANE - 4.0,
            &format!("{obs} → {target}"),
            "end",
            11.0,
        );
        svg.line(
            x.at(lo),
            y + LANE / 2.0,
            x.at(hi),
            y + LANE / 2.0,
            "#90a4ae",
        );
        svg.rect(
            x.at(p50),
            y + 2.0,
            x.at(p95) - x.at(p50),
            LANE - 4.0,
            "#64b5f6",
            &format!("median {p50} ms, p95 {p95} ms"),
        );
        svg.line(x.at(p50), y, x.at(p50), y + LANE, "#0d47a1");
        svg.line(x.at(p99), y + 2.0, x.at(p99), y + LANE - 2.0, "#e53935");
    }
    let axis = top + pairs.len() as f64 * (LANE + 4.0) + 4.0;
    svg.line(x.p0, axis, x.p1, axis, "#999");
    for i in 0..=5 {
        let v = max as f64 * f64::from(i) / 5.0;
        svg.text(x.at(v), axis + 15.0, &format!("{v:.0} ms"), "middle", 10.0);
    }
    o.push_str(&svg.finish());
    o.push_str(&legend(&[
        ("#90a4ae", "min – max"),
        ("#64b5f6", "median – p95"),
        ("#e53935", "p99"),
    ]));
    o.push_str("</section>");
}

fn drops(s: &Summary, span: (u64, u64), o: &mut String) {
    o.push_str("<section id=\"kernel-drops\"><h2>Kernel drop counters over time</h2>");
    // Counters that moved, as the rise since their first sample.
    let moving: Vec<(&(String, String), &[Point])> = s
        .drop_series
        .iter()
        .map(|(k, v)| (k, v.points()))
        .filter(|(_, v)| v.first().map(|f| f.1) != v.last().map(|l| l.1))
        .take(12)
        .collect();
    if s.drop_series.is_empty() {
        o.push_str("<p>No node posted drop or error counters (see Absence).</p></section>");
        return;
    }
    if moving.is_empty() {
        o.push_str("<p>No drop or error counter moved.</p></section>");
        return;
    }
    let max = moving
        .iter()
        .flat_map(|(_, v)| v.iter().map(|(_, c)| c.saturating_sub(v[0].1)))
        .max()
        .unwrap_or(1)
        .max(1);
    let (h, top) = (220.0, 20.0);
    let mut svg = Svg::new(WIDTH, h + 60.0);
    let x = Scale {
        d0: span.0 as f64,
        d1: span.1 as f64,
        p0: LEFT,
        p1: WIDTH - RIGHT,
    };
    let y = Scale {
        d0: 0.0,
        d1: max as f64,
        p0: top + h,
        p1: top,
    };
    const COLORS: [&str; 6] = [
        "#e53935", "#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00897b",
    ];
    let mut items = Vec::new();
    for (i, ((node, counter), series)) in moving.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> = series
            .iter()
            .map(|(t, c)| (x.at(*t as f64), y.at(c.saturating_sub(series[0].1) as f64)))
            .collect();
        svg.polyline(&pts, color, &format!("{node} {counter}"));
        items.push((color, format!("{node} {counter}")));
    }
    svg.line(LEFT, top, LEFT, top + h, "#999");
    for i in 0..=4 {
        let v = max as f64 * f64::from(i) / 4.0;
        svg.text(LEFT - 6.0, y.at(v) + 4.0, &format!("+{v:.0}"), "end", 10.0);
    }
    time_axis(&mut svg, &x, top + h + 4.0);
    o.push_str(&svg.finish());
    let legend_items: Vec<(&str, &str)> = items.iter().map(|(c, n)| (*c, n.as_str())).collect();
    o.push_str(&legend(&legend_items));
    if let Some(stride) = s.drop_series.values().filter_map(|v| v.thinned()).max() {
        let _ = write!(
            o,
            "<p class=\"note\">Long series are thinned to at most {MAX_COUNTER_POINTS} samples \
             each, evenly over the run (at most one sample in {stride} kept, and the last).</p>"
        );
    }
    o.push_str("</section>");
}

/// Bytes per node by direction, as two bars per node (sent above received), from the bandwidth
/// roll-up.
fn bandwidth(s: &Summary, o: &mut String) {
    o.push_str("<section id=\"bandwidth-plot\"><h2>Bytes per node by direction</h2>");
    let mut per_node: std::collections::BTreeMap<&str, (u64, u64)> =
        std::collections::BTreeMap::new();
    for ((node, dir, _), t) in &s.bandwidth {
        let e = per_node.entry(node.as_str()).or_default();
        match dir {
            Direction::Sent => e.0 = e.0.saturating_add(t.bytes),
            Direction::Received => e.1 = e.1.saturating_add(t.bytes),
        }
    }
    if per_node.is_empty() {
        o.push_str("<p>No instrumented transport carried traffic: the bundle has no <code>MessageSent</code> or <code>MessageReceived</code> event.</p></section>");
        return;
    }
    let total = per_node.len();
    let nodes: Vec<(&str, (u64, u64))> = per_node.into_iter().take(MAX_LANES).collect();
    let max = nodes
        .iter()
        .map(|(_, (a, b))| (*a).max(*b))
        .max()
        .unwrap_or(1)
        .max(1);
    let top = 20.0;
    let row = 2.0 * LANE + 8.0;
    let height = top + nodes.len() as f64 * row + 30.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = Scale {
        d0: 0.0,
        d1: max as f64,
        p0: LEFT,
        p1: WIDTH - RIGHT,
    };
    let half = LANE - 2.0;
    for (i, (node, (sent, received))) in nodes.iter().enumerate() {
        let y = top + i as f64 * row;
        svg.text(LEFT - 6.0, y + LANE, node, "end", 11.0);
        svg.rect(
            x.at(0.0),
            y,
            x.at(*sent as f64) - x.at(0.0),
            half,
            "#1e88e5",
            &format!("{node}: {sent} bytes sent"),
        );
        svg.rect(
            x.at(0.0),
            y + half + 2.0,
            x.at(*received as f64) - x.at(0.0),
            half,
            "#43a047",
            &format!("{node}: {received} bytes received"),
        );
    }
    let axis = top + nodes.len() as f64 * row;
    svg.line(x.p0, axis, x.p1, axis, "#999");
    for i in 0..=5 {
        let v = max as f64 * f64::from(i) / 5.0;
        let label = if max >= 10_000_000 {
            format!("{:.1} MB", v / 1e6)
        } else if max >= 10_000 {
            format!("{:.0} kB", v / 1e3)
        } else {
            format!("{v:.0} B")
        };
        let anchor = if i == 5 { "end" } else { "middle" };
        svg.text(x.at(v), axis + 15.0, &label, anchor, 10.0);
    }
    o.push_str(&svg.finish());
    o.push_str(&legend(&[("#1e88e5", "sent"), ("#43a047", "received")]));
    if total > MAX_LANES {
        let _ = write!(
            o,
            "<p class=\"note\">Showing {MAX_LANES} of {total} nodes.</p>"
        );
    }
    o.push_str("</section>");
}

/// The Markdown summary as HTML: headings, tables, lists and paragraphs, with code spans and
/// bold. The Markdown is this crate's own, so these few constructs are all it holds.
fn markdown_html(md: &str, o: &mut dyn Write) {
    let inline = |s: &str| -> String {
        let escaped = esc(s).replace("\\|", "|");
        let mut out = String::new();
        let mut code = false;
        for (i, part) in escaped.split('`').enumerate() {
            if i > 0 {
                out.push_str(if code { "</code>" } else { "<code>" });
                code = !code;
            }
            let mut bold = false;
            for (j, b) in part.split("**").enumerate() {
                if j > 0 && !code {
                    out.push_str(if bold { "</strong>" } else { "<strong>" });
                    bold = !bold;
                } else if j > 0 {
                    out.push_str("**");
                }
                out.push_str(b);
            }
            if bold {
                out.push_str("</strong>");
            }
        }
        if code {
            out.push_str("</code>");
        }
        out
    };
    let cells = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' && chars.peek() == Some(&'|') {
                cur.push_str("\\|");
                chars.next();
            } else if c == '|' {
                out.push(cur.trim().to_owned());
                cur.clear();
            } else {
                cur.push(c);
            }
        }
        out.push(cur.trim().to_owned());
        out
    };
    let mut in_list = false;
    let mut table: Option<usize> = None;
    for line in md.lines() {
        let is_row = line.starts_with('|');
        if !is_row && table.take().is_some() {
            let _ = o.write_str("</table>");
        }
        if !line.starts_with("- ") && in_list {
            let _ = o.write_str("</ul>");
            in_list = false;
        }
        if let Some(h) = line.strip_prefix("## ") {
            let id: String = h
                .to_lowercase()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            let _ = write!(o, "<h2 id=\"{}\">{}</h2>", esc(&id), inline(h));
        } else if let Some(h) = line.strip_prefix("# ") {
            let _ = write!(o, "<h1>{}</h1>", inline(h));
        } else if is_row {
            let row = cells(line);
            if row
                .iter()
                .all(|c| c.chars().all(|ch| ch == '-') && !c.is_empty())
            {
                continue;
            }
            match table {
                None => {
                    let _ = o.write_str("<table><tr>");
                    for c in &row {
                        let _ = write!(o, "<th>{}</th>", inline(c));
                    }
                    let _ = o.write_str("</tr>");
                    table = Some(row.len());
                }
                Some(_) => {
                    let _ = o.write_str("<tr>");
                    for c in &row {
                        let _ = write!(o, "<td>{}</td>", inline(c));
                    }
                    let _ = o.write_str("</tr>");
                }
            }
        } else if let Some(item) = line.strip_prefix("- ") {
            if !in_list {
                let _ = o.write_str("<ul>");
                in_list = true;
            }
            let _ = write!(o, "<li>{}</li>", inline(item));
        } else if !line.trim().is_empty() {
            let _ = write!(o, "<p>{}</p>", inline(line));
        }
    }
    if table.is_some() {
        let _ = o.write_str("</table>");
    }
    if in_list {
        let _ = o.write_str("</ul>");
    }
}

/// The page.
pub fn page(s: &Summary) -> String {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = write_page(s, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes [`page`] as it is made: the plots, then the summary's sections line by line, so a long
/// run's page is never held twice.
pub fn write_page(s: &Summary, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let (start, end) = run_span(s);
    let span = match (s.span_ms, start, end) {
        (Some((a, b)), _, _) => (a.min(start.unwrap_or(a)), b.max(end.unwrap_or(b))),
        (None, Some(a), Some(b)) => (a, b),
        _ => (0, 1),
    };
    let span = (span.0, span.1.max(span.0 + 1));
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Run {} — diagwire summary</title><style>{CSS}</style></head><body>",
        esc(&s.run_id)
    );
    let _ = write!(o, "<h1>Run {}</h1>", esc(&s.run_id));
    let _ = write!(
        o,
        "<p>{} node(s), {} record(s) read. Plots first, then every section of the summary.</p>",
        s.nodes.len(),
        s.records
    );
    timeline(s, span, &mut o);
    dials(s, span, &mut o);
    rtt(s, &mut o);
    drops(s, span, &mut o);
    bandwidth(s, &mut o);
    out.write_all(o.as_bytes())?;
    drop(o);
    let md = markdown(s);
    // The Markdown's own title is the page's.
    let body = md.split_once('\n').map_or("", |(_, rest)| rest);
    let mut to = IoWrite { out, error: None };
    markdown_html(body, &mut to);
    if let Some(e) = to.error {
        return Err(e);
    }
    out.write_all(b"</body></html>\n")
}

/// A `fmt::Write` onto an `io::Write`, keeping the first error.
struct IoWrite<'a> {
    out: &'a mut dyn std::io::Write,
    error: Option<std::io::Error>,
}

impl Write for IoWrite<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.error.is_some() {
            return Err(std::fmt::Error);
        }
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.error = Some(e);
            std::fmt::Error
        })
    }
}
