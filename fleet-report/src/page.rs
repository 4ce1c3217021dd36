//! The fleet report as one self-contained HTML page: no network, no script, the same bytes for the
//! same report. Each section's table follows its plot where it has one — runs per day by writer
//! kind, the dial failure rate per provider, datacenter and country, the probe RTT quantiles per
//! region pair — drawn as inline SVG with the summary's writer ([`diagwire_summary::svg`]); every string is
//! escaped ([`esc`]), and a plot draws at most [`MAX_LANES`] bars and says so.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::render::{Section, percent, sections};
use crate::{DialFailureRow, FleetReport, RegionRttRow};
use diagwire_summary::html::{CSS, LANE, LEFT, MAX_LANES, RIGHT, WIDTH, legend};
use diagwire_summary::svg::{Scale, Svg, esc};

const COLORS: [&str; 6] = [
    "#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#e53935",
];

fn absent(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("not reported")
}

/// Vertical bars per day, stacked by writer kind.
fn runs_plot(r: &FleetReport, o: &mut String) {
    let mut days: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    let mut kinds: Vec<&str> = Vec::new();
    for d in &r.runs_over_time {
        let kind = d.writer_kind.as_deref().unwrap_or("not named");
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
        days.entry(d.day.as_str()).or_default().push((kind, d.runs));
    }
    if days.is_empty() {
        return;
    }
    let total = days.len();
    let days: Vec<(&str, Vec<(&str, u64)>)> =
        days.into_iter().rev().take(MAX_LANES).rev().collect();
    // Whole runs on the axis: four steps of a whole number.
    let step = days
        .iter()
        .map(|(_, v)| v.iter().map(|(_, n)| n).sum::<u64>())
        .max()
        .unwrap_or(1)
        .max(1)
        .div_ceil(4);
    let max = step * 4;
    let (top, h) = (20.0, 200.0);
    let mut svg = Svg::new(WIDTH, top + h + 25.0);
    let slot = (WIDTH - LEFT - RIGHT) / days.len() as f64;
    let y = Scale {
        d0: 0.0,
        d1: max as f64,
        p0: top + h,
        p1: top,
    };
    let color =
        |kind: &str| COLORS[kinds.iter().position(|k| *k == kind).unwrap_or(0) % COLORS.len()];
    for (i, (day, parts)) in days.iter().enumerate() {
        let x = LEFT + i as f64 * slot + slot * 0.15;
        let mut base = 0u64;
        for (kind, n) in parts {
            svg.rect(
                x,
                y.at((base + n) as f64),
                slot * 0.7,
                y.at(base as f64) - y.at((base + n) as f64),
                color(kind),
                &format!("{day}: {n} run(s) by {kind}"),
            );
            base += n;
        }
        if days.len() <= 16 || i % days.len().div_ceil(16) == 0 {
            svg.text(x + slot * 0.35, top + h + 15.0, day, "middle", 10.0);
        }
    }
    svg.line(LEFT, top + h, WIDTH - RIGHT, top + h, "#999");
    svg.line(LEFT, top, LEFT, top + h, "#999");
    for i in 0..=4u64 {
        let v = (step * i) as f64;
        svg.text(
            LEFT - 6.0,
            y.at(v) + 4.0,
            &(step * i).to_string(),
            "end",
            10.0,
        );
    }
    svg.text(LEFT - 6.0, top - 8.0, "runs", "end", 10.0);
    o.push_str(&svg.finish());
    let items: Vec<(&str, &str)> = kinds.iter().map(|k| (color(k), *k)).collect();
    o.push_str(&legend(&items));
    if total > MAX_LANES {
        let _ = write!(
            o,
            "<p class=\"note\">Showing the last {MAX_LANES} of {total} days.</p>"
        );
    }
}

/// Horizontal bars: the failure rate of each provider, datacenter and country.
fn dial_plot(rows: &[DialFailureRow], o: &mut String) {
    let bars: Vec<(&DialFailureRow, f64)> = rows
        .iter()
        .filter_map(|d| d.failure_rate.map(|r| (d, r)))
        .collect();
    if bars.is_empty() {
        return;
    }
    let total = bars.len();
    let bars = &bars[..total.min(MAX_LANES)];
    let top = 20.0;
    let height = top + bars.len() as f64 * (LANE + 4.0) + 30.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = Scale {
        d0: 0.0,
        d1: 1.0,
        p0: LEFT,
        p1: WIDTH - RIGHT - 60.0,
    };
    for (i, (d, rate)) in bars.iter().enumerate() {
        let yy = top + i as f64 * (LANE + 4.0);
        let name = format!("{} {}", d.by.as_str(), absent(&d.value));
        svg.text(LEFT - 6.0, yy + LANE - 4.0, &name, "end", 11.0);
        svg.rect(x.at(0.0), yy, x.at(1.0) - x.at(0.0), LANE, "#eeeeee", "");
        svg.rect(
            x.at(0.0),
            yy,
            x.at(*rate) - x.at(0.0),
            LANE,
            "#e53935",
            &format!(
                "{name}: {} of {} outcomes failed",
                d.failed,
                d.succeeded + d.failed
            ),
        );
        svg.text(
            x.at(1.0) + 6.0,
            yy + LANE - 4.0,
            &percent(Some(*rate)),
            "start",
            11.0,
        );
    }
    let axis = top + bars.len() as f64 * (LANE + 4.0);
    svg.line(x.p0, axis, x.p1, axis, "#999");
    for i in 0..=4 {
        let v = f64::from(i) / 4.0;
        svg.text(
            x.at(v),
            axis + 15.0,
            &format!("{:.0}%", v * 100.0),
            "middle",
            10.0,
        );
    }
    o.push_str(&svg.finish());
    o.push_str(&legend(&[("#e53935", "failed share of dial outcomes")]));
    if total > MAX_LANES {
        let _ = write!(
            o,
            "<p class=\"note\">Showing {MAX_LANES} of {total} bars.</p>"
        );
    }
}

