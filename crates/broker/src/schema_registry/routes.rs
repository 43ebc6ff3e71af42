//! Confluent's Schema Registry REST API: each route reads its path, query and JSON
//! body, asks the registry, and answers as Confluent does — the same JSON fields, the
//! media type `application/vnd.schemaregistry.v1+json`, and errors as
//! `{"error_code": …, "message": …}` with the status and code of
//! [`RegistryError`].

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use spool_schema_registry::{
    Compatibility, Imported, Mode, NewSchema, Reference, RegistryError, SchemaType, StoredSchema,
    SubjectVersion, VersionSpec,
};

use super::BrokerRegistry;

type Registry = State<Arc<BrokerRegistry>>;
type Params = Query<HashMap<String, String>>;
type Answer = Result<Response, Failure>;

/// Confluent's media type for every answer.
const MEDIA_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// The largest request body read (a schema with its references fits easily).
const MAX_BODY: usize = 8 << 20;

pub(super) fn router(registry: Arc<BrokerRegistry>) -> Router {
    Router::new()
        .route("/", get(|| async { ok(json!({})) }))
        .route("/subjects", get(subjects))
        .route("/subjects/{subject}", post(lookup).delete(delete_subject))
        .route("/subjects/{subject}/versions", get(versions).post(register))
        .route(
            "/subjects/{subject}/versions/{version}",
            get(version).delete(delete_version),
        )
        .route(
            "/subjects/{subject}/versions/{version}/schema",
            get(version_text),
        )
        .route("/schemas/ids/{id}", get(schema_by_id))
        .route("/schemas/ids/{id}/schema", get(schema_text_by_id))
        .route("/schemas/ids/{id}/subjects", get(subjects_of_id))
        .route("/schemas/ids/{id}/versions", get(versions_of_id))
        .route(
            "/schemas/types",
            get(|| async { ok(json!(["AVRO", "JSON", "PROTOBUF"])) }),
        )
        .route("/config", get(config).put(put_config))
        .route(
            "/config/{subject}",
            get(subject_config)
                .put(put_subject_config)
                .delete(delete_subject_config),
        )
        .route("/mode", get(mode).put(put_mode))
        .route(
            "/mode/{subject}",
            get(subject_mode)
                .put(put_subject_mode)
                .delete(delete_subject_mode),
        )
        .route(
            "/compatibility/subjects/{subject}/versions/{version}",
            post(check_version),
        )
        .route(
            "/compatibility/subjects/{subject}/versions",
            post(check_all),
        )
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(registry)
}

/// A refusal, answered as Confluent answers it.
#[derive(Debug)]
pub(super) struct Failure(RegistryError);

impl From<RegistryError> for Failure {
    fn from(error: RegistryError) -> Failure {
        Failure(error)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = json!({"error_code": self.0.error_code(), "message": self.0.to_string()});
        (
            status,
            [(header::CONTENT_TYPE, MEDIA_TYPE)],
            body.to_string(),
        )
            .into_response()
    }
}

fn ok(body: Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, MEDIA_TYPE)],
        body.to_string(),
    )
        .into_response()
}

/// Whether query parameter `name` is `true`.
fn flag(params: &HashMap<String, String>, name: &str) -> bool {
    params
        .get(name)
        .is_some_and(|value| value.eq_ignore_ascii_case("true"))
}

/// A schema as the clients send it (Confluent's field names).
#[derive(Debug, Deserialize)]
struct SchemaBody {
    #[serde(default)]
    schema: String,
    #[serde(rename = "schemaType")]
    schema_type: Option<String>,
    references: Option<Vec<Reference>>,
    /// IMPORT mode: the id (and version) another registry gave it.
    id: Option<i32>,
    version: Option<i32>,
}

fn new_schema(body: &[u8]) -> Result<NewSchema, Failure> {
    Ok(schema_body(body)?.0)
}

/// The schema of a request, and the id and version it is imported with, if given.
fn schema_body(body: &[u8]) -> Result<(NewSchema, Option<Imported>), Failure> {
    let body: SchemaBody = serde_json::from_slice(body)
        .map_err(|error| RegistryError::BadRequest(format!("Invalid request body: {error}")))?;
    if body.schema.trim().is_empty() {
        return Err(RegistryError::InvalidSchema("Empty schema".to_owned()).into());
    }
    let imported = match (body.id, body.version) {
        (None, None) => None,
        (Some(id), version) => Some(Imported { id, version }),
        (None, Some(_)) => {
            return Err(RegistryError::BadRequest(
                "a version is given with the schema's id (IMPORT mode)".to_owned(),
            )
            .into());
        }
    };
    let schema = NewSchema {
        schema: body.schema,
        schema_type: SchemaType::from_name(body.schema_type.as_deref())?,
        references: body.references.unwrap_or_default(),
    };
    Ok((schema, imported))
}

/// A schema's fields as Confluent writes them: `schemaType` and `references` only
/// when they say something.
fn schema_fields(schema: &StoredSchema, fields: &mut serde_json::Map<String, Value>) {
    fields.insert("schema".to_owned(), json!(schema.schema));
    if schema.schema_type != SchemaType::Avro {
        fields.insert("schemaType".to_owned(), json!(schema.schema_type.name()));
    }
    if !schema.references.is_empty() {
        fields.insert("references".to_owned(), json!(schema.references));
    }
}

