//! The report's building blocks: escaped text, tables, notes and small
//! pictures, written as XHTML-style markup (every element closed, every
//! attribute quoted), so the page is well-formed XML as well as HTML.

use std::fmt::Write as _;

use crate::render::svg::xml_escape;

/// Escapes text for element content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    xml_escape(s)
}

/// A table cell: text (escaped when written), a number (escaped,
/// right-aligned) or markup the caller built from escaped parts.
pub(crate) enum Cell {
    Text(String),
    Num(String),
    Html(String),
}

impl Cell {
    pub(crate) fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    pub(crate) fn num(s: impl Into<String>) -> Cell {
        Cell::Num(s.into())
    }

    pub(crate) fn html(s: impl Into<String>) -> Cell {
        Cell::Html(s.into())
    }
}

/// A table row, and the class of its `<tr>` (`cross` marks a row whose
/// streams cross workers).
pub(crate) struct Row {
    pub cells: Vec<Cell>,
    pub class: Option<&'static str>,
}

impl From<Vec<Cell>> for Row {
    fn from(cells: Vec<Cell>) -> Row {
        Row { cells, class: None }
    }
}

/// A table with a header row; numeric headers are right-aligned like
/// their cells.
pub(crate) fn table(head: &[&str], rows: &[Row]) -> String {
    let numeric: Vec<bool> = (0..head.len())
        .map(|i| {
            !rows.is_empty()
                && rows
                    .iter()
                    .all(|r| matches!(r.cells.get(i), Some(Cell::Num(_)) | None))
        })
        .collect();
    let mut o = String::from("<table>\n<thead><tr>");
    for (h, &n) in head.iter().zip(&numeric) {
        let _ = write!(
            o,
            "<th{}>{}</th>",
            if n { " class=\"n\"" } else { "" },
            esc(h)
        );
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        match r.class {
            Some(c) => {
                let _ = write!(o, "<tr class=\"{c}\">");
            }
            None => o.push_str("<tr>"),
        }
        for c in &r.cells {
            match c {
                Cell::Text(s) => {
                    let _ = write!(o, "<td>{}</td>", esc(s));
                }
                Cell::Num(s) => {
                    let _ = write!(o, "<td class=\"n\">{}</td>", esc(s));
                }
                Cell::Html(s) => {
                    let _ = write!(o, "<td>{s}</td>");
                }
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table>\n");
    o
}

/// A paragraph of text.
pub(crate) fn para(text: &str) -> String {
    format!("<p>{}</p>\n", esc(text))
}

/// The one line that says what a section cannot show and why.
pub(crate) fn missing(text: &str) -> String {
    boxed("Not shown", text)
}

/// A caution about the figures beside it, in the same box as
/// [`missing`].
pub(crate) fn caution(text: &str) -> String {
    boxed("Caution", text)
}

/// A line in the box of [`missing`] and [`caution`], led by `label`.
fn boxed(label: &str, text: &str) -> String {
    format!(
        "<p class=\"missing\"><strong>{label}:</strong> {}</p>\n",
        esc(text)
    )
}

/// A note on how a figure is computed or how far off it may be.
pub(crate) fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", esc(text))
}

/// A command for the user to run.
pub(crate) fn command(cmd: &str) -> String {
    format!("<pre class=\"cmd\">{}</pre>\n", esc(cmd))
}

/// `part / whole` in percent, `-` for an empty whole.
pub(crate) fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 && part.is_finite() {
        format!("{:.1}%", part * 100.0 / whole)
    } else {
        "-".to_owned()
    }
}

/// Nanoseconds with a unit.
pub(crate) fn ns(v: u64) -> String {
    crate::render::number::fmt_ns(v as f64)
}

/// A size in bytes with a unit.
pub(crate) fn bytes(n: u64) -> String {
    let n = n as f64;
    if n < 1e3 {
        format!("{n:.0} bytes")
    } else if n < 1e6 {
        format!("{:.1} kB", n / 1e3)
    } else if n < 1e9 {
        format!("{:.1} MB", n / 1e6)
    } else {
        format!("{:.2} GB", n / 1e9)
    }
}

/// A share (0 to 1) as a small horizontal bar with its percentage.
pub(crate) fn share_bar(share: f64) -> String {
    let s = if share.is_finite() {
        share.clamp(0.0, 1.0)
    } else {
        0.0
    };
    format!(
        "<span class=\"share\"><span class=\"bar\"><span style=\"width:{:.1}%\"></span></span> \
         {:.0}%</span>",
        s * 100.0,
        s * 100.0
    )
}

/// `sh`-quotes `s` when it needs it.
pub(crate) fn sh(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `s` percent-encoded for a `data:` address (everything but letters,
/// digits and `-_.~ ` spelled `%XX`; spaces too, so the address has none).
pub(crate) fn percent_encode(s: &str) -> String {
    let mut o = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

/// An inline SVG drawn from `(label, [(value, colour, what)], right text)`
/// rows: one horizontal bar per row, its parts side by side in proportion
/// to `scale` (the value a full bar stands for), each with a tooltip.
pub(crate) fn bars_svg(rows: &[BarRow], scale: f64, legend: &[(&str, &str)]) -> String {
    const LEFT: f64 = 90.0;
    const BAR_W: f64 = 560.0;
    const ROW_H: f64 = 22.0;
    const TOP: f64 = 6.0;
    let width = LEFT + BAR_W + 330.0;
    let legend_h = if legend.is_empty() { 0.0 } else { 24.0 };
    let height = TOP + rows.len() as f64 * ROW_H + legend_h + 6.0;
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"bars\" width=\"{width:.0}\" \
         height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" \
         font-size=\"12\" role=\"img\">"
    );
    let scale = if scale > 0.0 && scale.is_finite() {
        scale
    } else {
        1.0
    };
    for (i, r) in rows.iter().enumerate() {
        let y = TOP + i as f64 * ROW_H;
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{BAR_W}\" height=\"{:.1}\" fill=\"#fff\" \
             stroke=\"#bbb\"/>",
            LEFT - 8.0,
            y + 14.0,
            esc(&r.label),
            ROW_H - 6.0
        );
        let mut x = LEFT;
        for (v, fill, what) in &r.parts {
            let w = (v / scale).clamp(0.0, 1.0) * BAR_W;
            let w = w.min(LEFT + BAR_W - x);
            if w <= 0.0 {
                continue;
            }
            let _ = write!(
                o,
                "<rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{:.1}\" \
                 fill=\"{fill}\"><title>{}</title></rect>",
                ROW_H - 6.0,
                esc(what)
            );
            x += w;
        }
        if let Some((lo, hi)) = r.range {
            // An error bar over the end of the first part.
            let (a, b) = (
                LEFT + (lo / scale).clamp(0.0, 1.0) * BAR_W,
                LEFT + (hi / scale).clamp(0.0, 1.0) * BAR_W,
            );
            let m = y + (ROW_H - 6.0) / 2.0;
            let _ = write!(
                o,
                "<path d=\"M{a:.1} {m:.1}H{b:.1}M{a:.1} {:.1}V{:.1}M{b:.1} {:.1}V{:.1}\" \
                 stroke=\"#000\" stroke-width=\"1.2\" fill=\"none\"/>",
                m - 4.0,
                m + 4.0,
                m - 4.0,
                m + 4.0
            );
        }
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            LEFT + BAR_W + 8.0,
            y + 14.0,
            esc(&r.right)
        );
    }
    let mut lx = LEFT;
    let ly = TOP + rows.len() as f64 * ROW_H + 6.0;
    for (fill, what) in legend {
        let _ = write!(
            o,
            "<rect x=\"{lx:.1}\" y=\"{ly:.1}\" width=\"12\" height=\"12\" fill=\"{fill}\" \
             stroke=\"#888\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            lx + 16.0,
            ly + 10.5,
            esc(what)
        );
        lx += 30.0 + what.chars().count() as f64 * 6.6;
    }
    o.push_str("</svg>\n");
    o
}

/// One bar of [`bars_svg`].
pub(crate) struct BarRow {
    pub label: String,
    /// `(value, fill, tooltip)`, drawn left to right.
    pub parts: Vec<(f64, &'static str, String)>,
    /// The text right of the bar.
    pub right: String,
    /// An error bar from `lo` to `hi` (in the values' unit).
    pub range: Option<(f64, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_escaped_and_numbers_right_aligned() {
        let t = table(
            &["name", "n"],
            &[Row {
                cells: vec![Cell::text("<a&b>"), Cell::num("3")],
                class: Some("cross"),
            }],
        );
        assert!(t.contains("<td>&lt;a&amp;b&gt;</td>"), "{t}");
        assert!(t.contains("<th class=\"n\">n</th>"), "{t}");
        assert!(t.contains("<tr class=\"cross\">"), "{t}");
    }

    #[test]
    fn percent_encoding_leaves_no_markup() {
        let e = percent_encode("\"a b\" = 1\n# <x> & 'y'");
        assert_eq!(e, "%22a%20b%22%20%3D%201%0A%23%20%3Cx%3E%20%26%20%27y%27");
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(sh("target/logs/mc-rr"), "target/logs/mc-rr");
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("it's"), "'it'\\''s'");
        assert_eq!(sh(""), "''");
    }

    #[test]
    fn shares_clamp() {
        assert!(share_bar(2.0).contains("width:100.0%"));
        assert!(share_bar(f64::NAN).contains("width:0.0%"));
        assert_eq!(pct(1.0, 0.0), "-");
    }
}
