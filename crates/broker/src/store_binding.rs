//! Which metadata store a data directory belongs to. The directory records the store's
//! id (`<data dir>/metadata-store`) at its first start and refuses any other store
//! after: a mistyped `--metadata-url`, or a switch of backend, would otherwise find
//! none of the directory's topics and remove their data as owned by no topic.

use std::io::Write;
use std::path::Path;

use spool_metadata::MetadataUrl;
use uuid::Uuid;

use crate::server::BrokerError;

const FILE: &str = "metadata-store";

/// Records `store` as the data directory's store, or checks that it is the one
/// recorded.
pub(crate) fn check(data_dir: &Path, store: Uuid, url: &MetadataUrl) -> Result<(), BrokerError> {
    let path = data_dir.join(FILE);
    let io = |source| BrokerError::DataDir {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let recorded = Uuid::try_parse(text.trim())
                .map_err(|error| io(std::io::Error::new(std::io::ErrorKind::InvalidData, error)))?;
            if recorded == store {
                Ok(())
            } else {
                Err(BrokerError::WrongMetadataStore {
                    path: data_dir.to_path_buf(),
                    recorded,
                    found: store,
                    url: url.redacted(),
                })
            }
        }
        // Written whole and synced before the directory is used with the store.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            write_durably(data_dir, FILE, &store.to_string()).map_err(io)
        }
        Err(error) => Err(io(error)),
    }
}

/// Writes `text` and a newline to `<dir>/<name>` whole (through a temporary file and
/// a rename) and syncs the file and the directory.
pub(crate) fn write_durably(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut file = std::fs::File::create(&tmp)?;
    writeln!(file, "{text}")?;
    file.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir).and_then(|dir| dir.sync_all())
}
