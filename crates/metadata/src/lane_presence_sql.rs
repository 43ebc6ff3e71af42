//! The SQL of [`LanePresences`](crate::LanePresences), shared by both backends.

pub(crate) const UPSERT: &str = "INSERT INTO lane_presence (broker_id, presence) VALUES ($1, $2) \
     ON CONFLICT (broker_id) DO UPDATE SET presence = excluded.presence";
pub(crate) const ALL: &str = "SELECT broker_id, presence FROM lane_presence ORDER BY broker_id";

/// Implements [`LanePresences`](crate::LanePresences) for a store with a `pool`.
macro_rules! impl_lane_presences {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::LanePresences for $store {
            async fn put_lane_presence(
                &self,
                broker_id: i32,
                presence: &str,
            ) -> $crate::Result<()> {
                sqlx::query($crate::lane_presence_sql::UPSERT)
                    .bind(broker_id)
                    .bind(presence)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn lane_presences(&self) -> $crate::Result<Vec<(i32, String)>> {
                Ok(sqlx::query_as($crate::lane_presence_sql::ALL)
                    .fetch_all(&self.pool)
                    .await?)
            }
        }
    };
}

pub(crate) use impl_lane_presences;
