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
