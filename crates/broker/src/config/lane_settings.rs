//! Lanes (`lane.*`, docs/lanes.md). Rows of the broker's one settings table
//! (`super::all_settings`); both change at run time.

use spool_views::lanes::LanePattern;

use super::{Setting, expected};

/// How clients join lanes and what base consumers see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneConfig {
    /// `lane.client.id.pattern`: where a client's lane is in its `client.id` (the
    /// first capture group).
    pub pattern: LanePattern,
    /// `lane.fallback.enable`: a base consumer also gets a lane's records while its
    /// group has no live member in that lane.
    pub fallback: bool,
}

impl Default for LaneConfig {
    fn default() -> Self {
        LaneConfig {
            pattern: LanePattern::default(),
            fallback: true,
        }
    }
}

pub(super) const LANE_SETTINGS: [Setting; 2] = [
    Setting {
        name: "lane.client.id.pattern",
        dynamic: true,
        get: |c| c.lanes.pattern.as_str().to_owned(),
        set: |c, v| {
            c.lanes.pattern = LanePattern::parse(v).map_err(|error| {
                expected(
                    v,
                    &format!("a regular expression whose first group is the lane ({error})"),
                )
            })?;
            Ok(())
        },
    },
    Setting {
        name: "lane.fallback.enable",
        dynamic: true,
        get: |c| c.lanes.fallback.to_string(),
        set: |c, v| {
            c.lanes.fallback = v.parse().map_err(|_| expected(v, "true or false"))?;
            Ok(())
        },
    },
];
