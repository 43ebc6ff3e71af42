//! Broker settings changed while the broker runs (AlterConfigs on a BROKER resource),
//! layered as in Kafka: a node's own override beats the cluster-wide default (resource
//! name `""`), which beats the static setting (file, `SPOOL_*`, `--set`), which beats
//! the built-in default. Overrides are kept in the metadata store, so they outlive a
//! restart, and apply at once: a new topic default reaches every topic that does not
//! set the config itself.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use crate::config::source::{
    DEFAULT_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG,
};
use spool_metadata::ConfigChange;

use crate::broker_configs::{self, KafkaBrokerConfig, UpdateMode};
use crate::config::{self, BrokerConfig};
use crate::errors::code;
use crate::partitions::log_topic;
use crate::shared::Shared;
use crate::topics::{self, AdminError};

/// The scope of cluster-wide defaults.
const CLUSTER: &str = "";

/// The static settings with the dynamic overrides on top.
#[derive(Debug)]
pub(crate) struct DynamicConfig {
    started: BrokerConfig,
    node_scope: String,
    state: RwLock<State>,
}

#[derive(Debug)]
struct State {
    /// Overrides by scope (`""` or this node's id).
    overrides: BTreeMap<String, BTreeMap<String, String>>,
    current: Arc<BrokerConfig>,
}

impl DynamicConfig {
    /// Layers the stored `overrides` over the static settings; a stored override that
    /// no longer applies (an unknown name, a bad value) is skipped with an error log.
    pub(crate) fn new(
        started: BrokerConfig,
        overrides: BTreeMap<String, BTreeMap<String, String>>,
    ) -> DynamicConfig {
        let node_scope = started.node_id.to_string();
        let overrides = usable(&node_scope, overrides);
        let current = layered(&started, &node_scope, &overrides).unwrap_or_else(|error| {
            tracing::error!(%error, "stored broker configs do not combine; ignoring them");
            started.clone()
        });
        DynamicConfig {
            started,
            node_scope,
            state: RwLock::new(State {
                overrides,
                current: Arc::new(current),
            }),
        }
    }

    /// Takes the overrides stored now (another broker sharing the store may have
    /// changed them); true if the settings in force changed.
    pub(crate) fn adopt(&self, stored: BTreeMap<String, BTreeMap<String, String>>) -> bool {
        let overrides = usable(&self.node_scope, stored);
        if overrides == self.read().overrides {
            return false;
        }
        let current = match layered(&self.started, &self.node_scope, &overrides) {
            Ok(current) => current,
            Err(error) => {
                tracing::error!(%error, "broker configs changed through another broker do not combine; keeping these");
                return false;
            }
        };
        tracing::info!(configs = ?overrides, "broker configs changed through another broker");
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        state.overrides = overrides;
        state.current = Arc::new(current);
        true
    }

    /// The settings as the broker started with them.
    pub(crate) fn started(&self) -> &BrokerConfig {
        &self.started
    }

    /// The settings in force now.
    pub(crate) fn current(&self) -> Arc<BrokerConfig> {
        self.read().current.clone()
    }

    /// The scope a BROKER resource name addresses.
    fn scope_of(&self, resource_name: &str) -> Result<String, AdminError> {
        if resource_name == CLUSTER || resource_name == self.node_scope {
            return Ok(resource_name.to_owned());
        }
        Err(AdminError {
            code: code::INVALID_REQUEST,
            message: format!(
                "this is broker {}: send broker {resource_name:?}'s configs to that broker, or use {} (this node) or \"\" (the cluster-wide default)",
                self.node_scope, self.node_scope
            ),
        })
    }

    fn overrides_of(&self, scope: &str) -> BTreeMap<String, String> {
        self.read()
            .overrides
            .get(scope)
            .cloned()
            .unwrap_or_default()
    }

    /// Kafka's config source of a setting's current value.
    pub(crate) fn source_of(&self, name: &str) -> i8 {
        if let Some((_, source)) = self.override_in_force(&self.read(), name) {
            return source;
        }
        let value = |config: &BrokerConfig| {
            config
                .settings()
                .into_iter()
                .find(|(key, _)| *key == name)
                .map(|(_, v)| v)
        };
        if value(&self.started) == value(&BrokerConfig::default()) {
            DEFAULT_CONFIG
        } else {
            STATIC_BROKER_CONFIG
        }
    }

