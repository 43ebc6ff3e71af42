//! `--metadata-url`: which backend, where.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{MetadataStore, PostgresStore, Result, SqliteStore};

/// Where the metadata lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataUrl {
    /// `sqlite://PATH`: a database file (created if missing).
    Sqlite(PathBuf),
    /// `postgres://user:pass@host:port/db` (or `postgresql://`): a database that
    /// exists; its tables are created and migrated at start.
    Postgres(String),
}

impl MetadataUrl {
    /// The embedded default: `metadata.db` in the data directory.
    #[must_use]
    pub fn in_data_dir(data_dir: &Path) -> MetadataUrl {
        MetadataUrl::Sqlite(data_dir.join("metadata.db"))
    }

    /// Parses a URL, refusing schemes other than `sqlite` and `postgres`.
    pub fn parse(url: &str) -> std::result::Result<MetadataUrl, String> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(format!("{url}: expected sqlite://PATH"));
            }
            return Ok(MetadataUrl::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(MetadataUrl::Postgres(url.to_owned()));
        }
        Err(format!(
            "{url}: expected sqlite://PATH or postgres://user:password@host:port/database"
        ))
    }

    /// The URL without its password, for logs and messages.
    #[must_use]
    pub fn redacted(&self) -> String {
        match self {
            MetadataUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
            MetadataUrl::Postgres(url) => redact_password(url),
        }
    }
}

/// Opens the store a URL names, applying its migrations.
pub async fn open(url: &MetadataUrl) -> Result<Arc<dyn MetadataStore>> {
    Ok(match url {
        MetadataUrl::Sqlite(path) => Arc::new(SqliteStore::open(path).await?),
        MetadataUrl::Postgres(url) => Arc::new(PostgresStore::connect(url).await?),
    })
}

fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((credentials, host)) = rest.rsplit_once('@') else {
        return url.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_and_passwords_kept_out_of_messages() {
        assert_eq!(
            MetadataUrl::parse("sqlite:///var/lib/spool/m.db"),
            Ok(MetadataUrl::Sqlite(PathBuf::from("/var/lib/spool/m.db")))
        );
        let postgres = MetadataUrl::parse("postgres://spool:secret@db:5432/spool").unwrap();
        assert_eq!(postgres.redacted(), "postgres://spool:***@db:5432/spool");
        assert!(MetadataUrl::parse("postgresql://db/spool").is_ok());
        assert!(MetadataUrl::parse("mysql://db/spool").is_err());
        assert!(MetadataUrl::parse("sqlite://").is_err());
    }
}
