//! The registry's operations over a real store (SQLite): what Confluent's clients
//! rely on — one id per schema, versions per subject, compatibility refusals, deletes
//! in two steps, levels and modes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use std::sync::Arc;

use spool_metadata::SqliteStore;
use spool_schema_registry::{
    Compatibility, Mode, NewSchema, Reference, Registry, SchemaType, VersionSpec,
};

async fn registry() -> (tempfile::TempDir, Registry<SqliteStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("meta.db"))
        .await
        .unwrap();
    (dir, Registry::new(Arc::new(store)))
}

fn avro(text: &str) -> NewSchema {
    NewSchema {
        schema: text.to_owned(),
        schema_type: SchemaType::Avro,
        references: Vec::new(),
    }
}

fn user(extra: &str) -> NewSchema {
    avro(&format!(
        r#"{{"type":"record","name":"User","fields":[{{"name":"id","type":"long"}}{extra}]}}"#
    ))
}

#[tokio::test]
async fn one_schema_one_id_across_subjects_and_versions_count_per_subject() {
    let (_dir, registry) = registry().await;
    let first = registry.register("users-value", &user("")).await.unwrap();
    assert_eq!(first.version, 1);
    // The same schema, written differently: the same id and version.
    let again = registry
        .register(
            "users-value",
            &avro(r#"{"name":"User","type":"record","fields":[{"type":"long","name":"id"}]}"#),
        )
        .await
        .unwrap();
    assert_eq!((again.schema.id, again.version), (first.schema.id, 1));
    // Under another subject: the same id, its own version 1.
    let elsewhere = registry.register("audit-value", &user("")).await.unwrap();
    assert_eq!(
        (elsewhere.schema.id, elsewhere.version),
        (first.schema.id, 1)
    );
    let second = registry
        .register(
            "users-value",
            &user(r#",{"name":"email","type":"string","default":""}"#),
        )
        .await
        .unwrap();
    assert_eq!(second.version, 2);
    assert_ne!(second.schema.id, first.schema.id);
    assert_eq!(
        registry.versions("users-value", false).await.unwrap(),
        vec![1, 2]
    );
    assert_eq!(
        registry.subjects(false).await.unwrap(),
        vec!["audit-value".to_owned(), "users-value".to_owned()]
    );
    assert_eq!(
        registry
            .version("users-value", VersionSpec::Latest, false)
            .await
            .unwrap()
            .version,
        2
    );
    assert_eq!(
        registry
            .versions_of_schema(first.schema.id, false)
            .await
            .unwrap(),
        vec![("audit-value".to_owned(), 1), ("users-value".to_owned(), 1)]
    );
    let found = registry
        .lookup("users-value", &user(""), false)
        .await
        .unwrap();
    assert_eq!((found.version, found.schema.id), (1, first.schema.id));
    assert_eq!(
        registry
            .lookup(
                "users-value",
                &user(r#",{"name":"x","type":"int","default":0}"#),
                false
            )
            .await
            .unwrap_err()
            .error_code(),
        40403
    );
    assert_eq!(
        registry.schema(9_999).await.unwrap_err().error_code(),
        40403
    );
    assert_eq!(
        registry
            .versions("nobody", false)
            .await
            .unwrap_err()
            .error_code(),
        40401
    );
}

#[tokio::test]
async fn an_incompatible_schema_is_refused_at_the_subjects_level() {
    let (_dir, registry) = registry().await;
    registry.register("users-value", &user("")).await.unwrap();
    let required = user(r#",{"name":"email","type":"string"}"#);
    let refused = registry
        .register("users-value", &required)
        .await
        .unwrap_err();
    assert_eq!(
        (refused.status(), refused.error_code()),
        (409, 409),
        "{refused}"
    );
    assert!(
        !registry
            .compatibility_problems("users-value", Some(VersionSpec::Latest), &required)
            .await
            .unwrap()
            .is_empty()
    );
    // FORWARD on the subject lets it in; the registry's level stays BACKWARD.
    registry
        .set_compatibility(Some("users-value"), Some(Compatibility::Forward))
        .await
        .unwrap();
    assert_eq!(
        registry
            .register("users-value", &required)
            .await
            .unwrap()
            .version,
        2
    );
    assert_eq!(
        registry.compatibility(None).await.unwrap(),
        Compatibility::Backward
    );
    assert_eq!(
        registry
            .configured_compatibility(Some("audit-value"), false)
            .await
            .unwrap(),
        None
    );
    // A bad schema is 42201.
    let bad = registry
        .register("users-value", &avro("{"))
        .await
        .unwrap_err();
    assert_eq!(bad.error_code(), 42201);
}

#[tokio::test]
async fn deletes_are_soft_first_then_permanent_and_read_only_refuses_writes() {
    let (_dir, registry) = registry().await;
    registry.register("s", &user("")).await.unwrap();
    registry
        .register("s", &user(r#",{"name":"e","type":"string","default":""}"#))
        .await
        .unwrap();
    let hard_first = registry
        .delete_version("s", VersionSpec::Number(1), true)
        .await
        .unwrap_err();
    assert_eq!(hard_first.error_code(), 40407);
    assert_eq!(
        registry
            .delete_version("s", VersionSpec::Number(1), false)
            .await
            .unwrap(),
        1
    );
    assert_eq!(registry.versions("s", false).await.unwrap(), vec![2]);
    assert_eq!(registry.versions("s", true).await.unwrap(), vec![1, 2]);
    assert_eq!(
        registry
            .delete_version("s", VersionSpec::Number(1), true)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        registry
            .delete_subject("s", true)
            .await
            .unwrap_err()
            .error_code(),
        40405
    );
    assert_eq!(registry.delete_subject("s", false).await.unwrap(), vec![2]);
    assert_eq!(
        registry
            .delete_subject("s", false)
            .await
            .unwrap_err()
            .error_code(),
        40404
    );
    assert_eq!(
        registry.subjects(false).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(registry.delete_subject("s", true).await.unwrap(), vec![2]);
    assert_eq!(
        registry.versions("s", true).await.unwrap_err().error_code(),
        40401
    );
    // Read-only: no registration.
    registry
        .set_mode(None, Some(Mode::ReadOnly), false)
        .await
        .unwrap();
    assert_eq!(
        registry
            .register("s", &user(""))
            .await
            .unwrap_err()
            .error_code(),
        42205
    );
    registry
        .set_mode(Some("s"), Some(Mode::ReadWrite), false)
        .await
        .unwrap();
    assert_eq!(registry.register("s", &user("")).await.unwrap().version, 1);
}

#[tokio::test]
async fn a_schema_refers_to_another_by_subject_and_version() {
    let (_dir, registry) = registry().await;
    registry
        .register(
            "address",
            &avro(r#"{"type":"record","name":"Address","namespace":"shop","fields":[{"name":"city","type":"string"}]}"#),
        )
        .await
        .unwrap();
    let order = NewSchema {
        schema: r#"{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"to","type":"shop.Address"}]}"#.to_owned(),
        schema_type: SchemaType::Avro,
        references: vec![Reference {
            name: "shop.Address".to_owned(),
            subject: "address".to_owned(),
            version: 1,
        }],
    };
    let registered = registry.register("orders-value", &order).await.unwrap();
    assert_eq!(registered.schema.references, order.references);
    let read = registry.schema(registered.schema.id).await.unwrap();
    assert_eq!(read.references, order.references);
    let missing = NewSchema {
        references: vec![Reference {
            version: 7,
            ..order.references[0].clone()
        }],
        ..order
    };
    assert_eq!(
        registry
            .register("orders-value", &missing)
            .await
            .unwrap_err()
            .error_code(),
        42201
    );
}

#[tokio::test]
async fn a_soft_deleted_version_deleted_again_says_so_and_a_live_one_is_never_removed() {
    let (_dir, registry) = registry().await;
    registry.register("s", &user("")).await.unwrap();
    registry
        .delete_version("s", VersionSpec::Number(1), false)
        .await
        .unwrap();
    let again = registry
        .delete_version("s", VersionSpec::Number(1), false)
        .await
        .unwrap_err();
    assert_eq!(again.error_code(), 40406, "{again}");
    // Registered again (a live version 2) while the subject's versions are removed:
    // only the soft-deleted one goes.
    registry.register("s", &user("")).await.unwrap();
    assert_eq!(registry.versions("s", true).await.unwrap(), vec![1, 2]);
    registry
        .delete_version("s", VersionSpec::Number(1), true)
        .await
        .unwrap();
    assert_eq!(registry.versions("s", false).await.unwrap(), vec![2]);
}
