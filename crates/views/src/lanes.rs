//! Lanes (BMQ's swimlanes): test traffic kept apart inside production topics. A
//! record is in lane `X` when its last `spool.lane` header says `X`, else in the base
//! lane; a client is in the lane its `client.id` names (`app;lane=X`, by
//! `lane.client.id.pattern`). What a fetch shows of a topic is a [`LaneFilter`]:
//! a lane's consumer its lane only, a base consumer the base lane and the lanes it
//! stands in for (fallback). See `docs/lanes.md`.
//!
//! A consumer group's members in lane `X` are the group `G;lane=X` ([`lane_group`]),
//! so their committed offsets stay apart from the base members'.

use std::collections::HashSet;

use regex::Regex;

use crate::filter::Verdict;
use crate::tag_index::{BatchTags, tag_hash};

/// The header a record's lane is in (the last one wins if repeated).
pub const LANE_HEADER: &str = "spool.lane";

/// Between a group's id and its lane in the id of the group's lane part.
pub const LANE_GROUP_SEPARATOR: &str = ";lane=";

/// `lane.client.id.pattern` by default: `…;lane=NAME`.
pub const DEFAULT_CLIENT_ID_PATTERN: &str = ";lane=([A-Za-z0-9._-]+)";

/// The most bytes a lane's name has.
pub const MAX_LANE_LEN: usize = 64;

/// How a client's lane is read from its `client.id`: the first capture group of a
/// regular expression.
#[derive(Debug, Clone)]
pub struct LanePattern {
    regex: Regex,
}

impl LanePattern {
    /// The pattern of `lane.client.id.pattern`; the message says what is wrong.
    pub fn parse(text: &str) -> Result<LanePattern, String> {
        let regex =
            Regex::new(text).map_err(|error| format!("not a regular expression: {error}"))?;
        if regex.captures_len() < 2 {
            return Err("it needs a capture group for the lane's name".to_owned());
        }
        Ok(LanePattern { regex })
    }

    pub fn as_str(&self) -> &str {
        self.regex.as_str()
    }

    /// The lane `client_id` names, if any (a name longer than [`MAX_LANE_LEN`] is
    /// none).
    pub fn lane_of<'a>(&self, client_id: &'a str) -> Option<&'a str> {
        let name = self.regex.captures(client_id)?.get(1)?.as_str();
        (!name.is_empty() && name.len() <= MAX_LANE_LEN).then_some(name)
    }
}

impl Default for LanePattern {
    fn default() -> Self {
        LanePattern::parse(DEFAULT_CLIENT_ID_PATTERN).unwrap_or_else(|_| unreachable!())
    }
}

impl PartialEq for LanePattern {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for LanePattern {}

/// The id of group `group`'s part in lane `lane`.
pub fn lane_group(group: &str, lane: &str) -> String {
    format!("{group}{LANE_GROUP_SEPARATOR}{lane}")
}

/// A group id as a group and a lane: `G;lane=X` is `G`'s part in lane `X`; any
/// other id is a base group.
pub fn split_group(id: &str) -> (&str, Option<&str>) {
    match id.rsplit_once(LANE_GROUP_SEPARATOR) {
        Some((group, lane)) if !group.is_empty() && !lane.is_empty() => (group, Some(lane)),
        _ => (id, None),
    }
}

/// What a consumer sees of a topic's lanes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneFilter {
    /// A lane's consumer: that lane's records only.
    Only { name: Vec<u8>, hash: u64 },
    /// A base consumer: records of no lane, and of every lane but these.
    Base(Excluded),
}

/// The lanes a base consumer does not see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Excluded {
    /// Every lane (`lane.fallback.enable=false`).
    Every,
    /// These lanes: its group has live members in them.
    These {
        names: HashSet<Vec<u8>>,
        hashes: HashSet<u64>,
    },
}

impl LaneFilter {
    /// Lane `lane`'s consumers' filter.
    pub fn only(lane: &str) -> LaneFilter {
        LaneFilter::Only {
            name: lane.as_bytes().to_vec(),
            hash: tag_hash(lane.as_bytes()),
        }
    }

