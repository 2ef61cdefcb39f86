//! Plain-text tables.
//!
//! Hand-written rather than comfy-table (which rill-bench uses for its
//! bordered tables): a borderless table of padded columns is these few lines.

/// A plain-text table: right-aligned columns, except the ones listed in `left`.
pub(crate) fn table(out: &mut String, head: &[&str], rows: &[Vec<String>], left: &[usize]) {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = String>| {
        let mut s = String::from(" ");
        for (i, c) in cells.enumerate() {
            let pad = w[i].saturating_sub(c.chars().count());
            s.push_str("  ");
            if left.contains(&i) {
                s.push_str(&c);
                s.extend(std::iter::repeat_n(' ', pad));
            } else {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(&c);
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(out, &mut head.iter().map(|h| h.to_string()));
    for r in rows {
        line(out, &mut r.iter().cloned());
    }
}
