//! The schema registry's store on both backends: ids made once per fingerprint and
//! never reused, versions unique per subject, soft and hard deletes, configs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use spool_metadata::{RegistryConfigRecord, RegistrySchemaRecord, SubjectVersionRecord};

fn schema(text: &str) -> RegistrySchemaRecord {
    RegistrySchemaRecord {
        id: 0,
        schema_type: "AVRO".to_owned(),
        schema: text.to_owned(),
        references: "[]".to_owned(),
        fingerprint: format!("fp-{text}"),
    }
}

fn version(subject: &str, version: i32, schema_id: i32) -> SubjectVersionRecord {
    SubjectVersionRecord {
        subject: subject.to_owned(),
        version,
        schema_id,
        deleted: false,
    }
}

#[tokio::test]
async fn schemas_get_one_id_each_and_subjects_keep_their_versions() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let long = store
            .put_registry_schema(&schema("\"long\""))
            .await
            .unwrap();
        let string = store
            .put_registry_schema(&schema("\"string\""))
            .await
            .unwrap();
        assert_ne!(long, string, "{label}");
        assert_eq!(
            store.registry_schema_id("fp-\"long\"").await.unwrap(),
            Some(long),
            "{label}"
        );
        assert_eq!(
            store.registry_schema_id("nope").await.unwrap(),
            None,
            "{label}"
        );
        assert_eq!(
            store
                .put_registry_schema(&schema("\"long\""))
                .await
                .unwrap(),
            long,
            "{label}: the same schema, the same id"
        );
        assert!(
            store
                .put_subject_version(&version("a-value", 1, long))
                .await
                .unwrap()
        );
        assert!(
            store
                .put_subject_version(&version("a-value", 2, string))
                .await
                .unwrap()
        );
        assert!(
            !store
                .put_subject_version(&version("a-value", 2, long))
                .await
                .unwrap(),
            "{label}: version 2 is taken"
        );
        assert!(
            store
                .put_subject_version(&version("b-value", 1, long))
                .await
                .unwrap()
        );
        drop(store);

        let store = backend.open().await;
        let found = store.registry_schema(long).await.unwrap().unwrap();
        assert_eq!(
            (found.id, found.schema.as_str()),
            (long, "\"long\""),
            "{label}"
        );
        assert_eq!(
            store.registry_schema(999_999).await.unwrap(),
            None,
            "{label}"
        );
        assert_eq!(
            store.subject_versions(Some("a-value")).await.unwrap(),
            vec![version("a-value", 1, long), version("a-value", 2, string)],
            "{label}"
        );
        assert_eq!(
            store.subject_versions(None).await.unwrap().len(),
            3,
            "{label}"
        );
        assert_eq!(
            store.versions_of_schema(long).await.unwrap(),
            vec![version("a-value", 1, long), version("b-value", 1, long)],
            "{label}"
        );
        // Soft, then hard deletes: one version, then the rest.
        assert_eq!(
            store
                .soft_delete_versions("a-value", Some(1))
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            store
                .soft_delete_versions("a-value", Some(1))
                .await
                .unwrap(),
            0
        );
        assert!(store.subject_versions(Some("a-value")).await.unwrap()[0].deleted);
        assert_eq!(
            store.soft_delete_versions("a-value", None).await.unwrap(),
            1
        );
        assert_eq!(store.remove_versions("a-value", Some(1)).await.unwrap(), 1);
        assert_eq!(store.remove_versions("a-value", None).await.unwrap(), 1);
        assert!(
            store
                .subject_versions(Some("a-value"))
                .await
                .unwrap()
                .is_empty()
        );
        // Ids are never reused: the schemas stay.
        let third = store.put_registry_schema(&schema("\"int\"")).await.unwrap();
        assert!(third > string, "{label}");
        assert!(
            store.registry_schema(string).await.unwrap().is_some(),
            "{label}"
        );

        assert_eq!(
            store.registry_config("").await.unwrap(),
            RegistryConfigRecord::default(),
            "{label}"
        );
        let backward = RegistryConfigRecord {
            compatibility: Some("FULL".to_owned()),
            mode: None,
        };
        store
            .put_registry_config("b-value", &backward)
            .await
            .unwrap();
        assert_eq!(
            store.registry_config("b-value").await.unwrap(),
            backward,
            "{label}"
        );
        store
            .put_registry_config("b-value", &RegistryConfigRecord::default())
            .await
            .unwrap();
        assert_eq!(
            store.registry_config("b-value").await.unwrap(),
            RegistryConfigRecord::default(),
            "{label}"
        );
    }
}

#[tokio::test]
async fn imported_ids_are_kept_and_later_ids_come_after_them() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let made = store.put_registry_schema(&schema("\"int\"")).await.unwrap();
        let imported = RegistrySchemaRecord {
            id: 500,
            ..schema("\"bytes\"")
        };
        assert!(
            store.import_registry_schema(&imported).await.unwrap(),
            "{label}"
        );
        assert!(
            store.import_registry_schema(&imported).await.unwrap(),
            "{label}: the same schema at its id again"
        );
        assert!(
            !store
                .import_registry_schema(&RegistrySchemaRecord {
                    id: 500,
                    ..schema("\"float\"")
                })
                .await
                .unwrap(),
            "{label}: the id holds another schema"
        );
        assert!(
            !store
                .import_registry_schema(&RegistrySchemaRecord {
                    id: 600,
                    ..schema("\"int\"")
                })
                .await
                .unwrap(),
            "{label}: the schema has another id ({made})"
        );
        assert_eq!(
            store.registry_schema(500).await.unwrap().unwrap().schema,
            "\"bytes\"",
            "{label}"
        );
        let next = store
            .put_registry_schema(&schema("\"double\""))
            .await
            .unwrap();
        assert!(next > 500, "{label}: {next} comes after the imported id");
    }
}

#[tokio::test]
async fn a_setting_written_leaves_the_other_as_it_is() {
    use spool_metadata::RegistrySetting;
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        // Two brokers: one sets the level, the other the mode; both stay.
        store
            .put_registry_setting("s-value", RegistrySetting::Compatibility, Some("FULL"))
            .await
            .unwrap();
        store
            .put_registry_setting("s-value", RegistrySetting::Mode, Some("READONLY"))
            .await
            .unwrap();
        assert_eq!(
            store.registry_config("s-value").await.unwrap(),
            RegistryConfigRecord {
                compatibility: Some("FULL".to_owned()),
                mode: Some("READONLY".to_owned()),
            },
            "{label}"
        );
        store
            .put_registry_setting("s-value", RegistrySetting::Compatibility, None)
            .await
            .unwrap();
        assert_eq!(
            store.registry_config("s-value").await.unwrap(),
            RegistryConfigRecord {
                compatibility: None,
                mode: Some("READONLY".to_owned()),
            },
            "{label}"
        );
        store
            .put_registry_setting("s-value", RegistrySetting::Mode, None)
            .await
            .unwrap();
        assert_eq!(
            store.registry_config("s-value").await.unwrap(),
            RegistryConfigRecord::default(),
            "{label}"
        );
    }
}
