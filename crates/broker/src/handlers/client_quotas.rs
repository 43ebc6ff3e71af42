//! DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), KIP-546: the quotas of
//! users, client ids and users' client ids (`None` names the default), kept in the
//! metadata store and in force on every broker of a cluster before the answer.
//! Describing needs DESCRIBE_CONFIGS on the cluster, altering ALTER_CONFIGS.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, ResponseKind, alter_client_quotas_response,
    describe_client_quotas_response,
};
use kafka_protocol::protocol::StrBytes;
use spool_metadata::{EntityPart, QuotaEntity};

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;
use spool_security::acl::Operation;
use spool_security::quotas::KEYS;

pub(crate) const DESCRIBE_API: ApiDecl = ApiDecl {
    key: ApiKey::DescribeClientQuotas,
    min: 0,
    max: 1,
};
pub(crate) const ALTER_API: ApiDecl = ApiDecl {
    key: ApiKey::AlterClientQuotas,
    min: 0,
    max: 1,
};

const USER: &str = "user";
const CLIENT_ID: &str = "client-id";

/// Filter match types.
const EXACT: i8 = 0;
const DEFAULT: i8 = 1;
const SPECIFIED: i8 = 2;

/// An entity from its (type, name) components; `None` for a type other than user and
/// client-id, or one named twice.
fn entity_of<'a>(
    components: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> Option<QuotaEntity> {
    let mut entity = QuotaEntity {
        user: EntityPart::Absent,
        client_id: EntityPart::Absent,
    };
    for (kind, name) in components {
        let part = match kind {
            USER => &mut entity.user,
            CLIENT_ID => &mut entity.client_id,
            _ => return None,
        };
        if *part != EntityPart::Absent {
            return None;
        }
        *part = name.map_or(EntityPart::Default, |n| EntityPart::Named(n.to_owned()));
    }
    (entity.user != EntityPart::Absent || entity.client_id != EntityPart::Absent).then_some(entity)
}

/// An entity's (type, name) components, user first.
fn components_of(entity: &QuotaEntity) -> Vec<(&'static str, Option<String>)> {
    [(USER, &entity.user), (CLIENT_ID, &entity.client_id)]
        .into_iter()
        .filter_map(|(kind, part)| match part {
            EntityPart::Absent => None,
            EntityPart::Default => Some((kind, None)),
            EntityPart::Named(name) => Some((kind, Some(name.clone()))),
        })
        .collect()
}

pub(crate) async fn describe(
    request: DescribeClientQuotasRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let request = &request;
    let failed = |error: i16, message: String| {
        ResponseKind::DescribeClientQuotas(
            DescribeClientQuotasResponse::default()
                .with_error_code(error)
                .with_error_message(Some(StrBytes::from_string(message)))
                .with_entries(None),
        )
    };
    if !context.access.cluster(Operation::DescribeConfigs) {
        return failed(
            code::CLUSTER_AUTHORIZATION_FAILED,
            format!("{} may not describe quotas", context.access.principal()),
        );
    }
    let mut seen = HashSet::new();
    for component in &request.components {
        let kind = component.entity_type.as_str();
        if (kind != USER && kind != CLIENT_ID) || !seen.insert(kind) {
            return failed(
                code::INVALID_REQUEST,
                format!("entity type {kind:?}: user or client-id, once each"),
            );
        }
        if !matches!(component.match_type, EXACT | DEFAULT | SPECIFIED) {
            return failed(code::INVALID_REQUEST, "unknown match type".to_owned());
        }
    }
    let part_matches = |part: &EntityPart, kind: &str| {
        let Some(component) = request
            .components
            .iter()
            .find(|c| c.entity_type.as_str() == kind)
        else {
            // Not filtered on: any, unless strict asks for entities of the named
            // types only.
            return !request.strict || *part == EntityPart::Absent;
        };
        match (component.match_type, part) {
            (EXACT, EntityPart::Named(name)) => component
                ._match
                .as_ref()
                .is_some_and(|m| m.as_str() == name),
            (DEFAULT, EntityPart::Default) => true,
            (SPECIFIED, EntityPart::Default | EntityPart::Named(_)) => true,
            _ => false,
        }
    };
    let index = shared.quotas().current();
    let mut entries: BTreeMap<&QuotaEntity, Vec<describe_client_quotas_response::ValueData>> =
        BTreeMap::new();
    for record in index.records() {
        if part_matches(&record.entity.user, USER)
            && part_matches(&record.entity.client_id, CLIENT_ID)
        {
            entries.entry(&record.entity).or_default().push(
                describe_client_quotas_response::ValueData::default()
                    .with_key(StrBytes::from_string(record.key.clone()))
                    .with_value(record.value),
            );
        }
    }
    let entries = entries
        .into_iter()
        .map(|(entity, values)| {
            let entity = components_of(entity)
                .into_iter()
                .map(|(kind, name)| {
                    describe_client_quotas_response::EntityData::default()
                        .with_entity_type(StrBytes::from_static_str(kind))
                        .with_entity_name(name.map(StrBytes::from_string))
                })
                .collect();
            describe_client_quotas_response::EntryData::default()
                .with_entity(entity)
                .with_values(values)
        })
        .collect();
    ResponseKind::DescribeClientQuotas(
        DescribeClientQuotasResponse::default().with_entries(Some(entries)),
    )
}

