//! AlterUserScramCredentials (key 51, KIP-554): sets and removes SCRAM credentials.
//! The client salts the password (`salted_password`); the broker derives StoredKey
//! and ServerKey and keeps those. One result per user named: `UNSUPPORTED_SASL_MECHANISM`
//! for a mechanism other than SCRAM-SHA-256/512, `UNACCEPTABLE_CREDENTIAL` for
//! iterations outside 4,096–16,384, an empty name or salt, `DUPLICATE_RESOURCE` when a
//! user's mechanism is named twice, `RESOURCE_NOT_FOUND` for a deletion of nothing.
//!
//! Needs ALTER on the cluster once the authorizer is on (`handlers/authorize.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;
use spool_sasl::scram::{Credential, MAX_ITERATIONS, MIN_ITERATIONS, Mechanism};
use spool_security::record_of;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::AlterUserScramCredentials,
    min: 0,
    max: 0,
};

/// One change a request asks for.
enum Change {
    Delete,
    Upsert(Credential),
}

pub(crate) async fn handle(
    request: AlterUserScramCredentialsRequest,
    _context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let shared = Arc::clone(shared);
    // Every user named, in order, with the first error found for it.
    let mut errors: BTreeMap<String, Option<(i16, String)>> = BTreeMap::new();
    let mut changes: Vec<(String, Mechanism, Change)> = Vec::new();
    let mut seen: std::collections::HashSet<(String, i8)> = std::collections::HashSet::new();
    let named = request
        .deletions
        .iter()
        .map(|d| (d.name.to_string(), d.mechanism, None))
        .chain(request.upsertions.iter().map(|u| {
            (
                u.name.to_string(),
                u.mechanism,
                Some((u.iterations, u.salt.to_vec(), u.salted_password.to_vec())),
            )
        }));
    for (user, mechanism_code, upsert) in named {
        let slot = errors.entry(user.clone()).or_insert(None);
        let error = if !seen.insert((user.clone(), mechanism_code)) {
            Some((
                code::DUPLICATE_RESOURCE,
                format!("{user}'s mechanism {mechanism_code} is named twice"),
            ))
        } else if user.is_empty() {
            Some((
                code::UNACCEPTABLE_CREDENTIAL,
                "the user name is empty".to_owned(),
            ))
        } else {
            None
        };
        if let Some(error) = error {
            slot.get_or_insert(error);
            continue;
        }
        let Some(mechanism) = Mechanism::from_code(mechanism_code) else {
            slot.get_or_insert((
                code::UNSUPPORTED_SASL_MECHANISM,
                format!("mechanism {mechanism_code}: 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512)"),
            ));
            continue;
        };
        let change = match upsert {
            None => Change::Delete,
            Some((iterations, salt, salted)) => {
                let iterations = u32::try_from(iterations).unwrap_or(0);
                if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
                    slot.get_or_insert((
                        code::UNACCEPTABLE_CREDENTIAL,
                        format!("iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}"),
                    ));
                    continue;
                }
                if salt.is_empty() || salted.is_empty() {
                    slot.get_or_insert((
                        code::UNACCEPTABLE_CREDENTIAL,
                        "the salt and the salted password must not be empty".to_owned(),
                    ));
                    continue;
                }
                Change::Upsert(Credential::from_salted_password(
                    mechanism, salt, iterations, &salted,
                ))
            }
        };
        changes.push((user, mechanism, change));
    }
    // A user with any error has none of its changes made.
    for (user, mechanism, change) in changes {
        if errors.get(&user).is_some_and(Option::is_some) {
            continue;
        }
        let outcome = match change {
            Change::Delete => match shared
                .metadata()
                .delete_credential(&user, mechanism.code())
                .await
            {
                Ok(true) => Ok(()),
                Ok(false) => Err((
                    code::RESOURCE_NOT_FOUND,
                    format!("{user} has no {} credential", mechanism.sasl_name()),
                )),
                Err(error) => Err((code::UNKNOWN_SERVER_ERROR, error.to_string())),
            },
            Change::Upsert(credential) => shared
                .metadata()
                .upsert_credential(&record_of(&user, &credential))
                .await
                .map_err(|error| (code::UNKNOWN_SERVER_ERROR, error.to_string())),
        };
        if let Err(error) = outcome {
            errors.insert(user.clone(), Some(error));
        } else {
            tracing::info!(
                user,
                mechanism = mechanism.sasl_name(),
                "SCRAM credential changed"
            );
        }
    }
    let results = errors
        .into_iter()
        .map(|(user, error)| {
            let result =
                AlterUserScramCredentialsResult::default().with_user(StrBytes::from_string(user));
            match error {
                Some((error, message)) => result
                    .with_error_code(error)
                    .with_error_message(Some(StrBytes::from_string(message))),
                None => result,
            }
        })
        .collect();
    ResponseKind::AlterUserScramCredentials(
        AlterUserScramCredentialsResponse::default().with_results(results),
    )
}
