//! The SQL of [`ScramCredentials`](crate::ScramCredentials), shared by both backends.

pub(crate) const UPSERT: &str = "INSERT INTO scram_credentials \
     (user_name, mechanism, salt, iterations, stored_key, server_key) \
     VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (user_name, mechanism) DO UPDATE SET salt = excluded.salt, \
     iterations = excluded.iterations, stored_key = excluded.stored_key, \
     server_key = excluded.server_key";
pub(crate) const DELETE: &str =
    "DELETE FROM scram_credentials WHERE user_name = $1 AND mechanism = $2";
pub(crate) const ONE: &str = "SELECT salt, iterations, stored_key, server_key \
     FROM scram_credentials WHERE user_name = $1 AND mechanism = $2";
pub(crate) const ALL: &str = "SELECT user_name, mechanism, iterations FROM scram_credentials \
     ORDER BY user_name, mechanism";

/// Implements [`ScramCredentials`](crate::ScramCredentials) for a store with a `pool`.
macro_rules! impl_scram_credentials {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::ScramCredentials for $store {
            async fn upsert_credential(
                &self,
                credential: &$crate::ScramCredentialRecord,
            ) -> $crate::Result<()> {
                sqlx::query($crate::credentials_sql::UPSERT)
                    .bind(&credential.user)
                    .bind(i16::from(credential.mechanism))
                    .bind(&credential.salt)
                    .bind(credential.iterations)
                    .bind(&credential.stored_key)
                    .bind(&credential.server_key)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn delete_credential(&self, user: &str, mechanism: i8) -> $crate::Result<bool> {
                let done = sqlx::query($crate::credentials_sql::DELETE)
                    .bind(user)
                    .bind(i16::from(mechanism))
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn credential(
                &self,
                user: &str,
                mechanism: i8,
            ) -> $crate::Result<Option<$crate::ScramCredentialRecord>> {
                let row: Option<(Vec<u8>, i32, Vec<u8>, Vec<u8>)> =
                    sqlx::query_as($crate::credentials_sql::ONE)
                        .bind(user)
                        .bind(i16::from(mechanism))
                        .fetch_optional(&self.pool)
                        .await?;
                Ok(row.map(|(salt, iterations, stored_key, server_key)| {
                    $crate::ScramCredentialRecord {
                        user: user.to_owned(),
                        mechanism,
                        salt,
                        iterations,
                        stored_key,
                        server_key,
                    }
                }))
            }

            async fn credential_list(&self) -> $crate::Result<Vec<(String, i8, i32)>> {
                let rows: Vec<(String, i16, i32)> = sqlx::query_as($crate::credentials_sql::ALL)
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows
                    .into_iter()
                    .filter_map(|(user, mechanism, iterations)| {
                        Some((user, i8::try_from(mechanism).ok()?, iterations))
                    })
                    .collect())
            }
        }
    };
}

pub(crate) use impl_scram_credentials;
