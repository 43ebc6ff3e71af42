//! Where the broker's settings come from, from lowest to highest precedence: the
//! defaults, the config file (`--config`, `SPOOL_CONFIG`), `SPOOL_*` environment
//! variables, then flags. Every value is checked before the broker starts; a bad one
//! stops it with a message naming the setting and what it accepts.

use std::net::SocketAddr;
use std::path::PathBuf;

use spool_broker::{BrokerConfig, MetadataUrl, StorageUrl};

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServeArgs {
    /// A TOML file of settings (see docs/configuration.md).
    #[arg(long, env = "SPOOL_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:9092].
    #[arg(long, env = "SPOOL_LISTEN")]
    listen: Option<SocketAddr>,
    /// Address (host:port) that clients are told to connect to [default: the listen address].
    #[arg(long, env = "SPOOL_ADVERTISE")]
    advertise: Option<String>,
    /// Directory holding the partition data [default: data].
    #[arg(long, env = "SPOOL_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Where the metadata lives: sqlite://PATH or postgres://user:pass@host:port/db
    /// [default: sqlite://DATA_DIR/metadata.db].
    #[arg(long, env = "SPOOL_METADATA_URL")]
    metadata_url: Option<String>,
    /// Where partition data lives: s3://bucket/prefix (also gs://, az://, memory://)
    /// for shared storage, the data directory then being a cache [default: the data
    /// directory].
    #[arg(long, env = "SPOOL_STORAGE_URL")]
    storage_url: Option<String>,
    /// Address of the HTTP admin listener (health, /metrics, REST API, web console),
    /// or `off` [default: 127.0.0.1:9644].
    #[arg(long, env = "SPOOL_ADMIN_LISTEN")]
    admin_listen: Option<String>,
    /// This broker's node id [default: 1].
    #[arg(long, env = "SPOOL_NODE_ID")]
    node_id: Option<i32>,
    /// A SCRAM user to create at start if it has no credential, as NAME:PASSWORD (both
    /// SCRAM-SHA-256 and SCRAM-SHA-512); for the first user of a SASL listener.
    #[arg(long, env = "SPOOL_BOOTSTRAP_USER", value_name = "NAME:PASSWORD")]
    bootstrap_user: Option<String>,
    /// A broker setting by its Kafka name, e.g. `--set auto.create.topics.enable=false`
    /// (repeatable). Each also reads `SPOOL_<NAME>` (dots as underscores, upper case).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

/// Resolves the broker's configuration from defaults, file, environment and flags.
pub(crate) fn resolve(args: &ServeArgs) -> Result<BrokerConfig, String> {
    let mut config = BrokerConfig::default();
    let file = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
            let table: toml::Table = text
                .parse()
                .map_err(|e| format!("config file {} is not valid TOML: {e}", path.display()))?;
            Some((path.display().to_string(), table))
        }
        None => None,
    };
    if let Some((path, table)) = &file {
        apply_file(&mut config, path, table)?;
    }
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(advertise) = &args.advertise {
        config.advertise = Some(advertise.clone());
    }
    if let Some(data_dir) = &args.data_dir {
        config.data_dir = data_dir.clone();
    }
    if let Some(url) = &args.storage_url {
        config.storage.url =
            Some(StorageUrl::parse(url).map_err(|e| format!("--storage-url {e}"))?);
    }
    if let Some(url) = &args.metadata_url {
        config.metadata_url =
            Some(MetadataUrl::parse(url).map_err(|e| format!("--metadata-url {e}"))?);
    }
    if let Some(node_id) = args.node_id {
        config.node_id = node_id;
    }
    if let Some(user) = &args.bootstrap_user {
        let (name, password) = user
            .split_once(':')
            .filter(|(name, password)| !name.is_empty() && !password.is_empty())
            .ok_or("--bootstrap-user: expected NAME:PASSWORD")?;
        config.security.bootstrap_user = Some((name.to_owned(), password.to_owned()));
    }
    if let Some(address) = &args.admin_listen {
        config
            .set("admin.listen", address)
            .map_err(|e| format!("--admin-listen {e}"))?;
    }
    for key in spool_broker::setting_names() {
        let variable = format!("SPOOL_{}", key.replace('.', "_").to_uppercase());
        if let Ok(value) = std::env::var(&variable) {
            config
                .set(key, &value)
                .map_err(|e| format!("{variable}: {e}"))?;
        }
    }
    for setting in &args.settings {
        let (key, value) = setting
            .split_once('=')
            .ok_or_else(|| format!("--set {setting}: expected KEY=VALUE"))?;
        config
            .set(key, value)
            .map_err(|e| format!("--set {key}: {e}"))?;
    }
    Ok(config)
}

