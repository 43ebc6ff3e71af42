//! ApiVersions (key 18): the APIs and versions this broker implements, from the
//! handlers' own declarations.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, ResponseKind};

use super::api::ApiDecl;
use crate::errors::code;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ApiVersions,
    min: 0,
    max: 4,
};

fn api_keys(apis: &[ApiDecl]) -> Vec<ApiVersion> {
    apis.iter()
        .map(|api| {
            ApiVersion::default()
                .with_api_key(api.key as i16)
                .with_min_version(api.min)
                .with_max_version(api.max)
        })
        .collect()
}

/// The answer: every API of `apis` (the broker's table) with its versions.
pub(crate) fn handle(apis: &[ApiDecl]) -> ResponseKind {
    ResponseKind::ApiVersions(ApiVersionsResponse::default().with_api_keys(api_keys(apis)))
}

/// The answer to an ApiVersions of a version Spool does not read.
pub(crate) fn unsupported_version(apis: &[ApiDecl]) -> ResponseKind {
    ResponseKind::ApiVersions(
        ApiVersionsResponse::default()
            .with_error_code(code::UNSUPPORTED_VERSION)
            .with_api_keys(api_keys(apis)),
    )
}