fn version_json(found: &SubjectVersion) -> Value {
    let mut fields = serde_json::Map::new();
    fields.insert("subject".to_owned(), json!(found.subject));
    fields.insert("version".to_owned(), json!(found.version));
    fields.insert("id".to_owned(), json!(found.schema.id));
    schema_fields(&found.schema, &mut fields);
    Value::Object(fields)
}

/// The `format` parameter (`serialized`: a Protobuf schema's descriptor in base64).
fn format(params: &HashMap<String, String>) -> Option<&str> {
    params.get("format").map(String::as_str)
}

fn schema_id(text: &str) -> Result<i32, Failure> {
    text.parse()
        .map_err(|_| RegistryError::SchemaNotFound(text.to_owned()).into())
}

async fn subjects(State(registry): Registry, Query(params): Params) -> Answer {
    Ok(ok(json!(
        registry.subjects(flag(&params, "deleted")).await?
    )))
}

async fn register(State(registry): Registry, Path(subject): Path<String>, body: Bytes) -> Answer {
    let (new, imported) = schema_body(&body)?;
    let registered = match imported {
        Some(imported) => registry.import(&subject, &new, imported).await?,
        None => registry.register(&subject, &new).await?,
    };
    Ok(ok(version_json(&registered)))
}

async fn lookup(
    State(registry): Registry,
    Path(subject): Path<String>,
    Query(params): Params,
    body: Bytes,
) -> Answer {
    let new = new_schema(&body)?;
    let found = registry
        .lookup(&subject, &new, flag(&params, "deleted"))
        .await?;
    Ok(ok(version_json(&found)))
}

async fn versions(
    State(registry): Registry,
    Path(subject): Path<String>,
    Query(params): Params,
) -> Answer {
    Ok(ok(json!(
        registry
            .versions(&subject, flag(&params, "deleted"))
            .await?
    )))
}

/// The version a path names (`?deleted=true`: soft-deleted ones too).
async fn named_version(
    registry: &BrokerRegistry,
    subject: &str,
    version: &str,
    params: &HashMap<String, String>,
) -> Result<SubjectVersion, Failure> {
    let spec = VersionSpec::parse(version)?;
    Ok(registry
        .version(subject, spec, flag(params, "deleted"))
        .await?)
}

async fn version(
    State(registry): Registry,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
) -> Answer {
    let mut found = named_version(&registry, &subject, &version, &params).await?;
    found.schema = registry.in_format(found.schema, format(&params)).await?;
    Ok(ok(version_json(&found)))
}

async fn version_text(
    State(registry): Registry,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
) -> Answer {
    let found = named_version(&registry, &subject, &version, &params).await?;
    let schema = registry.in_format(found.schema, format(&params)).await?;
    Ok(raw(schema.schema))
}

/// A schema's text as the answer itself.
fn raw(text: String) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, MEDIA_TYPE)], text).into_response()
}

async fn delete_subject(
    State(registry): Registry,
    Path(subject): Path<String>,
    Query(params): Params,
) -> Answer {
    let deleted = registry
        .delete_subject(&subject, flag(&params, "permanent"))
        .await?;
    Ok(ok(json!(deleted)))
}

async fn delete_version(
    State(registry): Registry,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
) -> Answer {
    let spec = VersionSpec::parse(&version)?;
    let deleted = registry
        .delete_version(&subject, spec, flag(&params, "permanent"))
        .await?;
    Ok(ok(json!(deleted)))
}

async fn schema_by_id(
    State(registry): Registry,
    Path(id): Path<String>,
    Query(params): Params,
) -> Answer {
    let schema = registry.schema(schema_id(&id)?).await?;
    let schema = registry.in_format(schema, format(&params)).await?;
    let mut fields = serde_json::Map::new();
    schema_fields(&schema, &mut fields);
    Ok(ok(Value::Object(fields)))
}

async fn schema_text_by_id(
    State(registry): Registry,
    Path(id): Path<String>,
    Query(params): Params,
) -> Answer {
    let schema = registry.schema(schema_id(&id)?).await?;
    Ok(raw(registry
        .in_format(schema, format(&params))
        .await?
        .schema))
}

async fn subjects_of_id(
    State(registry): Registry,
    Path(id): Path<String>,
    Query(params): Params,
) -> Answer {
    let mut subjects: Vec<String> = registry
        .versions_of_schema(schema_id(&id)?, flag(&params, "deleted"))
        .await?
        .into_iter()
        .map(|(subject, _)| subject)
        .collect();
    subjects.dedup();
    Ok(ok(json!(subjects)))
}

async fn versions_of_id(
    State(registry): Registry,
    Path(id): Path<String>,
    Query(params): Params,
) -> Answer {
    let versions: Vec<Value> = registry
        .versions_of_schema(schema_id(&id)?, flag(&params, "deleted"))
        .await?
        .into_iter()
        .map(|(subject, version)| json!({"subject": subject, "version": version}))
        .collect();
    Ok(ok(json!(versions)))
}

