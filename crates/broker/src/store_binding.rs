//! Which metadata store a data directory belongs to. The directory records the store's
//! id (`<data dir>/metadata-store`) at its first start and refuses any other store
//! after: a mistyped `--metadata-url`, or a switch of backend, would otherwise find
//! none of the directory's topics and remove their data as owned by no topic.

use std::io::Write;
use std::path::Path;

use spool_metadata::MetadataUrl;
use uuid::Uuid;

use crate::broker_error::BrokerError;

const FILE: &str = "metadata-store";

/// Records `store` as the data directory's store, or checks that it is the one
/// recorded.
pub(crate) fn check(data_dir: &Path, store: Uuid, url: &MetadataUrl) -> Result<(), BrokerError> {
    match recorded_id(data_dir, FILE)? {
        Some(recorded) if recorded == store => Ok(()),
        Some(recorded) => Err(BrokerError::WrongMetadataStore {
            path: data_dir.to_path_buf(),
            recorded,
            found: store,
            url: url.redacted(),
        }),
        // Written whole and synced before the directory is used with the store.
        None => record_id(data_dir, FILE, store),
    }
}

/// The id recorded in `<data_dir>/<name>`; `None` when there is no such file.
pub(crate) fn recorded_id(data_dir: &Path, name: &str) -> Result<Option<Uuid>, BrokerError> {
    let path = data_dir.join(name);
    let io = |source| BrokerError::DataDir {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Uuid::try_parse(text.trim())
            .map(Some)
            .map_err(|error| io(std::io::Error::new(std::io::ErrorKind::InvalidData, error))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io(error)),
    }
}

/// Records `id` in `<data_dir>/<name>`, durably.
pub(crate) fn record_id(data_dir: &Path, name: &str, id: Uuid) -> Result<(), BrokerError> {
    write_durably(data_dir, name, &id.to_string()).map_err(|source| BrokerError::DataDir {
        path: data_dir.join(name),
        source,
    })
}

/// Writes `text` and a newline to `<dir>/<name>` whole (through a temporary file and
/// a rename) and syncs the file and the directory.
fn write_durably(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut file = std::fs::File::create(&tmp)?;
    writeln!(file, "{text}")?;
    file.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir).and_then(|dir| dir.sync_all())
}
