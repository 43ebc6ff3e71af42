//! The SQL of [`Acls`](crate::Acls), shared by both backends. Creating and deleting
//! move the topics version in the same transaction: brokers following the store load
//! the bindings again when it moves.

pub(crate) const INSERT: &str = "INSERT INTO acls \
     (resource_type, resource_name, pattern_type, principal, host, operation, permission) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING";
pub(crate) const DELETE: &str = "DELETE FROM acls WHERE resource_type = $1 \
     AND resource_name = $2 AND pattern_type = $3 AND principal = $4 AND host = $5 \
     AND operation = $6 AND permission = $7";
pub(crate) const ALL: &str = "SELECT resource_type, resource_name, pattern_type, principal, \
     host, operation, permission FROM acls";

/// A row of `acls`, as both backends read it.
pub(crate) type AclRow = (i16, String, i16, String, String, i16, i16);

pub(crate) fn record_of(row: AclRow) -> Option<crate::AclRecord> {
    let (resource_type, resource_name, pattern_type, principal, host, operation, permission) = row;
    Some(crate::AclRecord {
        resource_type: i8::try_from(resource_type).ok()?,
        resource_name,
        pattern_type: i8::try_from(pattern_type).ok()?,
        principal,
        host,
        operation: i8::try_from(operation).ok()?,
        permission: i8::try_from(permission).ok()?,
    })
}

/// Implements [`Acls`](crate::Acls) for a store with a `pool`.
macro_rules! impl_acls {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::Acls for $store {
            async fn create_acls(&self, acls: &[$crate::AclRecord]) -> $crate::Result<()> {
                let mut tx = self.pool.begin().await?;
                sqlx::query($crate::sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                for acl in acls {
                    $crate::acls_sql::bind_acl!(sqlx::query($crate::acls_sql::INSERT), acl)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn delete_acls(
                &self,
                acls: &[$crate::AclRecord],
            ) -> $crate::Result<Vec<$crate::AclRecord>> {
                let mut tx = self.pool.begin().await?;
                sqlx::query($crate::sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                let mut deleted = Vec::new();
                for acl in acls {
                    let done =
                        $crate::acls_sql::bind_acl!(sqlx::query($crate::acls_sql::DELETE), acl)
                            .execute(&mut *tx)
                            .await?;
                    if done.rows_affected() > 0 {
                        deleted.push(acl.clone());
                    }
                }
                tx.commit().await?;
                Ok(deleted)
            }

            async fn acls(&self) -> $crate::Result<Vec<$crate::AclRecord>> {
                let rows: Vec<$crate::acls_sql::AclRow> = sqlx::query_as($crate::acls_sql::ALL)
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows
                    .into_iter()
                    .filter_map($crate::acls_sql::record_of)
                    .collect())
            }
        }
    };
}

/// Binds a binding's seven fields, in the column order of [`INSERT`] and [`DELETE`].
macro_rules! bind_acl {
    ($query:expr, $acl:expr) => {
        $query
            .bind(i16::from($acl.resource_type))
            .bind(&$acl.resource_name)
            .bind(i16::from($acl.pattern_type))
            .bind(&$acl.principal)
            .bind(&$acl.host)
            .bind(i16::from($acl.operation))
            .bind(i16::from($acl.permission))
    };
}

pub(crate) use {bind_acl, impl_acls};
