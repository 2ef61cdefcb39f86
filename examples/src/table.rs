//! Plain-text and Markdown tables, on comfy-table: every table `rill-bench`
//! prints.
//!
//! ```
//! let mut t = rill_examples::table::Table::plain(["task", "busy"]).left(&[0]);
//! t.row(["source", "12 ms"]);
//! t.row(["sink", "3 ms"]);
//! assert_eq!(t.to_string(), "task     busy\nsource  12 ms\nsink     3 ms\n");
//! ```

use std::fmt;

use comfy_table::{presets, CellAlignment, Table as Inner};

/// A table of text cells, right-aligned except in the columns made
/// left-aligned with [`Table::left`]. Its [`Display`](fmt::Display) is one
/// line per row, blanks at the ends of lines trimmed, each line ending in a
/// newline.
#[derive(Clone, Debug)]
pub struct Table {
    inner: Inner,
}

impl Table {
    fn new<I, S>(style: comfy_table::TableStyle, head: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: ToString,
    {
        let mut inner = Inner::new();
        inner.load_style(style);
        inner.set_header(head.into_iter().map(|h| h.to_string()).collect::<Vec<_>>());
        for c in inner.column_iter_mut() {
            c.set_cell_alignment(CellAlignment::Right);
        }
        Table { inner }
    }

    /// A table without borders or rules: the column heads on the first line,
    /// columns two spaces apart, the first at the start of the line.
    pub fn plain<I, S>(head: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: ToString,
    {
        Table::new(presets::NOTHING, head).indent(0)
    }

    /// A Markdown table: `| a | b |` lines, a `|---|---|` rule under the
    /// heads.
    pub fn markdown<I, S>(head: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: ToString,
    {
        Table::new(presets::ASCII_MARKDOWN, head)
    }

    /// Left-aligns the columns `cols` (counted from 0).
    pub fn left(mut self, cols: &[usize]) -> Self {
        for &i in cols {
            if let Some(c) = self.inner.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Left);
            }
        }
        self
    }

    /// Starts every line with `n` spaces (for a plain table).
    pub fn indent(mut self, n: u16) -> Self {
        if let Some(c) = self.inner.column_mut(0) {
            c.set_padding((n, 1));
        }
        self
    }

    /// Adds a row; it may have fewer cells than there are columns.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: ToString,
    {
        self.inner
            .add_row(cells.into_iter().map(|c| c.to_string()).collect::<Vec<_>>());
        self
    }

    /// The number of rows, the heads not counted.
    pub fn len(&self) -> usize {
        self.inner.row_count()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in self.inner.lines() {
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_columns_two_spaces_apart() {
        let mut t = Table::plain(["a", "bb", "name"]).left(&[2]).indent(3);
        t.row(["1", "22", "x"]);
        t.row(["333", "4", "long name"]);
        assert_eq!(
            t.to_string(),
            "     a  bb  name\n     1  22  x\n   333   4  long name\n"
        );
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn markdown() {
        let mut t = Table::markdown(["row", "x"]).left(&[0]);
        t.row(["yield", "1.5"]);
        assert_eq!(
            t.to_string(),
            "| row   |   x |\n|-------|-----|\n| yield | 1.5 |\n"
        );
    }

    #[test]
    fn short_rows_and_lines_in_cells() {
        let mut t = Table::plain(["engine", "median", "note"]).left(&[0, 2]);
        t.row(["rill", "error: two\nlines"]);
        let s = t.to_string();
        assert!(s.starts_with("engine"), "{s}");
        assert!(s.contains("rill"), "{s}");
        assert!(!s.lines().any(|l| l.ends_with(' ')), "{s}");
    }
}
