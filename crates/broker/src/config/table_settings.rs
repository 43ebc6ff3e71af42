//! Where table topics' tables are catalogued (`table.catalog.*`): by default Iceberg's
//! SQL catalogue in the metadata store; with `table.catalog.url`, an Iceberg REST
//! catalogue. Rows of the broker's one settings table (`super::all_settings`).

use std::path::PathBuf;

use super::{Setting, expected};

/// The tables' catalogue, when it is not the metadata store's.
#[derive(Debug, Clone, Default)]
pub struct TableCatalogConfig {
    /// `table.catalog.url`: an Iceberg REST catalogue (`http://…` or `https://…`);
    /// `None` for the SQL catalogue in the metadata store.
    pub url: Option<String>,
    /// `table.catalog.warehouse`: the warehouse named to the REST catalogue; `None`
    /// for where the tables' files go without one (`DATA_DIR/tables`, or
    /// `tables/` under the storage URL).
    pub warehouse: Option<String>,
    /// `table.catalog.token.file`: a file holding the bearer token sent to it.
    pub token_file: Option<PathBuf>,
    /// `table.catalog.credential.file`: a file holding an OAuth2 client credential
    /// (`client_id:client_secret`) exchanged at the catalogue for tokens.
    pub credential_file: Option<PathBuf>,
}

impl TableCatalogConfig {
    /// Checked at start: the other settings only with a URL, at most one login, its
    /// file readable and not empty.
    pub(crate) fn check(&self) -> Result<(), String> {
        let Some(url) = &self.url else {
            if self.warehouse.is_some()
                || self.token_file.is_some()
                || self.credential_file.is_some()
            {
                return Err("table.catalog.* settings need table.catalog.url".to_owned());
            }
            return Ok(());
        };
        if url.contains('@') {
            return Err(
                "table.catalog.url cannot hold a login: use table.catalog.token.file or \
                 table.catalog.credential.file"
                    .to_owned(),
            );
        }
        if self.token_file.is_some() && self.credential_file.is_some() {
            return Err(
                "table.catalog.token.file and table.catalog.credential.file: one or the other"
                    .to_owned(),
            );
        }
        self.token()?;
        self.credential()?;
        Ok(())
    }

    /// The bearer token, read from its file now (a rotated file is read again when
    /// the catalogue is opened again).
    pub(crate) fn token(&self) -> Result<Option<String>, String> {
        secret(self.token_file.as_deref())
    }

    /// The OAuth2 client credential, read from its file now.
    pub(crate) fn credential(&self) -> Result<Option<String>, String> {
        secret(self.credential_file.as_deref())
    }
}

/// The first line of `file`, when one is named: it must not be empty.
fn secret(file: Option<&std::path::Path>) -> Result<Option<String>, String> {
    let Some(file) = file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    match text.lines().next().map(str::trim) {
        Some(line) if !line.is_empty() => Ok(Some(line.to_owned())),
        _ => Err(format!("{}: empty", file.display())),
    }
}

fn optional(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_owned())
}

fn shown(value: Option<&str>) -> String {
    value.unwrap_or_default().to_owned()
}

pub(super) const TABLE_SETTINGS: [Setting; 4] = [
    Setting {
        name: "table.catalog.url",
        dynamic: false,
        get: |c| shown(c.table_catalog.url.as_deref()),
        set: |c, v| {
            if !v.is_empty() && !v.starts_with("http://") && !v.starts_with("https://") {
                return Err(expected(v, "an http:// or https:// URL, or nothing"));
            }
            c.table_catalog.url = optional(v.trim_end_matches('/'));
            Ok(())
        },
    },
    Setting {
        name: "table.catalog.warehouse",
        dynamic: false,
        get: |c| shown(c.table_catalog.warehouse.as_deref()),
        set: |c, v| {
            c.table_catalog.warehouse = optional(v);
            Ok(())
        },
    },
    Setting {
        name: "table.catalog.token.file",
        dynamic: false,
        get: |c| shown(c.table_catalog.token_file.as_ref().and_then(|p| p.to_str())),
        set: |c, v| {
            c.table_catalog.token_file = optional(v).map(PathBuf::from);
            Ok(())
        },
    },
    Setting {
        name: "table.catalog.credential.file",
        dynamic: false,
        get: |c| {
            shown(
                c.table_catalog
                    .credential_file
                    .as_ref()
                    .and_then(|p| p.to_str()),
            )
        },
        set: |c, v| {
            c.table_catalog.credential_file = optional(v).map(PathBuf::from);
            Ok(())
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rest_catalogue_login_is_checked_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        let empty = dir.path().join("empty");
        std::fs::write(&token, "t0ken\n").unwrap();
        std::fs::write(&empty, "\n").unwrap();
        let rest = |token_file: Option<&std::path::Path>, credential: Option<&std::path::Path>| {
            TableCatalogConfig {
                url: Some("http://catalog:8181".to_owned()),
                warehouse: None,
                token_file: token_file.map(Into::into),
                credential_file: credential.map(Into::into),
            }
        };
        assert!(TableCatalogConfig::default().check().is_ok());
        assert!(rest(None, None).check().is_ok());
        assert!(rest(Some(&token), None).check().is_ok());
        assert_eq!(
            rest(Some(&token), None).token().unwrap().as_deref(),
            Some("t0ken")
        );
        assert!(
            rest(Some(&token), Some(&token)).check().is_err(),
            "one or the other"
        );
        assert!(rest(Some(&empty), None).check().is_err(), "an empty token");
        assert!(rest(None, Some(&dir.path().join("none"))).check().is_err());
        let with_login = TableCatalogConfig {
            url: Some("http://user:pass@catalog:8181".to_owned()),
            ..TableCatalogConfig::default()
        };
        assert!(with_login.check().is_err(), "no login in the URL");
        let without_url = TableCatalogConfig {
            token_file: Some(token),
            ..TableCatalogConfig::default()
        };
        assert!(without_url.check().is_err(), "a login needs a URL");
    }
}
