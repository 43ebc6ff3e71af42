//! One broker per data directory: an exclusive `flock` on `<data dir>/lock`, held while
//! the broker runs. The operating system releases it when the process ends, however
//! it ends (`kill -9` included), so a stale lock never blocks a restart.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

use crate::broker_error::BrokerError;

const LOCK_FILE: &str = "lock";

/// The held lock; released when dropped.
#[derive(Debug)]
pub(crate) struct DataDirLock {
    _file: File,
}

impl DataDirLock {
    /// Takes the lock of `dir` (created if missing), or says which directory is in use.
    pub(crate) fn acquire(dir: &Path) -> Result<DataDirLock, BrokerError> {
        let failed = |source: std::io::Error| BrokerError::DataDir {
            path: dir.to_path_buf(),
            source,
        };
        if dir.exists() && !dir.is_dir() {
            return Err(failed(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "it is a file, not a directory: give --data-dir a directory (it is created if missing)",
            )));
        }
        std::fs::create_dir_all(dir).map_err(failed)?;
        let path: PathBuf = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(failed)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(BrokerError::DataDirInUse {
                    path: dir.to_path_buf(),
                });
            }
            Err(errno) => return Err(failed(errno.into())),
        }
        // For people looking: which process holds it.
        file.set_len(0).map_err(failed)?;
        writeln!(file, "{}", std::process::id()).map_err(failed)?;
        Ok(DataDirLock { _file: file })
    }
}
