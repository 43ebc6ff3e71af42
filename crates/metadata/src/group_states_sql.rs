//! The SQL of [`GroupStates`](crate::GroupStates), shared by both backends.

pub(crate) const SAVE_STATE: &str = "INSERT INTO group_states (group_id, state) \
     VALUES ($1, $2) ON CONFLICT (group_id) DO UPDATE SET state = excluded.state";
pub(crate) const DELETE_STATE: &str = "DELETE FROM group_states WHERE group_id = $1";
pub(crate) const STATE: &str = "SELECT state FROM group_states WHERE group_id = $1";
pub(crate) const STATES: &str = "SELECT group_id, state FROM group_states";
pub(crate) const SET_CONFIG: &str = "INSERT INTO group_configs (group_id, key, value) \
     VALUES ($1, $2, $3) ON CONFLICT (group_id, key) DO UPDATE SET value = excluded.value";
pub(crate) const DELETE_CONFIG: &str = "DELETE FROM group_configs WHERE group_id = $1 AND key = $2";
pub(crate) const CONFIGS: &str = "SELECT group_id AS scope, key, value FROM group_configs";

/// Implements [`GroupStates`](crate::GroupStates) for a store with a `pool`.
macro_rules! impl_group_states {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::GroupStates for $store {
            async fn save_group_state(
                &self,
                group: &str,
                coordinator_epoch: i64,
                state: &str,
            ) -> $crate::Result<()> {
                let mut tx = self.pool.begin().await?;
                $crate::group_states_sql::fence!(tx, group, coordinator_epoch);
                sqlx::query($crate::group_states_sql::SAVE_STATE)
                    .bind(group)
                    .bind(state)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn delete_group_state(
                &self,
                group: &str,
                coordinator_epoch: i64,
            ) -> $crate::Result<()> {
                let mut tx = self.pool.begin().await?;
                $crate::group_states_sql::fence!(tx, group, coordinator_epoch);
                sqlx::query($crate::group_states_sql::DELETE_STATE)
                    .bind(group)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn group_state(&self, group: &str) -> $crate::Result<Option<String>> {
                Ok(sqlx::query_scalar($crate::group_states_sql::STATE)
                    .bind(group)
                    .fetch_optional(&self.pool)
                    .await?)
            }

            async fn group_states(&self) -> $crate::Result<Vec<(String, String)>> {
                Ok(sqlx::query_as($crate::group_states_sql::STATES)
                    .fetch_all(&self.pool)
                    .await?)
            }

            async fn alter_group_configs(
                &self,
                group: &str,
                changes: &[$crate::ConfigChange],
            ) -> $crate::Result<()> {
                let mut tx = self.pool.begin().await?;
                sqlx::query($crate::sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                $crate::sql::apply_config_changes!(
                    tx,
                    changes,
                    group,
                    $crate::group_states_sql::SET_CONFIG,
                    $crate::group_states_sql::DELETE_CONFIG
                );
                tx.commit().await?;
                Ok(())
            }

            async fn group_configs(
                &self,
            ) -> $crate::Result<
                std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
            > {
                let rows: Vec<$crate::sql::BrokerConfigRow> =
                    sqlx::query_as($crate::group_states_sql::CONFIGS)
                        .fetch_all(&self.pool)
                        .await?;
                Ok($crate::sql::broker_configs_by_scope(rows))
            }
        }
    };
}

/// Returns `Fenced` from the enclosing function unless `$epoch` is the group's latest
/// coordinator epoch; locks the group's claim until transaction `$tx` ends.
macro_rules! fence {
    ($tx:ident, $group:expr, $epoch:expr) => {
        let fenced = sqlx::query($crate::sql::FENCE_GROUP)
            .bind($group)
            .bind($epoch)
            .execute(&mut *$tx)
            .await?;
        if fenced.rows_affected() == 0 {
            return Err($crate::MetadataError::Fenced {
                group: $group.to_owned(),
            });
        }
    };
}

pub(crate) use {fence, impl_group_states};
