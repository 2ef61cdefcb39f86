//! Task groups: names that differ only in numeric path segments fold into
//! one group, `mc/star/3/step/7` and `mc/star/12/step/0` into
//! `mc/star/*/step/*`.
//!
//! Definition: a name is split at `/`; every segment made only of ASCII
//! digits (at least one) becomes `*`; the segments are joined again. Other
//! segments, `relay3` or `v2-x`, stay as they are, so `relay3` and `relay4`
//! are two groups. A name without a numeric segment is its own group.
//! Tasks without a logged name (`task#12`) are not folded.

use std::borrow::Cow;

/// The group of `name` (see the module documentation); borrowed when the
/// name has no numeric segment.
pub fn group_of(name: &str) -> Cow<'_, str> {
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !name.split('/').any(numeric) {
        return Cow::Borrowed(name);
    }
    let folded: Vec<&str> = name
        .split('/')
        .map(|s| if numeric(s) { "*" } else { s })
        .collect();
    Cow::Owned(folded.join("/"))
}

/// Whether any of `names` folds into a group other than itself.
pub fn any_folds<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    names
        .into_iter()
        .any(|n| matches!(group_of(n), Cow::Owned(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_segments_fold() {
        assert_eq!(group_of("mc/star/3/step/7"), "mc/star/*/step/*");
        assert_eq!(group_of("mc/star/12/step/0"), "mc/star/*/step/*");
        assert_eq!(group_of("relay/10"), "relay/*");
        assert_eq!(group_of("7"), "*");
        assert_eq!(group_of("a//b"), "a//b");
        assert_eq!(group_of("/3/"), "/*/");
    }

    #[test]
    fn other_names_stay() {
        for n in ["relay3", "v2-x/y", "main", "", "task#12", "a/-1/b", "a/1.5"] {
            assert!(matches!(group_of(n), Cow::Borrowed(_)), "{n}");
        }
        assert!(!any_folds(["a", "b/c"]));
        assert!(any_folds(["a", "b/1"]));
    }
}
