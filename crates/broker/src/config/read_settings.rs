//! Where reads are served in a cluster (`broker.rack`, `broker.roles`,
//! `broker.read.preferred`, docs/cluster.md#racks-readers-and-preferred-replicas).
//! Rows of the broker's one settings table (`super::all_settings`).

use super::{Setting, expected};

/// This broker's place in the cluster and what it sends readers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadConfig {
    /// `broker.rack` (Kafka's name): the rack or zone the broker is in; `None` for
    /// none.
    pub rack: Option<String>,
    /// `broker.roles=reader`: the broker leads no partition and coordinates no
    /// group; it serves reads and Metadata only.
    pub reader: bool,
    /// `broker.read.preferred` (and Kafka's `replica.selector.class`): whether a
    /// leader sends a consumer that names a rack it is not in to a broker of that
    /// rack (KIP-392). On by default: `ReadConfig::default` is off only as the
    /// field's zero; `BrokerConfig::default` turns it on.
    pub preferred_replicas: bool,
}

/// Kafka's rack-aware selector, which `replica.selector.class` may name.
const RACK_AWARE_SELECTOR: &str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";
/// Kafka's default: every read from the leader.
const LEADER_SELECTOR: &str = "org.apache.kafka.common.replica.LeaderSelector";

pub(super) const READ_SETTINGS: [Setting; 4] = [
    Setting {
        name: "broker.rack",
        dynamic: false,
        get: |c| c.reads.rack.clone().unwrap_or_default(),
        set: |c, v| {
            if v.chars().any(char::is_whitespace) || v.len() > 255 {
                return Err(expected(v, "a rack name without spaces, 255 bytes at most"));
            }
            c.reads.rack = (!v.is_empty()).then(|| v.to_owned());
            Ok(())
        },
    },
    Setting {
        name: "broker.roles",
        dynamic: false,
        get: |c| if c.reads.reader { "reader" } else { "writer" }.to_owned(),
        set: |c, v| {
            c.reads.reader = match v {
                "writer" => false,
                "reader" => true,
                _ => return Err(expected(v, "writer or reader")),
            };
            Ok(())
        },
    },
    Setting {
        name: "broker.read.preferred",
        dynamic: false,
        get: |c| c.reads.preferred_replicas.to_string(),
        set: |c, v| {
            c.reads.preferred_replicas = v.parse().map_err(|_| expected(v, "true or false"))?;
            Ok(())
        },
    },
    Setting {
        name: "replica.selector.class",
        dynamic: false,
        get: |c| {
            if c.reads.preferred_replicas {
                RACK_AWARE_SELECTOR
            } else {
                LEADER_SELECTOR
            }
            .to_owned()
        },
        set: |c, v| {
            c.reads.preferred_replicas = match v {
                RACK_AWARE_SELECTOR => true,
                "" | LEADER_SELECTOR => false,
                _ => {
                    return Err(expected(
                        v,
                        &format!("{RACK_AWARE_SELECTOR} or {LEADER_SELECTOR}"),
                    ));
                }
            };
            Ok(())
        },
    },
];
