//! Which quota applies to a request: KIP-546's order of precedence, most specific
//! first, over the entities that have a value for the key.

use std::collections::HashMap;

use spool_metadata::{EntityPart, QuotaEntity, QuotaRecord};

/// Every quota, by entity then key.
#[derive(Debug, Default)]
pub struct QuotaIndex {
    by_entity: HashMap<QuotaEntity, HashMap<String, f64>>,
    records: Vec<QuotaRecord>,
}

impl QuotaIndex {
    pub fn new(records: Vec<QuotaRecord>) -> QuotaIndex {
        let mut by_entity: HashMap<QuotaEntity, HashMap<String, f64>> = HashMap::new();
        for record in &records {
            by_entity
                .entry(record.entity.clone())
                .or_default()
                .insert(record.key.clone(), record.value);
        }
        QuotaIndex { by_entity, records }
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Every quota, as stored.
    pub fn records(&self) -> &[QuotaRecord] {
        &self.records
    }

    /// The entity whose quota for `key` applies to `user` with `client_id`, and its
    /// value: user and client id, user and default client, user, default user and
    /// client id, default user and default client, default user, client id, default
    /// client id.
    pub fn resolve(&self, user: &str, client_id: &str, key: &str) -> Option<(QuotaEntity, f64)> {
        let named = |name: &str| EntityPart::Named(name.to_owned());
        let order = [
            (named(user), named(client_id)),
            (named(user), EntityPart::Default),
            (named(user), EntityPart::Absent),
            (EntityPart::Default, named(client_id)),
            (EntityPart::Default, EntityPart::Default),
            (EntityPart::Default, EntityPart::Absent),
            (EntityPart::Absent, named(client_id)),
            (EntityPart::Absent, EntityPart::Default),
        ];
        order.into_iter().find_map(|(user_part, client_part)| {
            let entity = QuotaEntity {
                user: user_part,
                client_id: client_part,
            };
            let value = *self.by_entity.get(&entity)?.get(key)?;
            // What is metered: the entity named, with a default standing for the
            // name it covers, so that each user (or client id) under a default has
            // the whole rate, as in Kafka. Clients of one named entity share it.
            let metered = QuotaEntity {
                user: in_place_of_default(entity.user, user),
                client_id: in_place_of_default(entity.client_id, client_id),
            };
            Some((metered, value))
        })
    }
}

/// A default part stands for the name it covers.
fn in_place_of_default(part: EntityPart, name: &str) -> EntityPart {
    match part {
        EntityPart::Default => EntityPart::Named(name.to_owned()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(user: EntityPart, client_id: EntityPart, value: f64) -> QuotaRecord {
        QuotaRecord {
            entity: QuotaEntity { user, client_id },
            key: "producer_byte_rate".to_owned(),
            value,
        }
    }

    #[test]
    fn the_most_specific_entity_wins() {
        let named = |n: &str| EntityPart::Named(n.to_owned());
        let index = QuotaIndex::new(vec![
            record(EntityPart::Absent, EntityPart::Default, 1.0),
            record(EntityPart::Absent, named("app"), 2.0),
            record(EntityPart::Default, EntityPart::Absent, 3.0),
            record(named("alice"), EntityPart::Absent, 4.0),
            record(named("alice"), named("app"), 5.0),
        ]);
        let value = |user, client| {
            index
                .resolve(user, client, "producer_byte_rate")
                .map(|q| q.1)
        };
        assert_eq!(value("alice", "app"), Some(5.0));
        assert_eq!(value("alice", "other"), Some(4.0));
        assert_eq!(
            value("bob", "app"),
            Some(3.0),
            "a default user beats a client id"
        );
        assert_eq!(index.resolve("bob", "app", "consumer_byte_rate"), None);
        // Each user under the default is metered on its own.
        let (metered, _) = index.resolve("bob", "app", "producer_byte_rate").unwrap();
        assert_eq!(metered.user, named("bob"));
        assert_eq!(metered.client_id, EntityPart::Absent);
        let clients_only = QuotaIndex::new(vec![
            record(EntityPart::Absent, EntityPart::Default, 1.0),
            record(EntityPart::Absent, named("app"), 2.0),
        ]);
        let value = |client| {
            clients_only
                .resolve("bob", client, "producer_byte_rate")
                .map(|q| q.1)
        };
        assert_eq!(value("app"), Some(2.0));
        assert_eq!(value("other"), Some(1.0));
    }
}