pub(crate) async fn alter(
    request: AlterClientQuotasRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let shared = Arc::clone(shared);
    let allowed = context.access.cluster(Operation::AlterConfigs);
    let mut changes = Vec::new();
    let mut results = Vec::with_capacity(request.entries.len());
    for entry in &request.entries {
        let entity = entry
            .entity
            .iter()
            .map(|e| {
                alter_client_quotas_response::EntityData::default()
                    .with_entity_type(e.entity_type.clone())
                    .with_entity_name(e.entity_name.clone())
            })
            .collect();
        let result = alter_client_quotas_response::EntryData::default().with_entity(entity);
        let parsed = entity_of(entry.entity.iter().map(|e| {
            (
                e.entity_type.as_str(),
                e.entity_name.as_ref().map(|n| n.as_str()),
            )
        }));
        let refusal = if !allowed {
            Some((
                code::CLUSTER_AUTHORIZATION_FAILED,
                format!("{} may not alter quotas", context.access.principal()),
            ))
        } else if parsed.is_none() {
            Some((
                code::INVALID_REQUEST,
                "an entity is a user, a client-id, or both, each once".to_owned(),
            ))
        } else {
            entry.ops.iter().find_map(|op| {
                if !KEYS.contains(&op.key.as_str()) {
                    Some((
                        code::INVALID_REQUEST,
                        format!(
                            "{}: Spool's quotas are {}",
                            op.key.as_str(),
                            KEYS.join(", ")
                        ),
                    ))
                } else if !(op.remove || op.value.is_finite() && op.value > 0.0) {
                    Some((
                        code::INVALID_REQUEST,
                        format!("{}: must be above 0", op.key.as_str()),
                    ))
                } else {
                    None
                }
            })
        };
        match (refusal, parsed) {
            (Some((error, message)), _) => results.push(
                result
                    .with_error_code(error)
                    .with_error_message(Some(StrBytes::from_string(message))),
            ),
            (None, Some(entity)) => {
                for op in &entry.ops {
                    let value = (!op.remove).then_some(op.value);
                    changes.push((entity.clone(), op.key.to_string(), value));
                }
                results.push(result);
            }
            (None, None) => results.push(result.with_error_code(code::INVALID_REQUEST)),
        }
    }
    if !request.validate_only && !changes.is_empty() {
        if let Err(error) = shared.metadata().alter_quotas(&changes).await {
            tracing::warn!(%error, "cannot store quotas");
            for result in results.iter_mut().filter(|r| r.error_code == code::NONE) {
                result.error_code = code::UNKNOWN_SERVER_ERROR;
                result.error_message = Some(StrBytes::from_string(error.to_string()));
            }
        } else {
            {
                // Under the admin lock, as following the store loads them (see
                // `create_acls::applied`).
                let _admin = shared.changes().lock().await;
                match shared.metadata().quotas().await {
                    Ok(quotas) => shared.quotas().load(quotas),
                    Err(error) => {
                        tracing::warn!(%error, "cannot read the quotas again; the next poll does");
                    }
                }
            }
            crate::cluster::wait_for_followers(&shared).await;
        }
    }
    ResponseKind::AlterClientQuotas(AlterClientQuotasResponse::default().with_entries(results))
}
