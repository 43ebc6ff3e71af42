//! Client quotas against every backend (see `conformance.rs`): set, replaced,
//! removed, with default and named entity parts kept apart.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::float_cmp,
    unreachable_pub
)]

use crate::common;

use spool_metadata::{EntityPart, QuotaEntity};

fn entity(user: EntityPart, client_id: EntityPart) -> QuotaEntity {
    QuotaEntity { user, client_id }
}

#[tokio::test]
async fn quotas_are_set_replaced_and_removed() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let alice = entity(EntityPart::Named("alice".to_owned()), EntityPart::Absent);
        let defaults = entity(EntityPart::Default, EntityPart::Absent);
        let both = entity(
            EntityPart::Named("alice".to_owned()),
            EntityPart::Named("app".to_owned()),
        );
        let version = store.topics_version().await.unwrap();
        store
            .alter_quotas(&[
                (alice.clone(), "producer_byte_rate".to_owned(), Some(1024.0)),
                (
                    defaults.clone(),
                    "producer_byte_rate".to_owned(),
                    Some(512.0),
                ),
                (both.clone(), "request_percentage".to_owned(), Some(12.5)),
            ])
            .await
            .unwrap();
        assert!(store.topics_version().await.unwrap() > version, "{label}");
        store
            .alter_quotas(&[
                (alice.clone(), "producer_byte_rate".to_owned(), Some(2048.0)),
                (defaults.clone(), "producer_byte_rate".to_owned(), None),
            ])
            .await
            .unwrap();
        let mut quotas: Vec<(QuotaEntity, String, f64)> = store
            .quotas()
            .await
            .unwrap()
            .into_iter()
            .map(|q| (q.entity, q.key, q.value))
            .collect();
        quotas.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            quotas,
            vec![
                (alice, "producer_byte_rate".to_owned(), 2048.0),
                (both, "request_percentage".to_owned(), 12.5),
            ],
            "{label}"
        );
    }
}
