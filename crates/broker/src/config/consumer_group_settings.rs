//! The settings of the consumer protocol's groups (KIP-848), by Kafka's names
//! (`group.consumer.*`). Rows of the broker's one settings table
//! (`super::all_settings`); checked together at start
//! (`ConsumerGroupConfig::check`).

use spool_coordinator::consumer::Assignor;

use super::{Setting, at_least, expected, millis};

pub(super) const CONSUMER_GROUP_SETTINGS: [Setting; 8] = [
    Setting {
        name: "group.consumer.session.timeout.ms",
        dynamic: false,
        get: |c| c.groups.consumer.session_timeout.as_millis().to_string(),
        set: |c, v| {
            c.groups.consumer.session_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.consumer.min.session.timeout.ms",
        dynamic: false,
        get: |c| {
            c.groups
                .consumer
                .min_session_timeout
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.groups.consumer.min_session_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.consumer.max.session.timeout.ms",
        dynamic: false,
        get: |c| {
            c.groups
                .consumer
                .max_session_timeout
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.groups.consumer.max_session_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.consumer.heartbeat.interval.ms",
        dynamic: false,
        get: |c| c.groups.consumer.heartbeat_interval.as_millis().to_string(),
        set: |c, v| {
            c.groups.consumer.heartbeat_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.consumer.min.heartbeat.interval.ms",
        dynamic: false,
        get: |c| {
            c.groups
                .consumer
                .min_heartbeat_interval
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.groups.consumer.min_heartbeat_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.consumer.max.heartbeat.interval.ms",
        dynamic: false,
        get: |c| {
            c.groups
                .consumer
                .max_heartbeat_interval
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.groups.consumer.max_heartbeat_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.consumer.max.size",
        dynamic: false,
        get: |c| match c.groups.consumer.max_size {
            usize::MAX => i32::MAX.to_string(),
            size => size.to_string(),
        },
        set: |c, v| {
            let size = at_least(v, 1)?;
            c.groups.consumer.max_size = if size >= i32::MAX as u64 {
                usize::MAX
            } else {
                usize::try_from(size).map_err(|_| expected(v, "a smaller number"))?
            };
            Ok(())
        },
    },
    Setting {
        name: "group.consumer.assignors",
        dynamic: false,
        get: |c| {
            let names: Vec<&str> = c
                .groups
                .consumer
                .assignors
                .iter()
                .map(|a| a.name())
                .collect();
            names.join(",")
        },
        set: |c, v| {
            let assignors = v
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(|name| Assignor::named(name).ok_or_else(|| expected(name, "uniform or range")))
                .collect::<Result<Vec<_>, _>>()?;
            if assignors.is_empty() {
                return Err(expected(v, "uniform, range or both"));
            }
            c.groups.consumer.assignors = assignors;
            Ok(())
        },
    },
];
