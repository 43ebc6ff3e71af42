//! `--storage-url`: which object store, where. Credentials, region and endpoint come
//! from the standard environment variables `object_store` reads (`AWS_ENDPOINT_URL`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`; the
//! `GOOGLE_*` and `AZURE_*` ones likewise).

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::memory::InMemory;
use object_store::path::Path;

use crate::{ObjectStorage, ObjectsError};

/// Settings of an S3 store that override the environment's (`storage.s3.*`).
/// Credentials are not among them: they come from the environment (or the instance's
/// role) only, so that no settings listing can show them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3Options {
    /// The endpoint of an S3-compatible server (`AWS_ENDPOINT_URL`).
    pub endpoint: Option<String>,
    /// `AWS_REGION`.
    pub region: Option<String>,
    /// Whether plain HTTP is allowed (`AWS_ALLOW_HTTP`).
    pub allow_http: Option<bool>,
}

/// Where partition data lives in shared-storage mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageUrl {
    /// `s3://bucket/prefix`: S3 or any S3-compatible server.
    S3 { bucket: String, prefix: String },
    /// `gs://bucket/prefix`: Google Cloud Storage.
    Gcs { bucket: String, prefix: String },
    /// `az://container/prefix`: Azure Blob Storage.
    Azure { container: String, prefix: String },
    /// `memory://`: in this process's memory, for tests (gone when it exits).
    Memory,
}

impl StorageUrl {
    /// Parses a storage URL, refusing other schemes and missing bucket names.
    pub fn parse(url: &str) -> Result<StorageUrl, ObjectsError> {
        let bad = |reason: &str| ObjectsError::BadUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("expected s3://, gs://, az:// or memory://"))?;
        if scheme == "memory" {
            return Ok(StorageUrl::Memory);
        }
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("the bucket (or container) name is missing"));
        }
        let (bucket, prefix) = (bucket.to_owned(), prefix.trim_matches('/').to_owned());
        match scheme {
            "s3" => Ok(StorageUrl::S3 { bucket, prefix }),
            "gs" => Ok(StorageUrl::Gcs { bucket, prefix }),
            "az" => Ok(StorageUrl::Azure {
                container: bucket,
                prefix,
            }),
            _ => Err(bad("expected s3://, gs://, az:// or memory://")),
        }
    }

    /// Builds the store the URL names, configured from the environment.
    pub fn open(&self) -> Result<ObjectStorage, ObjectsError> {
        self.open_with(&S3Options::default())
    }

    /// [`StorageUrl::open`], with `s3` overriding what the environment says of an S3
    /// store (the other stores take theirs from the environment only).
    pub fn open_with(&self, s3: &S3Options) -> Result<ObjectStorage, ObjectsError> {
        install_crypto();
        let failed = |source| ObjectsError::Store {
            url: self.to_string(),
            source,
        };
        let (store, prefix): (Arc<dyn object_store::ObjectStore>, &str) = match self {
            StorageUrl::S3 { bucket, prefix } => {
                let mut builder = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_retry(retries());
                if let Some(endpoint) = &s3.endpoint {
                    builder = builder.with_endpoint(endpoint);
                }
                if let Some(region) = &s3.region {
                    builder = builder.with_region(region);
                }
                if let Some(allow_http) = s3.allow_http {
                    builder = builder.with_allow_http(allow_http);
                }
                (Arc::new(builder.build().map_err(failed)?), prefix)
            }
            StorageUrl::Gcs { bucket, prefix } => (
                Arc::new(
                    GoogleCloudStorageBuilder::from_env()
                        .with_bucket_name(bucket)
                        .with_retry(retries())
                        .build()
                        .map_err(failed)?,
                ),
                prefix,
            ),
            StorageUrl::Azure { container, prefix } => (
                Arc::new(
                    MicrosoftAzureBuilder::from_env()
                        .with_container_name(container)
                        .with_retry(retries())
                        .build()
                        .map_err(failed)?,
                ),
                prefix,
            ),
            StorageUrl::Memory => (Arc::new(InMemory::new()), ""),
        };
        let prefix = Path::parse(prefix).map_err(|error| ObjectsError::BadUrl {
            url: self.to_string(),
            reason: error.to_string(),
        })?;
        Ok(ObjectStorage::new(store, prefix))
    }
}

/// Puts ring in place as the process's TLS crypto provider, if none is yet: reqwest
/// is built without one of its own (see Cargo.toml), and building a client without
/// one panics.
fn install_crypto() {
    // An error means a provider is installed already: that one serves.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// How long a request is retried before its failure is final: 10 s, not
/// `object_store`'s 3 minutes, so that a producer waiting with `acks=all` (30 s by
/// default) hears why its write failed, and readiness turns, rather than timing out.
const RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(10);

fn retries() -> object_store::RetryConfig {
    object_store::RetryConfig {
        retry_timeout: RETRY_FOR,
        ..object_store::RetryConfig::default()
    }
}

impl std::fmt::Display for StorageUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageUrl::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
            StorageUrl::Gcs { bucket, prefix } => write!(f, "gs://{bucket}/{prefix}"),
            StorageUrl::Azure { container, prefix } => write!(f, "az://{container}/{prefix}"),
            StorageUrl::Memory => write!(f, "memory://"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_scheme_a_bucket_and_a_prefix() {
        assert_eq!(
            StorageUrl::parse("s3://spool-data/cluster-a/").unwrap(),
            StorageUrl::S3 {
                bucket: "spool-data".to_owned(),
                prefix: "cluster-a".to_owned()
            }
        );
        assert_eq!(
            StorageUrl::parse("gs://b").unwrap(),
            StorageUrl::Gcs {
                bucket: "b".to_owned(),
                prefix: String::new()
            }
        );
        assert!(matches!(
            StorageUrl::parse("az://c/p/q").unwrap(),
            StorageUrl::Azure { prefix, .. } if prefix == "p/q"
        ));
        assert_eq!(StorageUrl::parse("memory://").unwrap(), StorageUrl::Memory);
        for bad in ["s3://", "ftp://x/y", "spool-data", "s3:///prefix"] {
            assert!(StorageUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
