//! The data directory's instance id (`<data dir>/instance`): drawn at its first start
//! and kept. A broker registers it with its lease, so that its own restart replaces
//! its old lease at once, while another process claiming the same node id (another
//! data directory, another host) is refused while that lease is live.

use std::path::Path;

use uuid::Uuid;

use crate::server::BrokerError;
use crate::store_binding::write_durably;

const FILE: &str = "instance";

/// The instance id of `data_dir`, drawn and recorded if it has none yet.
pub(crate) fn of(data_dir: &Path) -> Result<Uuid, BrokerError> {
    let path = data_dir.join(FILE);
    let io = |source| BrokerError::DataDir {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Uuid::try_parse(text.trim())
            .map_err(|error| io(std::io::Error::new(std::io::ErrorKind::InvalidData, error))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let drawn = Uuid::new_v4();
            write_durably(data_dir, FILE, &drawn.to_string()).map_err(io)?;
            Ok(drawn)
        }
        Err(error) => Err(io(error)),
    }
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
