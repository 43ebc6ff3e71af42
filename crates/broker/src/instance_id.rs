//! The data directory's instance id (`<data dir>/instance`): drawn at its first start
//! and kept. A broker registers it with its lease, so that its own restart replaces
//! its old lease at once, while another process claiming the same node id (another
//! data directory, another host) is refused while that lease is live.

use std::path::Path;

use uuid::Uuid;

use crate::broker_error::BrokerError;
use crate::store_binding::{record_id, recorded_id};

const FILE: &str = "instance";

/// The instance id of `data_dir`, drawn and recorded if it has none yet.
pub(crate) fn of(data_dir: &Path) -> Result<Uuid, BrokerError> {
    if let Some(recorded) = recorded_id(data_dir, FILE)? {
        return Ok(recorded);
    }
    let drawn = Uuid::new_v4();
    record_id(data_dir, FILE, drawn)?;
    Ok(drawn)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn a_data_directory_keeps_its_instance_id() {
        let dir = tempfile::tempdir().unwrap();
        let first = super::of(dir.path()).unwrap();
        assert_eq!(super::of(dir.path()).unwrap(), first);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(super::of(other.path()).unwrap(), first);
    }
}
