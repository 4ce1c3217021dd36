//! A small SVG writer for the summary's plots: rectangles, lines, polylines, circles and text, with
//! every text escaped and every number written with one decimal, so the same data gives the same
//! bytes. Written here because the plotting crates measure text with system fonts, which a
//! deterministic, self-contained page cannot depend on.

use std::fmt::Write;

/// Escapes text for XML (and so for HTML).
pub fn esc(s: &str) -> String {
    let printable = diagwire::problem::printable(s);
    let mut out = String::with_capacity(printable.len());
    for c in printable.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn n(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_owned)
}

/// An SVG document being written.
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

impl Svg {
    /// A drawing of that size, in pixels.
    pub fn new(width: f64, height: f64) -> Svg {
        Svg {
            width,
            height,
            body: String::new(),
        }
    }

    /// A filled rectangle with a tooltip.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: &str) {
        let _ = write!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}">"#,
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            esc(fill)
        );
        if !title.is_empty() {
            let _ = write!(self.body, "<title>{}</title>", esc(title));
        }
        self.body.push_str("</rect>");
    }

    /// A line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) {
        let _ = write!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>"#,
            n(x1),
            n(y1),
            n(x2),
            n(y2),
            esc(stroke)
        );
    }

    /// A polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, title: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
            .collect();
        let _ = write!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="1.5">"#,
            pts.join(" "),
            esc(stroke)
        );
        if !title.is_empty() {
            let _ = write!(self.body, "<title>{}</title>", esc(title));
        }
        self.body.push_str("</polyline>");
    }

    /// A dot with a tooltip.
    pub fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str, title: &str) {
        let _ = write!(
            self.body,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{}"><title>{}</title></circle>"#,
            n(x),
            n(y),
            n(r),
            esc(fill),
            esc(title)
        );
    }

    /// Text; `anchor` is `start`, `middle` or `end`.
    pub fn text(&mut self, x: f64, y: f64, s: &str, anchor: &str, size: f64) {
        let _ = write!(
            self.body,
            r#"<text x="{}" y="{}" text-anchor="{}" font-size="{}" font-family="sans-serif">{}</text>"#,
            n(x),
            n(y),
            esc(anchor),
            n(size),
            esc(s)
        );
    }

    /// The finished `<svg>` element.
    pub fn finish(self) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">{}</svg>"#,
            self.body,
            w = n(self.width),
            h = n(self.height)
        )
    }
}

/// A linear map from a data interval to a pixel interval.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Data start.
    pub d0: f64,
    /// Data end.
    pub d1: f64,
    /// Pixel start.
    pub p0: f64,
    /// Pixel end.
    pub p1: f64,
}

impl Scale {
    /// The pixel of a data value, clamped to the pixel interval.
    pub fn at(&self, v: f64) -> f64 {
        let span = self.d1 - self.d0;
        let t = if span.abs() < f64::EPSILON {
            0.0
        } else {
            (v - self.d0) / span
        };
        self.p0 + t.clamp(0.0, 1.0) * (self.p1 - self.p0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_a_bundle_cannot_close_the_svg() {
        let mut s = Svg::new(10.0, 10.0);
        s.text(1.0, 2.0, "</svg><script>x</script>\u{1b}", "start", 10.0);
        let out = s.finish();
        assert!(!out.contains("<script>"), "{out}");
        assert!(out.contains("&lt;/svg&gt;&lt;script&gt;"), "{out}");
        assert!(out.contains("\\u{1b}"), "{out}");
    }

    #[test]
    fn numbers_have_one_decimal_and_no_trailing_zero() {
        let mut s = Svg::new(100.0, 20.5);
        s.line(0.0, 1.25, 2.0, f64::NAN, "#000");
        let out = s.finish();
        assert!(out.contains(r#"width="100" height="20.5""#), "{out}");
        assert!(
            out.contains(r#"y1="1.2""#) || out.contains(r#"y1="1.3""#),
            "{out}"
        );
        assert!(out.contains(r#"y2="0""#), "{out}");
    }

    #[test]
    fn a_scale_maps_and_clamps() {
        let s = Scale {
            d0: 0.0,
            d1: 10.0,
            p0: 100.0,
            p1: 200.0,
        };
        assert_eq!(s.at(5.0), 150.0);
        assert_eq!(s.at(-5.0), 100.0);
        assert_eq!(s.at(50.0), 200.0);
        let flat = Scale {
            d0: 3.0,
            d1: 3.0,
            p0: 0.0,
            p1: 1.0,
        };
        assert_eq!(flat.at(3.0), 0.0);
    }
}