/// Per region pair: a bar from the median to p95 and a mark at p99.
fn rtt_plot(rows: &[RegionRttRow], o: &mut String) {
    if rows.is_empty() {
        return;
    }
    let total = rows.len();
    let rows = &rows[..total.min(MAX_LANES)];
    let max = rows.iter().map(|r| r.p99_ms).max().unwrap_or(1).max(1);
    let top = 20.0;
    let height = top + rows.len() as f64 * (LANE + 4.0) + 30.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = Scale {
        d0: 0.0,
        d1: max as f64,
        p0: LEFT,
        p1: WIDTH - RIGHT,
    };
    for (i, r) in rows.iter().enumerate() {
        let yy = top + i as f64 * (LANE + 4.0);
        let name = format!("{} → {}", absent(&r.from_region), absent(&r.to_region));
        let (p50, p95, p99) = (r.p50_ms as f64, r.p95_ms as f64, r.p99_ms as f64);
        svg.text(LEFT - 6.0, yy + LANE - 4.0, &name, "end", 11.0);
        svg.line(
            x.at(0.0),
            yy + LANE / 2.0,
            x.at(p99),
            yy + LANE / 2.0,
            "#90a4ae",
        );
        svg.rect(
            x.at(p50),
            yy + 2.0,
            x.at(p95) - x.at(p50),
            LANE - 4.0,
            "#64b5f6",
            &format!(
                "{name}: median {} ms, p95 {} ms, p99 {} ms over {} samples",
                r.p50_ms, r.p95_ms, r.p99_ms, r.samples
            ),
        );
        svg.line(x.at(p50), yy, x.at(p50), yy + LANE, "#0d47a1");
        svg.line(x.at(p99), yy + 2.0, x.at(p99), yy + LANE - 2.0, "#e53935");
    }
    let axis = top + rows.len() as f64 * (LANE + 4.0) + 4.0;
    svg.line(x.p0, axis, x.p1, axis, "#999");
    for i in 0..=5 {
        let v = max as f64 * f64::from(i) / 5.0;
        let anchor = if i == 5 { "end" } else { "middle" };
        svg.text(x.at(v), axis + 15.0, &format!("{v:.0} ms"), anchor, 10.0);
    }
    o.push_str(&svg.finish());
    o.push_str(&legend(&[
        ("#0d47a1", "median"),
        ("#64b5f6", "median – p95"),
        ("#e53935", "p99"),
    ]));
    if total > MAX_LANES {
        let _ = write!(
            o,
            "<p class=\"note\">Showing {MAX_LANES} of {total} region pairs.</p>"
        );
    }
}

/// One of the report's own sentences, which may hold `code` spans, as HTML.
fn prose(t: &str) -> String {
    let mut out = String::new();
    for (i, part) in esc(t).split('`').enumerate() {
        if i > 0 {
            out.push_str(if i % 2 == 1 { "<code>" } else { "</code>" });
        }
        out.push_str(part);
    }
    if t.matches('`').count() % 2 == 1 {
        out.push_str("</code>");
    }
    out
}

/// A section's table, every cell escaped.
fn table(s: &Section, o: &mut String) {
    o.push_str("<table><tr>");
    for c in s.columns {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    o.push_str("</tr>");
    for row in &s.rows {
        o.push_str("<tr>");
        for c in row {
            let _ = write!(o, "<td>{}</td>", esc(c));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
}

/// The page.
pub fn page(r: &FleetReport) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Fleet report — diagwire</title><style>{CSS}</style></head><body>"
    );
    let _ = write!(
        o,
        "<h1>Fleet report</h1><p>{} run(s) in the dataset.</p>",
        r.runs
    );
    for s in sections(r) {
        let _ = write!(o, "<section id=\"{}\"><h2>{}</h2>", s.id, esc(s.title));
        if s.rows.is_empty() {
            let _ = write!(o, "<p class=\"empty\">{}</p></section>", prose(s.empty));
            continue;
        }
        let _ = write!(o, "<p>{}</p>", prose(s.about));
        match s.id {
            "runs-over-time" => runs_plot(r, &mut o),
            "dial-failure-rate" => dial_plot(&r.dial_failures, &mut o),
            "probe-rtt-by-region" => rtt_plot(&r.probe_rtt_regions, &mut o),
            _ => {}
        }
        table(&s, &mut o);
        o.push_str("</section>");
    }
    o.push_str("</body></html>\n");
    o
}
