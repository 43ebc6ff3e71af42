//! Iceberg's file access over an `object_store` store (S3, GCS, Azure, memory): the
//! store the broker already uses for partition data, so that tables need no second
//! storage client. Iceberg 0.10 reads and writes files through its `Storage` trait
//! and ships only local and in-memory ones (its S3 support is built on another
//! crate), hence this adapter. Locations are URLs under the store's root
//! (`s3://bucket/…`); a file is written as a multipart upload once it outgrows one
//! part, so a large file is never held whole in memory.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use iceberg::io::{
    FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage, StorageConfig,
    StorageFactory,
};
use iceberg::{Error, ErrorKind, Result};
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

/// Files in an object store, by URL under `root` (`s3://bucket`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectStorage {
    root: String,
    /// Not carried over a serialization (Iceberg's traits ask for one; Spool never
    /// serializes a storage): a deserialized copy fails every operation.
    #[serde(skip)]
    store: Option<Arc<dyn ObjectStore>>,
}

impl ObjectStorage {
    /// Files of `store`, whose objects are at URLs `root/…` (`s3://bucket`).
    pub fn new(root: &str, store: Arc<dyn ObjectStore>) -> ObjectStorage {
        ObjectStorage {
            root: root.trim_end_matches('/').to_owned(),
            store: Some(store),
        }
    }

    fn store(&self) -> Result<&Arc<dyn ObjectStore>> {
        self.store.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Unexpected,
                "an object storage copied without its store",
            )
        })
    }

    /// The object of a location URL.
    fn path(&self, location: &str) -> Result<Path> {
        let relative = location
            .strip_prefix(&self.root)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::DataInvalid,
                    format!("{location} is not under {}", self.root),
                )
            })?;
        Path::parse(relative).map_err(|e| failed(location, e))
    }
}

fn failed(location: &str, error: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Unexpected, format!("{location}: {error}"))
}

#[async_trait::async_trait]
#[typetag::serde(name = "spool-object-storage")]
impl Storage for ObjectStorage {
    async fn exists(&self, location: &str) -> Result<bool> {
        match self.store()?.head(&self.path(location)?).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(error) => Err(failed(location, error)),
        }
    }

    async fn metadata(&self, location: &str) -> Result<FileMetadata> {
        let meta = self
            .store()?
            .head(&self.path(location)?)
            .await
            .map_err(|e| failed(location, e))?;
        Ok(FileMetadata { size: meta.size })
    }

    async fn read(&self, location: &str) -> Result<Bytes> {
        let got = self
            .store()?
            .get(&self.path(location)?)
            .await
            .map_err(|e| failed(location, e))?;
        got.bytes().await.map_err(|e| failed(location, e))
    }

    async fn reader(&self, location: &str) -> Result<Box<dyn FileRead>> {
        Ok(Box::new(ObjectRead {
            store: self.store()?.clone(),
            path: self.path(location)?,
            location: location.to_owned(),
        }))
    }

    async fn write(&self, location: &str, bytes: Bytes) -> Result<()> {
        self.store()?
            .put(&self.path(location)?, PutPayload::from(bytes))
            .await
            .map_err(|e| failed(location, e))?;
        Ok(())
    }

    async fn writer(&self, location: &str) -> Result<Box<dyn FileWrite>> {
        Ok(Box::new(ObjectWrite {
            writer: Some(BufWriter::new(self.store()?.clone(), self.path(location)?)),
            location: location.to_owned(),
        }))
    }

    async fn delete(&self, location: &str) -> Result<()> {
        match self.store()?.delete(&self.path(location)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(failed(location, error)),
        }
    }

    async fn delete_prefix(&self, location: &str) -> Result<()> {
        let store = self.store()?.clone();
        let prefix = self.path(location)?;
        let mut listed = store.list(Some(&prefix));
        while let Some(meta) = listed.next().await {
            let meta = meta.map_err(|e| failed(location, e))?;
            match store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(error) => return Err(failed(location, error)),
            }
        }
        Ok(())
    }

    async fn delete_stream(&self, mut locations: BoxStream<'static, String>) -> Result<()> {
        while let Some(location) = locations.next().await {
            self.delete(&location).await?;
        }
        Ok(())
    }

    fn new_input(&self, location: &str) -> Result<InputFile> {
        Ok(InputFile::new(Arc::new(self.clone()), location.to_owned()))
    }

    fn new_output(&self, location: &str) -> Result<OutputFile> {
        Ok(OutputFile::new(Arc::new(self.clone()), location.to_owned()))
    }
}

/// Ranges of one object.
struct ObjectRead {
    store: Arc<dyn ObjectStore>,
    path: Path,
    location: String,
}

#[async_trait::async_trait]
impl FileRead for ObjectRead {
    async fn read(&self, range: Range<u64>) -> Result<Bytes> {
        self.store
            .get_range(&self.path, range)
            .await
            .map_err(|e| failed(&self.location, e))
    }
}

/// An object being written: parts uploaded as they fill, completed at close.
struct ObjectWrite {
    writer: Option<BufWriter>,
    location: String,
}

#[async_trait::async_trait]
impl FileWrite for ObjectWrite {
    async fn write(&mut self, bytes: Bytes) -> Result<()> {
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| failed(&self.location, "written after it was closed"))?;
        writer
            .put(bytes)
            .await
            .map_err(|e| failed(&self.location, e))
    }

    async fn close(&mut self) -> Result<()> {
        let mut writer = self
            .writer
            .take()
            .ok_or_else(|| failed(&self.location, "closed twice"))?;
        writer
            .shutdown()
            .await
            .map_err(|e| failed(&self.location, e))
    }
}

/// Builds the one [`ObjectStorage`] for every table of the catalogue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ObjectStorageFactory {
    pub(crate) storage: ObjectStorage,
}

#[typetag::serde(name = "spool-object-storage-factory")]
impl StorageFactory for ObjectStorageFactory {
    fn build(&self, _config: &StorageConfig) -> Result<Arc<dyn Storage>> {
        Ok(Arc::new(self.storage.clone()))
    }
}