/// Top-level keys `listen`, `advertise`, `data_dir`, `node_id`, a `[metadata]` table
/// with `url`, a `[storage]` table with `url` and the `storage.*` settings without
/// their prefix (`flush.ms = 50`), and a `[broker]` table of settings by their Kafka
/// names.
fn apply_file(config: &mut BrokerConfig, path: &str, table: &toml::Table) -> Result<(), String> {
    for (key, value) in table {
        let text = || match value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let bad = |expected: &str| format!("{path}: {key} = {value}: expected {expected}");
        match key.as_str() {
            "listen" => config.listen = text().parse().map_err(|_| bad("host:port"))?,
            "advertise" => config.advertise = Some(text()),
            "data_dir" => config.data_dir = PathBuf::from(text()),
            "node_id" => config.node_id = text().parse().map_err(|_| bad("a number"))?,
            "metadata" => {
                let metadata = value.as_table().ok_or_else(|| bad("a table with url"))?;
                for (name, setting) in metadata {
                    let url = match (name.as_str(), setting.as_str()) {
                        ("url", Some(url)) => url,
                        _ => {
                            return Err(format!(
                                "{path}: [metadata] {name}: expected url = \"...\""
                            ));
                        }
                    };
                    config.metadata_url = Some(
                        MetadataUrl::parse(url)
                            .map_err(|e| format!("{path}: [metadata] url: {e}"))?,
                    );
                }
            }
            "storage" => {
                let storage = value.as_table().ok_or_else(|| bad("a table of settings"))?;
                for (name, setting) in flattened(storage) {
                    match (name.as_str(), &setting) {
                        ("url", toml::Value::String(url)) => {
                            config.storage.url = Some(
                                StorageUrl::parse(url)
                                    .map_err(|e| format!("{path}: [storage] url: {e}"))?,
                            );
                        }
                        _ => {
                            let text = match setting {
                                toml::Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            config
                                .set(&format!("storage.{name}"), &text)
                                .map_err(|e| format!("{path}: [storage] {name}: {e}"))?;
                        }
                    }
                }
            }
            "broker" => {
                let broker = value.as_table().ok_or_else(|| bad("a table of settings"))?;
                for (name, setting) in broker {
                    let setting = match setting {
                        toml::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    config
                        .set(name, &setting)
                        .map_err(|e| format!("{path}: [broker] {name}: {e}"))?;
                }
            }
            _ => return Err(format!("{path}: unknown key {key}")),
        }
    }
    Ok(())
}

/// A table's settings by dotted name: `flush.ms = 50` is TOML for `flush = { ms = 50 }`.
fn flattened(table: &toml::Table) -> Vec<(String, toml::Value)> {
    let mut settings = Vec::new();
    for (name, value) in table {
        match value {
            toml::Value::Table(inner) => settings.extend(
                flattened(inner)
                    .into_iter()
                    .map(|(rest, value)| (format!("{name}.{rest}"), value)),
            ),
            other => settings.push((name.clone(), other.clone())),
        }
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(config: Option<PathBuf>, settings: &[&str]) -> ServeArgs {
        ServeArgs {
            config,
            listen: None,
            admin_listen: None,
            advertise: None,
            bootstrap_user: None,
            data_dir: None,
            metadata_url: None,
            storage_url: None,
            node_id: None,
            settings: settings.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn file_then_flags_with_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.toml");
        std::fs::write(
            &path,
            "listen = \"127.0.0.1:19999\"\ndata_dir = \"/var/lib/spool\"\n[broker]\n\"num.partitions\" = 3\n\"auto.create.topics.enable\" = false\n",
        )
        .unwrap();
        let config = resolve(&args(Some(path.clone()), &["num.partitions=5"])).unwrap();
        assert_eq!(config.listen.port(), 19999);
        assert_eq!(config.data_dir, PathBuf::from("/var/lib/spool"));
        assert!(!config.auto_create_topics);
        assert_eq!(config.default_partitions, 5, "flags win over the file");

        std::fs::write(&path, "[broker]\n\"num.partitions\" = 0\n").unwrap();
        let error = resolve(&args(Some(path.clone()), &[])).unwrap_err();
        assert!(
            error.contains("num.partitions") && error.contains("at least 1"),
            "{error}"
        );
        std::fs::write(&path, "metadata.url = \"postgres://spool@db/spool\"\n").unwrap();
        assert_eq!(
            resolve(&args(Some(path.clone()), &[]))
                .unwrap()
                .metadata_url,
            Some(MetadataUrl::Postgres(
                "postgres://spool@db/spool".to_owned()
            ))
        );
        std::fs::write(&path, "metadata.url = \"mysql://db\"\n").unwrap();
        assert!(
            resolve(&args(Some(path.clone()), &[]))
                .unwrap_err()
                .contains("[metadata] url")
        );
        std::fs::write(
            &path,
            "[storage]\nurl = \"s3://bucket/spool\"\nflush.ms = 20\n\"uploads.in.flight\" = 8\n",
        )
        .unwrap();
        let config = resolve(&args(Some(path.clone()), &["storage.flush.bytes=1048576"])).unwrap();
        assert_eq!(
            config.storage.url,
            Some(StorageUrl::S3 {
                bucket: "bucket".to_owned(),
                prefix: "spool".to_owned()
            })
        );
        assert_eq!(config.storage.flush.as_millis(), 20);
        assert_eq!(config.storage.uploads_in_flight, 8);
        assert_eq!(config.storage.flush_bytes, 1 << 20);
        std::fs::write(&path, "[storage]\nflush.ms = 0\n").unwrap();
        let error = resolve(&args(Some(path.clone()), &[])).unwrap_err();
        assert!(
            error.contains("[storage] flush.ms") && error.contains("1 to 10000"),
            "{error}"
        );
        std::fs::write(&path, "colour = \"blue\"\n").unwrap();
        assert!(
            resolve(&args(Some(path), &[]))
                .unwrap_err()
                .contains("unknown key colour")
        );
        assert!(
            resolve(&args(None, &["no.such=1"]))
                .unwrap_err()
                .contains("unknown setting")
        );
    }
}