    /// The override of `name` in force, this node's before the cluster-wide one, with
    /// its source.
    fn override_in_force(&self, state: &State, name: &str) -> Option<(String, i8)> {
        [
            (self.node_scope.as_str(), DYNAMIC_BROKER_CONFIG),
            (CLUSTER, DYNAMIC_DEFAULT_BROKER_CONFIG),
        ]
        .into_iter()
        .find_map(|(scope, source)| Some((state.overrides.get(scope)?.get(name)?.clone(), source)))
    }

    /// The configs of a BROKER resource: for this node, Spool's settings, then Kafka's
    /// other broker configs (their overrides, else Kafka's defaults); for `""`, the
    /// cluster-wide overrides only, as Kafka lists them.
    pub(crate) fn describe(&self, resource_name: &str) -> Result<Vec<BrokerEntry>, AdminError> {
        let scope = self.scope_of(resource_name)?;
        if scope == CLUSTER {
            return Ok(self
                .overrides_of(CLUSTER)
                .into_iter()
                .map(|(name, value)| {
                    let compatibility = broker_configs::compatibility(&name);
                    BrokerEntry {
                        value: Some(value),
                        read_only: false,
                        source: DYNAMIC_DEFAULT_BROKER_CONFIG,
                        ..BrokerEntry::of(name, compatibility)
                    }
                })
                .collect());
        }
        let mut entries: Vec<BrokerEntry> = self
            .current()
            .settings()
            .into_iter()
            .map(|(name, value)| BrokerEntry {
                value: Some(value),
                read_only: !config::is_dynamic(name),
                source: self.source_of(name),
                ..BrokerEntry::of(name.to_owned(), None)
            })
            .collect();
        let state = self.read();
        let kafka = broker_configs::compatibility_configs().map(|config| {
            let (value, source) = self.override_in_force(&state, config.name).map_or_else(
                || (config.default.map(str::to_owned), DEFAULT_CONFIG),
                |(value, source)| (Some(value), source),
            );
            BrokerEntry {
                value,
                read_only: config.mode == UpdateMode::ReadOnly,
                source,
                ..BrokerEntry::of(config.name.to_owned(), Some(config))
            }
        });
        entries.extend(kafka);
        Ok(entries)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One broker config as DescribeConfigs lists it.
#[derive(Debug)]
pub(crate) struct BrokerEntry {
    pub(crate) name: String,
    /// `None` for a null default, and for a secret.
    pub(crate) value: Option<String>,
    pub(crate) read_only: bool,
    pub(crate) source: i8,
    /// Kafka's broker config that Spool has no setting for, if it is one.
    pub(crate) compatibility: Option<&'static KafkaBrokerConfig>,
}

impl BrokerEntry {
    fn of(name: String, compatibility: Option<&'static KafkaBrokerConfig>) -> BrokerEntry {
        BrokerEntry {
            name,
            value: None,
            read_only: true,
            source: DEFAULT_CONFIG,
            compatibility,
        }
    }

    /// The value as described: a secret's is never shown.
    pub(crate) fn shown_value(&self) -> Option<String> {
        if self
            .compatibility
            .is_some_and(KafkaBrokerConfig::is_sensitive)
        {
            return None;
        }
        self.value.clone()
    }
}

/// The stored overrides that apply to this node (the cluster-wide ones and its own)
/// and can: a name not changeable at run time, or a bad value, is skipped with an
/// error log.
fn usable(
    node_scope: &str,
    mut overrides: BTreeMap<String, BTreeMap<String, String>>,
) -> BTreeMap<String, BTreeMap<String, String>> {
    overrides.retain(|scope, _| scope == CLUSTER || scope == node_scope);
    for (scope, settings) in &mut overrides {
        settings.retain(|name, value| {
            let usable = match broker_configs::compatibility(name) {
                Some(kafka) => changeable(kafka, scope, value).is_ok(),
                None => {
                    config::is_dynamic(name) && BrokerConfig::default().set(name, value).is_ok()
                }
            };
            if !usable {
                tracing::error!(scope, name, value, "ignoring a stored broker config");
            }
            usable
        });
    }
    overrides.retain(|_, settings| !settings.is_empty());
    overrides
}

/// Puts topics resolved under new defaults in the table, with their logs' settings.
pub(crate) fn retune(shared: &Shared, topics: Vec<topics::Topic>) {
    for topic in topics {
        if let Err(error) = shared
            .logs()
            .set_topic_config(&log_topic(topic.record.id), topic.log.clone())
        {
            tracing::warn!(topic = %topic.record.name, %error, "applying new defaults failed");
        }
        shared.topics().insert(topic);
    }
}

/// The static settings with the cluster-wide, then the node's overrides applied.
fn layered(
    started: &BrokerConfig,
    node_scope: &str,
    overrides: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<BrokerConfig, String> {
    let mut config = started.clone();
    for scope in [CLUSTER, node_scope] {
        for (name, value) in overrides.get(scope).into_iter().flatten() {
            // Kafka's configs that Spool has no setting for are only kept.
            if broker_configs::compatibility(name).is_some() {
                continue;
            }
            config
                .set(name, value)
                .map_err(|e| format!("{name}: {e}"))?;
        }
    }
    Ok(config)
}

/// Whether Kafka's broker config `kafka` may be set to `value` in `scope` while the
/// broker runs, refused as Kafka refuses it: a read-only config, or a per-broker one as
/// the cluster-wide default, with `INVALID_REQUEST`; a value of the wrong type with
/// `INVALID_CONFIG`.
fn changeable(kafka: &KafkaBrokerConfig, scope: &str, value: &str) -> Result<(), AdminError> {
    let refused = |message: String| AdminError {
        code: code::INVALID_REQUEST,
        message,
    };
    match kafka.mode {
        UpdateMode::ReadOnly => {
            return Err(refused(format!(
                "Cannot update these configs dynamically: {} (Kafka reads it only at start; Spool has no effect for it: {})",
                kafka.name,
                broker_configs::no_effect(kafka.name)
            )));
        }
        UpdateMode::PerBroker if scope == CLUSTER => {
            return Err(refused(format!(
                "Cannot update these configs at default cluster level, broker id must be specified: {}",
                kafka.name
            )));
        }
        UpdateMode::PerBroker | UpdateMode::ClusterWide => {}
    }
    kafka.check(value).map_err(|message| AdminError {
        code: code::INVALID_CONFIG,
        message,
    })
}

/// Replaces one scope's overrides with what `change` makes of them: checks that every
/// name can change at run time and every value is valid, and that every topic still
/// resolves under the new defaults; then stores them and applies them to the topics.
pub(crate) async fn change(
    shared: &Arc<Shared>,
    resource_name: &str,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AdminError>,
) -> Result<(), AdminError> {
    let dynamic = shared.dynamic();
    let scope = dynamic.scope_of(resource_name)?;
    let _admin = shared.changes().lock().await;
    let before = dynamic.overrides_of(&scope);
    let wanted = change(&before)?;
    for (name, value) in &wanted {
        if config::is_dynamic(name) {
            continue;
        }
        if let Some(kafka) = broker_configs::compatibility(name) {
            if before.get(name) != Some(value) {
                changeable(kafka, &scope, value)?;
            }
            continue;
        }
        let known = config::setting_names().any(|known| known == name);
        return Err(AdminError {
            code: if known {
                code::INVALID_REQUEST
            } else {
                code::INVALID_CONFIG
            },
            message: if known {
                format!(
                    "{name} cannot change while the broker runs: restart spool with --set {name}=..."
                )
            } else {
                format!("unknown broker config {name}")
            },
        });
    }
    let mut overrides = dynamic.read().overrides.clone();
    // As the store keeps them: a scope without overrides is no scope.
    if wanted.is_empty() {
        overrides.remove(&scope);
    } else {
        overrides.insert(scope.clone(), wanted.clone());
    }
    let next = layered(&dynamic.started, &dynamic.node_scope, &overrides).map_err(|message| {
        AdminError {
            code: code::INVALID_CONFIG,
            message,
        }
    })?;
    let mut retuned = Vec::new();
    let topic_defaults = next.topic_defaults();
    for topic in shared.topics().all() {
        let resolved =
            topics::resolve(topic.record.clone(), &topic_defaults).map_err(|e| AdminError {
                code: code::INVALID_CONFIG,
                message: format!("topic {}: {}", topic.record.name, e.0),
            })?;
        retuned.push(resolved);
    }
    if validate_only {
        return Ok(());
    }
    shared
        .metadata()
        .alter_broker_configs(&scope, &ConfigChange::between(&before, &wanted))
        .await
        .map_err(|error| AdminError {
            code: code::UNKNOWN_SERVER_ERROR,
            message: error.to_string(),
        })?;
    {
        let mut state = dynamic
            .state
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        state.overrides = overrides;
        state.current = Arc::new(next);
    }
    retune(shared, retuned);
    tracing::info!(scope, configs = ?wanted, "changed broker configs");
    Ok(())
}
