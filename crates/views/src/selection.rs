//! What one read of a partition lets through: a view's filter, the reading consumer's
//! lanes, or both (a lane's consumer of a view sees the view's records of its lane).

use crate::filter::{Filter, Verdict};
use crate::lanes::{LANE_HEADER, LaneFilter};
use crate::tag_index::{BatchSummary, last_value};

/// A read's filters; neither is a read of everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection<'a> {
    pub view: Option<&'a Filter>,
    pub lane: Option<&'a LaneFilter>,
}

impl Selection<'_> {
    /// Whether every record passes: the read is the partition's as stored.
    pub fn passes_everything(&self) -> bool {
        self.view.is_none_or(Filter::passes_everything)
            && self.lane.is_none_or(LaneFilter::passes_everything)
    }

    /// What a batch's summary says of it.
    pub fn judge(&self, summary: &BatchSummary) -> Verdict {
        let view = self
            .view
            .map_or(Verdict::All, |view| view.judge(&summary.tags));
        let lane = self
            .lane
            .map_or(Verdict::All, |lane| lane.judge(&summary.lanes));
        view.and(lane)
    }

    /// Whether a record with these headers passes.
    pub fn matches(&self, headers: &[(&[u8], Option<&[u8]>)]) -> bool {
        self.lane
            .is_none_or(|lane| lane.matches(last_value(headers, LANE_HEADER)))
            && self.view.is_none_or(|view| view.matches(headers))
    }
}

impl Verdict {
    /// The verdict of two filters that must both pass.
    #[must_use]
    pub fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::None, _) | (_, Verdict::None) => Verdict::None,
            (Verdict::All, Verdict::All) => Verdict::All,
            _ => Verdict::Some,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_consumer_of_a_view_sees_the_views_records_of_its_lane() {
        let view = Filter::parse("TagA", "").unwrap();
        let lane = LaneFilter::only("ppe");
        let both = Selection {
            view: Some(&view),
            lane: Some(&lane),
        };
        let headers = |tag: &'static [u8], lane: Option<&'static [u8]>| {
            let mut headers: Vec<(&[u8], Option<&[u8]>)> = vec![(b"spool.tag", Some(tag))];
            if let Some(lane) = lane {
                headers.push((b"spool.lane", Some(lane)));
            }
            headers
        };
        assert!(both.matches(&headers(b"TagA", Some(b"ppe"))));
        assert!(!both.matches(&headers(b"TagB", Some(b"ppe"))));
        assert!(!both.matches(&headers(b"TagA", None)));
        let mut summary = BatchSummary::default();
        summary.add(&headers(b"TagA", Some(b"ppe")));
        assert_eq!(both.judge(&summary), Verdict::All);
        summary.add(&headers(b"TagB", None));
        assert_eq!(both.judge(&summary), Verdict::Some);
        let mut other_lane = BatchSummary::default();
        other_lane.add(&headers(b"TagA", Some(b"boe")));
        assert_eq!(both.judge(&other_lane), Verdict::None);
        assert!(Selection::default().passes_everything());
    }
}
