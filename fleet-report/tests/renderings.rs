//! The fleet report's renderings on reports made by hand: a string from the dataset reaches the
//! Markdown only through the terminal escaping and the page only HTML-escaped, wherever it sits;
//! the plots draw what the rows say; an empty report says so in every section.

use diagwire_fleet_report::{
    DayRow, DialDimension, DialFailureRow, FORMAT_VERSION, FaultRow, FleetReport, QuarantineRow,
    RegionRttRow, RelayCloseRow, SubprocessBucketRow, WriterRow, markdown, page, sections,
};

const HOSTILE: &str = "<script>alert(1)</script>\u{1b}[2J|\u{202e}&\"'";

/// A report with `s` in every string field the dataset fills.
fn report_with(s: &str) -> FleetReport {
    let t = || Some(s.to_owned());
    FleetReport {
        format_version: FORMAT_VERSION,
        runs: 3,
        runs_over_time: vec![
            DayRow {
                day: "2026-05-25".into(),
                writer_kind: t(),
                runs: 2,
                nodes: 7,
            },
            DayRow {
                day: "2026-05-26".into(),
                writer_kind: None,
                runs: 1,
                nodes: 4,
            },
        ],
        faults: vec![FaultRow {
            event_type: "node_faulted".into(),
            reason: t(),
            component: t(),
            events: 2,
            runs: 1,
        }],
        dial_failures: vec![
            DialFailureRow {
                by: DialDimension::Provider,
                value: t(),
                runs: 2,
                peers: 3,
                started: 10,
                succeeded: 6,
                failed: 2,
                failure_rate: Some(0.25),
            },
            DialFailureRow {
                by: DialDimension::Country,
                value: None,
                runs: 1,
                peers: 1,
                started: 1,
                succeeded: 0,
                failed: 0,
                failure_rate: None,
            },
        ],
        relay_closes: vec![RelayCloseRow {
            initiator: s.into(),
            reason: t(),
            closes: 4,
            runs: 2,
        }],
        probe_rtt_regions: vec![RegionRttRow {
            from_region: t(),
            to_region: None,
            runs: 1,
            samples: 9,
            p50_ms: 12,
            p95_ms: 40,
            p99_ms: 55,
        }],
        subprocess_buckets: vec![SubprocessBucketRow {
            bucket: s.into(),
            subprocesses: 5,
            runs: 2,
        }],
        writers: vec![WriterRow {
            contract_version: t(),
            writer_kind: t(),
            writer_name: t(),
            writer_version: t(),
            runs: 3,
            first_seen: "2026-05-25".into(),
            last_seen: "2026-05-26".into(),
        }],
        quarantined: vec![QuarantineRow {
            route: t(),
            bodies: 2,
            bytes: 40,
            nodes: 2,
            runs: 1,
        }],
    }
}

fn hidden(s: &str) -> Option<char> {
    s.chars()
        .find(|c| (c.is_control() && *c != '\n') || *c == '\u{202e}')
}

#[test]
fn a_hostile_string_reaches_the_markdown_escaped_in_every_section() {
    let md = markdown(&report_with(HOSTILE));
    assert_eq!(hidden(&md), None, "{md}");
    let escaped = "<script>alert(1)</script>\\u{1b}[2J\\|\\u{202e}&\"'";
    // Once per string cell: writer kind, fault reason and component, provider, initiator and
    // reason, region, bucket, the four writer cells, and the quarantined bodies' route.
    assert_eq!(md.matches(escaped).count(), 13, "{md}");
}

#[test]
fn a_hostile_string_reaches_the_page_html_escaped_in_tables_and_plots() {
    let html = page(&report_with(HOSTILE));
    assert_eq!(hidden(&html), None);
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("\"'"), "{html}");
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;\\u{1b}[2J|\\u{202e}&amp;&quot;&#39;";
    // The table cells, and in the plots: the legend and tooltips of the runs plot, the bar name
    // and tooltip of the provider, the region pair's name and tooltip.
    assert!(html.matches(escaped).count() >= 19, "{html}");
}

#[test]
fn the_page_has_a_plot_per_plotted_section_with_a_bar_per_row() {
    let r = report_with("vastai");
    let html = page(&r);
    assert_eq!(html.matches("<svg").count(), 3, "{html}");
    // Runs: a bar per (day, writer kind); dials: a track and a bar per row with a rate.
    assert!(
        html.contains("<title>2026-05-25: 2 run(s) by vastai</title>"),
        "{html}"
    );
    assert!(
        html.contains("<title>provider vastai: 2 of 8 outcomes failed</title>"),
        "{html}"
    );
    assert!(html.contains(">25.0%</text>"), "{html}");
    assert!(
        html.contains("median 12 ms, p95 40 ms, p99 55 ms over 9 samples"),
        "{html}"
    );
    for s in sections(&r) {
        assert!(
            html.contains(&format!("<section id=\"{}\">", s.id)),
            "{}",
            s.id
        );
    }
}

#[test]
fn an_empty_report_says_what_each_section_lacks_and_draws_nothing() {
    let r = FleetReport {
        format_version: FORMAT_VERSION,
        ..FleetReport::default()
    };
    let md = markdown(&r);
    let html = page(&r);
    for s in sections(&r) {
        assert!(md.contains(s.empty), "{}: {md}", s.title);
    }
    assert_eq!(html.matches("<p class=\"empty\">").count(), 8, "{html}");
    assert!(!html.contains("<svg"), "{html}");
    assert!(!md.contains('|'), "{md}");
}
