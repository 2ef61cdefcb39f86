//! A task group whose busiest member did far more than the others
//! ([`GroupOutlier`]): folding `log/parse/0` and `log/parse/1` into
//! `log/parse/*` adds their figures up, which hides that one of them
//! carried most of the load.

use serde::Serialize;

/// How many times the group's median busy time its busiest member must
/// exceed to be flagged.
pub const OUTLIER_RATIO: f64 = 2.0;

/// The busiest member of a task group, flagged when its busy time is over
/// [`OUTLIER_RATIO`] times the group's median (a group of at least two
/// tasks).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupOutlier {
    /// The task's id.
    pub task: u64,
    /// Its name.
    pub name: String,
    /// Its busy time.
    pub busy_ns: u64,
    /// The median busy time of the group's tasks (the lower of the middle
    /// two for an even count: of two tasks, the other one).
    pub median_ns: u64,
    /// `busy_ns` over `median_ns` (infinite when the median is 0).
    #[serde(serialize_with = "ratio_json")]
    pub ratio: f64,
}

/// An infinite ratio (a median of 0) as `null` in JSON.
fn ratio_json<S: serde::Serializer>(r: &f64, s: S) -> Result<S::Ok, S::Error> {
    if r.is_finite() {
        s.serialize_f64(*r)
    } else {
        s.serialize_none()
    }
}

impl GroupOutlier {
    /// "name busy 6.0x the group's median (X vs Y)".
    pub fn describe(&self) -> String {
        use crate::render::number::fmt_ns;
        let ratio = if self.ratio.is_finite() {
            format!("{:.1}x", self.ratio)
        } else {
            "far over".to_owned()
        };
        format!(
            "{} (task {}) was busy {} the group's median ({} vs {})",
            self.name,
            self.task,
            ratio,
            fmt_ns(self.busy_ns as f64),
            fmt_ns(self.median_ns as f64)
        )
    }
}

/// The outlier among a group's members (`(task id, name, busy ns)`), if
/// its busiest member was busy over [`OUTLIER_RATIO`] times the members'
/// median and the group has at least two members.
pub fn group_outlier<'a>(
    members: impl IntoIterator<Item = (u64, &'a str, u64)>,
) -> Option<GroupOutlier> {
    let mut m: Vec<(u64, &str, u64)> = members.into_iter().collect();
    if m.len() < 2 {
        return None;
    }
    m.sort_by(|a, b| a.2.cmp(&b.2).then(b.0.cmp(&a.0)));
    let n = m.len();
    // The lower median: of two tasks the other one, so that a pair where
    // one did six times the other's work is flagged (their mean never is).
    let median = m[(n - 1) / 2].2;
    let (task, name, busy) = m[n - 1];
    if busy == 0 || (busy as f64) <= OUTLIER_RATIO * median as f64 {
        return None;
    }
    Some(GroupOutlier {
        task,
        name: name.to_owned(),
        busy_ns: busy,
        median_ns: median,
        ratio: if median == 0 {
            f64::INFINITY
        } else {
            busy as f64 / median as f64
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_a_member_over_twice_the_median() {
        let o = group_outlier([(1, "p/0", 100), (2, "p/1", 600)]).unwrap();
        assert_eq!((o.task, o.busy_ns, o.median_ns), (2, 600, 100));
        assert!((o.ratio - 6.0).abs() < 1e-9);
        let o = group_outlier([(1, "p/0", 100), (2, "p/1", 110), (3, "p/2", 600)]).unwrap();
        assert_eq!((o.name.as_str(), o.median_ns), ("p/2", 110));
        assert!((o.ratio - 600.0 / 110.0).abs() < 1e-9);
    }

    #[test]
    fn leaves_balanced_and_single_groups_alone() {
        assert_eq!(group_outlier([(1, "p/0", 100)]), None);
        assert_eq!(group_outlier([(1, "p/0", 100), (2, "p/1", 200)]), None);
        let four = [
            (1, "p/0", 100),
            (2, "p/1", 110),
            (3, "p/2", 120),
            (4, "p/3", 230),
        ];
        assert_eq!(group_outlier(four).map(|o| o.median_ns), Some(110));
        assert_eq!(
            group_outlier([(1, "p/0", 100), (2, "p/1", 150), (3, "p/2", 300)]),
            None
        );
        assert_eq!(group_outlier([(1, "p/0", 0), (2, "p/1", 0)]), None);
    }
}
