//! The REST API under `/api`: what the console shows, for scripts too. Every error
//! is JSON: `{"error": "<Kafka's error name>", "message": "..."}`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::{
    AdminApi, AdminState, ApiError, ConfigChanges, Encoding, MessageQuery, MessageStart,
    MirrorFailover, NewMirror, NewTopic, NewTxnChecker, OffsetReset,
};

/// The most messages one page returns.
pub(crate) const MAX_MESSAGES: usize = 1_000;

/// Messages a page returns when the request does not say.
const DEFAULT_MESSAGES: usize = 50;

pub(crate) fn routes() -> axum::Router<Arc<AdminState>> {
    axum::Router::new()
        .route("/cluster", get(cluster))
        .route("/topics", get(topics).post(create_topic))
        .route("/topics/{topic}", get(topic).delete(delete_topic))
        .route(
            "/topics/{topic}/configs",
            get(topic_configs).patch(alter_configs),
        )
        .route("/topics/{topic}/partitions", get(partitions))
        .route("/topics/{topic}/messages", get(find_messages))
        .route(
            "/topics/{topic}/partitions/{partition}/messages",
            get(messages),
        )
        .route("/groups", get(groups))
        .route("/groups/{group}", get(group).delete(delete_group))
        .route(
            "/groups/{group}/offsets",
            axum::routing::post(reset_group_offsets),
        )
        .route("/txn-checkers", get(txn_checkers).post(put_txn_checker))
        .route(
            "/txn-checkers/{prefix}",
            axum::routing::delete(remove_txn_checker),
        )
        .route("/schemas/subjects", get(schema_subjects))
        .route(
            "/schemas/subjects/{subject}/versions/{version}",
            get(schema_version),
        )
        .route("/mirrors", get(mirrors).post(create_mirror))
        .route("/mirrors/{name}", get(mirror).delete(delete_mirror))
        .route("/mirrors/{name}/pause", axum::routing::post(pause_mirror))
        .route("/mirrors/{name}/resume", axum::routing::post(resume_mirror))
        .route(
            "/mirrors/{name}/failover",
            axum::routing::post(failover_mirror),
        )
}

type Reply = Result<Response, ApiError>;

/// The broker's API, or "starting".
fn api(state: &AdminState) -> Result<&dyn AdminApi, ApiError> {
    state
        .source()
        .map(|source| source.api())
        .ok_or_else(ApiError::starting)
}

fn json<T: serde::Serialize>(value: T) -> Reply {
    Ok(Json(value).into_response())
}

async fn cluster(State(state): State<Arc<AdminState>>) -> Reply {
    json(api(&state)?.cluster().await?)
}

async fn topics(State(state): State<Arc<AdminState>>) -> Reply {
    json(api(&state)?.topics().await?)
}

async fn topic(State(state): State<Arc<AdminState>>, Path(name): Path<String>) -> Reply {
    json(api(&state)?.topic(&name).await?)
}

async fn topic_configs(State(state): State<Arc<AdminState>>, Path(name): Path<String>) -> Reply {
    json(api(&state)?.topic(&name).await?.configs)
}

async fn partitions(State(state): State<Arc<AdminState>>, Path(name): Path<String>) -> Reply {
    json(api(&state)?.topic(&name).await?.partitions)
}