/// `{"compatibility": "FULL"}`, as `PUT /config` takes it.
#[derive(Debug, Deserialize)]
struct ConfigBody {
    compatibility: String,
}

fn compatibility_of(body: &[u8]) -> Result<Compatibility, Failure> {
    let body: ConfigBody =
        serde_json::from_slice(body).map_err(|_| RegistryError::InvalidCompatibilityLevel)?;
    Ok(Compatibility::from_name(&body.compatibility)?)
}

async fn config(State(registry): Registry) -> Answer {
    let level = registry.compatibility(None).await?;
    Ok(ok(json!({"compatibilityLevel": level.name()})))
}

async fn put_config(State(registry): Registry, body: Bytes) -> Answer {
    let level = compatibility_of(&body)?;
    registry.set_compatibility(None, Some(level)).await?;
    Ok(ok(json!({"compatibility": level.name()})))
}

async fn subject_config(
    State(registry): Registry,
    Path(subject): Path<String>,
    Query(params): Params,
) -> Answer {
    let level = registry
        .configured_compatibility(Some(&subject), flag(&params, "defaultToGlobal"))
        .await?
        .ok_or(RegistryError::SubjectCompatibilityNotConfigured(subject))?;
    Ok(ok(json!({"compatibilityLevel": level.name()})))
}

async fn put_subject_config(
    State(registry): Registry,
    Path(subject): Path<String>,
    body: Bytes,
) -> Answer {
    let level = compatibility_of(&body)?;
    registry
        .set_compatibility(Some(&subject), Some(level))
        .await?;
    Ok(ok(json!({"compatibility": level.name()})))
}

async fn delete_subject_config(State(registry): Registry, Path(subject): Path<String>) -> Answer {
    let level = registry
        .configured_compatibility(Some(&subject), false)
        .await?
        .ok_or_else(|| RegistryError::SubjectCompatibilityNotConfigured(subject.clone()))?;
    registry.set_compatibility(Some(&subject), None).await?;
    Ok(ok(json!({"compatibilityLevel": level.name()})))
}

/// `{"mode": "READONLY"}`, as `PUT /mode` takes it.
#[derive(Debug, Deserialize)]
struct ModeBody {
    mode: String,
}

fn mode_of(body: &[u8]) -> Result<Mode, Failure> {
    let body: ModeBody = serde_json::from_slice(body).map_err(|_| RegistryError::InvalidMode)?;
    Ok(Mode::from_name(&body.mode)?)
}

async fn mode(State(registry): Registry) -> Answer {
    Ok(ok(json!({"mode": registry.mode(None).await?.name()})))
}

async fn put_mode(State(registry): Registry, Query(params): Params, body: Bytes) -> Answer {
    let mode = mode_of(&body)?;
    registry
        .set_mode(None, Some(mode), flag(&params, "force"))
        .await?;
    Ok(ok(json!({"mode": mode.name()})))
}

/// A subject's mode; as Confluent, one it has not set is 40409 unless
/// `defaultToGlobal=true` asks for the registry's.
async fn subject_mode(
    State(registry): Registry,
    Path(subject): Path<String>,
    Query(params): Params,
) -> Answer {
    let mode = match registry.configured_mode(&subject).await? {
        Some(mode) => mode,
        None if flag(&params, "defaultToGlobal") => registry.mode(None).await?,
        None => return Err(RegistryError::SubjectModeNotConfigured(subject).into()),
    };
    Ok(ok(json!({"mode": mode.name()})))
}

async fn put_subject_mode(
    State(registry): Registry,
    Path(subject): Path<String>,
    Query(params): Params,
    body: Bytes,
) -> Answer {
    let mode = mode_of(&body)?;
    registry
        .set_mode(Some(&subject), Some(mode), flag(&params, "force"))
        .await?;
    Ok(ok(json!({"mode": mode.name()})))
}

async fn delete_subject_mode(State(registry): Registry, Path(subject): Path<String>) -> Answer {
    let mode = registry.mode(Some(&subject)).await?;
    registry.set_mode(Some(&subject), None, false).await?;
    Ok(ok(json!({"mode": mode.name()})))
}

async fn check_version(
    State(registry): Registry,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
    body: Bytes,
) -> Answer {
    let spec = VersionSpec::parse(&version)?;
    let new = new_schema(&body)?;
    let problems = registry
        .compatibility_problems(&subject, Some(spec), &new)
        .await?;
    Ok(compatibility_answer(&problems, flag(&params, "verbose")))
}

async fn check_all(
    State(registry): Registry,
    Path(subject): Path<String>,
    Query(params): Params,
    body: Bytes,
) -> Answer {
    let new = new_schema(&body)?;
    let problems = registry
        .compatibility_problems(&subject, None, &new)
        .await?;
    Ok(compatibility_answer(&problems, flag(&params, "verbose")))
}

fn compatibility_answer(problems: &[String], verbose: bool) -> Response {
    if verbose {
        ok(json!({"is_compatible": problems.is_empty(), "messages": problems}))
    } else {
        ok(json!({"is_compatible": problems.is_empty()}))
    }
}