    /// A base consumer's filter that leaves out `lanes`.
    pub fn base_without<'a>(lanes: impl IntoIterator<Item = &'a str>) -> LaneFilter {
        let names: HashSet<Vec<u8>> = lanes.into_iter().map(|l| l.as_bytes().to_vec()).collect();
        let hashes = names.iter().map(|name| tag_hash(name)).collect();
        LaneFilter::Base(Excluded::These { names, hashes })
    }

    /// Whether every record passes (a base consumer that stands in for every lane).
    pub fn passes_everything(&self) -> bool {
        matches!(self, LaneFilter::Base(Excluded::These { names, .. }) if names.is_empty())
    }

    /// What the summary of a batch's lanes says.
    pub fn judge(&self, lanes: &BatchTags) -> Verdict {
        let Some(laned) = lanes.hashes() else {
            return Verdict::Some;
        };
        let (wanted, all_wanted) = match self {
            LaneFilter::Only { hash, .. } => {
                let wanted = usize::from(laned.contains(hash));
                (wanted, wanted == laned.len() && !lanes.untagged)
            }
            LaneFilter::Base(Excluded::Every) => (usize::from(lanes.untagged), laned.is_empty()),
            LaneFilter::Base(Excluded::These { hashes, .. }) => {
                let excluded = laned.iter().filter(|hash| hashes.contains(hash)).count();
                let wanted = laned.len() - excluded + usize::from(lanes.untagged);
                (wanted, excluded == 0)
            }
        };
        if all_wanted {
            Verdict::All
        } else if wanted == 0 {
            Verdict::None
        } else {
            Verdict::Some
        }
    }

    /// Whether a record of lane `lane` (`None`: the base lane) passes.
    pub fn matches(&self, lane: Option<&[u8]>) -> bool {
        match self {
            LaneFilter::Only { name, .. } => lane == Some(name.as_slice()),
            LaneFilter::Base(Excluded::Every) => lane.is_none(),
            LaneFilter::Base(Excluded::These { names, .. }) => {
                lane.is_none_or(|lane| !names.contains(lane))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(lanes: &[Option<&str>]) -> BatchTags {
        let mut summary = BatchTags::default();
        for lane in lanes {
            summary.add(lane.map(str::as_bytes));
        }
        summary
    }

    #[test]
    fn a_client_id_names_its_lane_by_the_pattern() {
        let pattern = LanePattern::default();
        assert_eq!(pattern.lane_of("checkout;lane=ppe"), Some("ppe"));
        assert_eq!(
            pattern.lane_of("checkout;lane=feature-42;x=1"),
            Some("feature-42")
        );
        assert_eq!(pattern.lane_of("checkout"), None);
        assert_eq!(pattern.lane_of("checkout;lane="), None);
        let custom = LanePattern::parse("^lane-([a-z]+)-").unwrap();
        assert_eq!(custom.lane_of("lane-boe-app"), Some("boe"));
        assert!(LanePattern::parse("no group").is_err());
        assert!(LanePattern::parse("(unclosed").is_err());
    }

    #[test]
    fn a_lane_group_splits_back_into_its_group_and_lane() {
        let id = lane_group("orders", "ppe");
        assert_eq!(id, "orders;lane=ppe");
        assert_eq!(split_group(&id), ("orders", Some("ppe")));
        assert_eq!(split_group("orders"), ("orders", None));
        assert_eq!(split_group(";lane=x"), (";lane=x", None));
    }

    #[test]
    fn a_lane_consumer_sees_its_lane_only() {
        let ppe = LaneFilter::only("ppe");
        assert_eq!(ppe.judge(&summary(&[Some("ppe")])), Verdict::All);
        assert_eq!(ppe.judge(&summary(&[None, Some("boe")])), Verdict::None);
        assert_eq!(ppe.judge(&summary(&[None, Some("ppe")])), Verdict::Some);
        assert!(ppe.matches(Some(b"ppe")));
        assert!(!ppe.matches(Some(b"boe")) && !ppe.matches(None));
    }

    #[test]
    fn a_base_consumer_sees_the_base_and_the_lanes_it_stands_in_for() {
        let everything = LaneFilter::base_without([]);
        assert!(everything.passes_everything());
        let no_ppe = LaneFilter::base_without(["ppe"]);
        assert!(!no_ppe.passes_everything());
        assert_eq!(no_ppe.judge(&summary(&[None, Some("boe")])), Verdict::All);
        assert_eq!(no_ppe.judge(&summary(&[Some("ppe")])), Verdict::None);
        assert_eq!(no_ppe.judge(&summary(&[None, Some("ppe")])), Verdict::Some);
        assert!(no_ppe.matches(None) && no_ppe.matches(Some(b"boe")));
        assert!(!no_ppe.matches(Some(b"ppe")));
        let base_only = LaneFilter::Base(Excluded::Every);
        assert_eq!(base_only.judge(&summary(&[None])), Verdict::All);
        assert_eq!(base_only.judge(&summary(&[Some("boe")])), Verdict::None);
        assert_eq!(
            base_only.judge(&summary(&[None, Some("boe")])),
            Verdict::Some
        );
        assert!(base_only.matches(None) && !base_only.matches(Some(b"boe")));
    }
}
