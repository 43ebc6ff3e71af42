//! The SQL of [`ClientQuotas`](crate::ClientQuotas), shared by both backends. Each part
//! of an entity is a kind (0 absent, 1 default, 2 named) and a name (empty unless
//! named), so that the key has no NULLs.

use crate::{EntityPart, QuotaEntity, QuotaRecord};

pub(crate) const UPSERT: &str = "INSERT INTO client_quotas \
     (user_kind, user_name, client_kind, client_name, quota_key, quota_value) \
     VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (user_kind, user_name, client_kind, client_name, quota_key) \
     DO UPDATE SET quota_value = excluded.quota_value";
pub(crate) const DELETE: &str = "DELETE FROM client_quotas WHERE user_kind = $1 \
     AND user_name = $2 AND client_kind = $3 AND client_name = $4 AND quota_key = $5";
pub(crate) const ALL: &str = "SELECT user_kind, user_name, client_kind, client_name, \
     quota_key, quota_value FROM client_quotas";

pub(crate) type QuotaRow = (i16, String, i16, String, String, f64);

/// A part's kind and name, as stored.
pub(crate) fn stored(part: &EntityPart) -> (i16, &str) {
    match part {
        EntityPart::Absent => (0, ""),
        EntityPart::Default => (1, ""),
        EntityPart::Named(name) => (2, name),
    }
}

fn part(kind: i16, name: String) -> Option<EntityPart> {
    match kind {
        0 => Some(EntityPart::Absent),
        1 => Some(EntityPart::Default),
        2 => Some(EntityPart::Named(name)),
        _ => None,
    }
}

pub(crate) fn record_of(row: QuotaRow) -> Option<QuotaRecord> {
    let (user_kind, user_name, client_kind, client_name, key, value) = row;
    Some(QuotaRecord {
        entity: QuotaEntity {
            user: part(user_kind, user_name)?,
            client_id: part(client_kind, client_name)?,
        },
        key,
        value,
    })
}

/// Implements [`ClientQuotas`](crate::ClientQuotas) for a store with a `pool`.
macro_rules! impl_client_quotas {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::ClientQuotas for $store {
            async fn alter_quotas(
                &self,
                changes: &[($crate::QuotaEntity, String, Option<f64>)],
            ) -> $crate::Result<()> {
                use $crate::quotas_sql::{DELETE, UPSERT, stored};
                let mut tx = self.pool.begin().await?;
                sqlx::query($crate::sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                for (entity, key, value) in changes {
                    let (user_kind, user_name) = stored(&entity.user);
                    let (client_kind, client_name) = stored(&entity.client_id);
                    let query = sqlx::query(if value.is_some() { UPSERT } else { DELETE })
                        .bind(user_kind)
                        .bind(user_name)
                        .bind(client_kind)
                        .bind(client_name)
                        .bind(key);
                    match value {
                        Some(value) => query.bind(*value).execute(&mut *tx).await?,
                        None => query.execute(&mut *tx).await?,
                    };
                }
                tx.commit().await?;
                Ok(())
            }

            async fn quotas(&self) -> $crate::Result<Vec<$crate::QuotaRecord>> {
                let rows: Vec<$crate::quotas_sql::QuotaRow> =
                    sqlx::query_as($crate::quotas_sql::ALL)
                        .fetch_all(&self.pool)
                        .await?;
                Ok(rows
                    .into_iter()
                    .filter_map($crate::quotas_sql::record_of)
                    .collect())
            }
        }
    };
}

pub(crate) use impl_client_quotas;