async fn create_topic(
    State(state): State<Arc<AdminState>>,
    body: Result<Json<NewTopic>, axum::extract::rejection::JsonRejection>,
) -> Reply {
    let Json(request) = body.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let created = api(&state)?.create_topic(request).await?;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

async fn delete_topic(State(state): State<Arc<AdminState>>, Path(name): Path<String>) -> Reply {
    api(&state)?.delete_topic(&name).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn delete_group(State(state): State<Arc<AdminState>>, Path(id): Path<String>) -> Reply {
    api(&state)?.delete_group(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn reset_group_offsets(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
    body: Result<Json<OffsetReset>, axum::extract::rejection::JsonRejection>,
) -> Reply {
    let Json(reset) = body.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    json(api(&state)?.reset_group_offsets(&id, reset).await?)
}

async fn alter_configs(
    State(state): State<Arc<AdminState>>,
    Path(name): Path<String>,
    body: Result<Json<ConfigChanges>, axum::extract::rejection::JsonRejection>,
) -> Reply {
    let Json(changes) = body.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    json(api(&state)?.alter_topic_configs(&name, changes).await?)
}

async fn messages(
    State(state): State<Arc<AdminState>>,
    Path((topic, partition)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Reply {
    let query = message_query(topic, &partition, &params)?;
    json(api(&state)?.messages(query).await?)
}

async fn find_messages(
    State(state): State<Arc<AdminState>>,
    Path(topic): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Reply {
    let search = crate::search::search_query(topic, &params)?;
    json(api(&state)?.find_messages(search).await?)
}

/// Reads `?offset=N` or `?timestamp=MS` (or neither: the newest), `limit` (at most
/// [`MAX_MESSAGES`]) and `encoding` (`auto` or `base64`).
pub(crate) fn message_query(
    topic: String,
    partition: &str,
    params: &HashMap<String, String>,
) -> Result<MessageQuery, ApiError> {
    let number = |name: &str| -> Result<Option<i64>, ApiError> {
        params
            .get(name)
            .map(|text| {
                text.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!("{name}={text}: expected a whole number"))
                })
            })
            .transpose()
    };
    let partition = partition
        .parse::<i32>()
        .ok()
        .filter(|p| *p >= 0)
        .ok_or_else(|| {
            ApiError::bad_request(format!("partition {partition}: expected a number from 0"))
        })?;
    let start = match (number("offset")?, number("timestamp")?) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request("give offset or timestamp, not both"));
        }
        (Some(offset), None) if offset < 0 => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "OFFSET_OUT_OF_RANGE",
                format!("offset {offset}: offsets start at 0"),
            ));
        }
        (Some(offset), None) => MessageStart::Offset(offset),
        (None, Some(timestamp)) => MessageStart::Timestamp(timestamp),
        (None, None) => MessageStart::Newest,
    };
    let limit = match number("limit")? {
        None => DEFAULT_MESSAGES,
        Some(limit) => usize::try_from(limit)
            .ok()
            .filter(|limit| (1..=MAX_MESSAGES).contains(limit))
            .ok_or_else(|| {
                ApiError::bad_request(format!("limit={limit}: expected 1 to {MAX_MESSAGES}"))
            })?,
    };
    let encoding = match params.get("encoding").map(String::as_str) {
        None | Some("auto") => Encoding::Auto,
        Some("base64") => Encoding::Base64,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "encoding={other}: expected auto or base64"
            )));
        }
    };
    Ok(MessageQuery {
        topic,
        partition,
        start,
        limit,
        encoding,
    })
}

async fn groups(State(state): State<Arc<AdminState>>) -> Reply {
    json(api(&state)?.groups().await?)
}

async fn group(State(state): State<Arc<AdminState>>, Path(id): Path<String>) -> Reply {
    json(api(&state)?.group(&id).await?)
}

async fn txn_checkers(State(state): State<Arc<AdminState>>) -> Reply {
    json(api(&state)?.txn_checkers().await?)
}

async fn put_txn_checker(
    State(state): State<Arc<AdminState>>,
    body: Result<Json<NewTxnChecker>, axum::extract::rejection::JsonRejection>,
) -> Reply {
    let Json(checker) = body.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let added = api(&state)?.put_txn_checker(checker).await?;
    Ok((StatusCode::CREATED, Json(added)).into_response())
}

async fn remove_txn_checker(
    State(state): State<Arc<AdminState>>,
    Path(prefix): Path<String>,
) -> Reply {
    api(&state)?.remove_txn_checker(&prefix).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn mirrors(State(state): State<Arc<AdminState>>) -> Reply {
    json(api(&state)?.mirrors().await?)
}

async fn mirror(State(state): State<Arc<AdminState>>, Path(name): Path<String>) -> Reply {
    json(api(&state)?.mirror(&name).await?)
}

async fn create_mirror(
    State(state): State<Arc<AdminState>>,
    body: Result<Json<NewMirror>, axum::extract::rejection::JsonRejection>,
) -> Reply {
    let Json(mirror) = body.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let created = api(&state)?.create_mirror(mirror).await?;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

async fn delete_mirror(State(state): State<Arc<AdminState>>, Path(name): Path<String>) -> Reply {
    api(&state)?.delete_mirror(&name).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn pause_mirror(State(state): State<Arc<AdminState>>, Path(name): Path<String>) -> Reply {
    json(api(&state)?.pause_mirror(&name, true).await?)
}

async fn resume_mirror(State(state): State<Arc<AdminState>>, Path(name): Path<String>) -> Reply {
    json(api(&state)?.pause_mirror(&name, false).await?)
}

async fn failover_mirror(
    State(state): State<Arc<AdminState>>,
    Path(name): Path<String>,
    body: Option<Json<MirrorFailover>>,
) -> Reply {
    let failover = body.map(|Json(failover)| failover).unwrap_or_default();
    json(api(&state)?.failover_mirror(&name, failover).await?)
}

async fn schema_subjects(State(state): State<Arc<AdminState>>) -> Reply {
    json(api(&state)?.schema_subjects().await?)
}

async fn schema_version(
    State(state): State<Arc<AdminState>>,
    Path((subject, version)): Path<(String, String)>,
) -> Reply {
    json(api(&state)?.schema_version(&subject, &version).await?)
}
