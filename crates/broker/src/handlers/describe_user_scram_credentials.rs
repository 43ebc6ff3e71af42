//! DescribeUserScramCredentials (key 50, KIP-554): each user's SCRAM mechanisms and
//! iteration counts, never salts or keys. All users for a null or empty list; a user asked for
//! with no credential gets `RESOURCE_NOT_FOUND`, one asked for twice
//! `DUPLICATE_RESOURCE`.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    ApiKey, DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DescribeUserScramCredentials,
    min: 0,
    max: 0,
};

pub(crate) async fn handle(
    request: DescribeUserScramCredentialsRequest,
    _context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let shared = Arc::clone(shared);
    let listed = match shared.metadata().credential_list().await {
        Ok(listed) => listed,
        Err(error) => {
            return ResponseKind::DescribeUserScramCredentials(
                DescribeUserScramCredentialsResponse::default()
                    .with_error_code(code::UNKNOWN_SERVER_ERROR)
                    .with_error_message(Some(StrBytes::from_string(error.to_string()))),
            );
        }
    };
    let mut by_user: BTreeMap<String, Vec<CredentialInfo>> = BTreeMap::new();
    for (user, mechanism, iterations) in listed {
        by_user.entry(user).or_default().push(
            CredentialInfo::default()
                .with_mechanism(mechanism)
                .with_iterations(iterations),
        );
    }
    let result = |user: &str, infos: Vec<CredentialInfo>| {
        DescribeUserScramCredentialsResult::default()
            .with_user(StrBytes::from_string(user.to_owned()))
            .with_credential_infos(infos)
    };
    let results = match request.users.filter(|users| !users.is_empty()) {
        None => by_user
            .into_iter()
            .map(|(user, infos)| result(&user, infos))
            .collect(),
        Some(asked) => {
            let mut times: BTreeMap<String, usize> = BTreeMap::new();
            for user in &asked {
                *times.entry(user.name.to_string()).or_default() += 1;
            }
            let mut answered = std::collections::HashSet::new();
            asked
                .iter()
                .map(|user| user.name.to_string())
                // Each user once, in the order first named.
                .filter(|user| answered.insert(user.clone()))
                .map(|user| {
                    let refused = |error: i16, message: String| {
                        result(&user, Vec::new())
                            .with_error_code(error)
                            .with_error_message(Some(StrBytes::from_string(message)))
                    };
                    match by_user.get(&user) {
                        _ if times.get(&user).is_some_and(|n| *n > 1) => refused(
                            code::DUPLICATE_RESOURCE,
                            format!("user {user} is asked for twice"),
                        ),
                        Some(infos) => result(&user, infos.clone()),
                        None => refused(
                            code::RESOURCE_NOT_FOUND,
                            format!("user {user} has no SCRAM credential"),
                        ),
                    }
                })
                .collect()
        }
    };
    ResponseKind::DescribeUserScramCredentials(
        DescribeUserScramCredentialsResponse::default().with_results(results),
    )
}
