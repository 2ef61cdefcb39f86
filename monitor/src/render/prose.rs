//! Prose wrapped to a width, through `textwrap`: lines break at spaces
//! only (a hyphenated or overlong word stays whole), first fit, a column
//! per character (two for wide ones).

/// The options every output wraps with.
fn options(width: usize) -> textwrap::Options<'static> {
    textwrap::Options::new(width)
        .break_words(false)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit)
}

/// `text` wrapped to lines of at most `width` columns, joined by newlines.
pub(crate) fn fill(text: &str, width: usize) -> String {
    textwrap::fill(text, options(width))
}

/// `text` wrapped to lines of at most `width` columns, the first after
/// `first` and the others after `rest` (both counted in the width).
pub(crate) fn wrap_indented(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let opts = options(width).initial_indent(first).subsequent_indent(rest);
    textwrap::wrap(text, opts)
        .into_iter()
        .map(|l| l.into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breaks_at_spaces_and_keeps_words_whole() {
        assert_eq!(fill("aa bb cc", 5), "aa bb\ncc");
        assert_eq!(fill("cross-worker wake-ups", 8), "cross-worker\nwake-ups");
        assert_eq!(fill("α β γ δ", 3), "α β\nγ δ");
        assert_eq!(
            wrap_indented("one two three", 9, "• x: ", "    "),
            ["• x: one", "    two", "    three"]
        );
    }
}
