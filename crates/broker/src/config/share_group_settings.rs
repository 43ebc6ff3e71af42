//! The settings of share groups (KIP-932), by Kafka's names (`group.share.*`, and
//! KIP-1191's `errors.deadletterqueue.topic.name.prefix`): every group's defaults and
//! the bounds of its own configs. Rows of the broker's one settings table
//! (`super::all_settings`); checked together at start (`ShareBrokerSettings::check`).

use super::{Setting, at_least, expected, millis};

pub(super) const SHARE_GROUP_SETTINGS: [Setting; 16] = [
    Setting {
        name: "group.share.record.lock.duration.ms",
        dynamic: false,
        get: |c| c.share_groups.record_lock_duration.as_millis().to_string(),
        set: |c, v| {
            c.share_groups.record_lock_duration = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.min.record.lock.duration.ms",
        dynamic: false,
        get: |c| {
            c.share_groups
                .min_record_lock_duration
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.share_groups.min_record_lock_duration = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.max.record.lock.duration.ms",
        dynamic: false,
        get: |c| {
            c.share_groups
                .max_record_lock_duration
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.share_groups.max_record_lock_duration = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.delivery.count.limit",
        dynamic: false,
        get: |c| c.share_groups.delivery_count_limit.to_string(),
        set: |c, v| {
            c.share_groups.delivery_count_limit =
                u16::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.min.delivery.count.limit",
        dynamic: false,
        get: |c| c.share_groups.min_delivery_count_limit.to_string(),
        set: |c, v| {
            c.share_groups.min_delivery_count_limit =
                u16::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.max.delivery.count.limit",
        dynamic: false,
        get: |c| c.share_groups.max_delivery_count_limit.to_string(),
        set: |c, v| {
            c.share_groups.max_delivery_count_limit =
                u16::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.partition.max.record.locks",
        dynamic: false,
        get: |c| c.share_groups.partition_max_record_locks.to_string(),
        set: |c, v| {
            c.share_groups.partition_max_record_locks =
                u32::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.session.timeout.ms",
        dynamic: false,
        get: |c| c.share_groups.session_timeout.as_millis().to_string(),
        set: |c, v| {
            c.share_groups.session_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.min.session.timeout.ms",
        dynamic: false,
        get: |c| c.share_groups.min_session_timeout.as_millis().to_string(),
        set: |c, v| {
            c.share_groups.min_session_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.max.session.timeout.ms",
        dynamic: false,
        get: |c| c.share_groups.max_session_timeout.as_millis().to_string(),
        set: |c, v| {
            c.share_groups.max_session_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.heartbeat.interval.ms",
        dynamic: false,
        get: |c| c.share_groups.heartbeat_interval.as_millis().to_string(),
        set: |c, v| {
            c.share_groups.heartbeat_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.min.heartbeat.interval.ms",
        dynamic: false,
        get: |c| {
            c.share_groups
                .min_heartbeat_interval
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.share_groups.min_heartbeat_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.max.heartbeat.interval.ms",
        dynamic: false,
        get: |c| {
            c.share_groups
                .max_heartbeat_interval
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.share_groups.max_heartbeat_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.max.size",
        dynamic: false,
        get: |c| c.share_groups.max_size.to_string(),
        set: |c, v| {
            c.share_groups.max_size =
                usize::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "group.share.max.share.sessions",
        dynamic: false,
        get: |c| c.share_groups.max_share_sessions.to_string(),
        set: |c, v| {
            c.share_groups.max_share_sessions =
                usize::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "errors.deadletterqueue.topic.name.prefix",
        dynamic: false,
        get: |c| c.share_groups.dead_letter_prefix.clone(),
        set: |c, v| {
            c.share_groups.dead_letter_prefix = v.to_owned();
            Ok(())
        },
    },
];
