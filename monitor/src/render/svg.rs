//! SVG pieces that know nothing of a run: text escaping and task colours.

/// A stable colour for a task, from its id: hues a golden angle apart, so
/// tasks created one after another get well separated colours (and a task
/// keeps its colour in every picture of the run).
pub fn task_colour(id: u64) -> String {
    let hue = ((id as f64 * 0.618_033_988_75).fract() * 360.0).round() as u32 % 360;
    let light = [58, 48, 68][(id / 7 % 3) as usize];
    format!("hsl({hue},65%,{light}%)")
}

/// Escapes text for SVG content and attributes.
pub fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}
