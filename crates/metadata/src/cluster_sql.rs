//! The SQL of [`Cluster`](crate::Cluster), shared by both backends as `sql.rs` is.
//! Leases are instants in ms since the epoch by the brokers' clocks (see
//! `docs/cluster.md`: they must agree within a small part of a lease).

/// Registers a broker; a row of another instance (`$8`) whose lease is live at `$9`
/// stays, and nothing is written (no row affected). A row from before instances
/// were kept (NULL) is replaced.
pub(crate) const UPSERT_BROKER: &str = "INSERT INTO brokers \
     (node_id, incarnation, host, port, rack, lease_expires_ms, draining, listeners, \
     instance, reader) \
     VALUES ($1, $2, $3, $4, $5, $6, FALSE, $7, $8, $10) \
     ON CONFLICT (node_id) DO UPDATE SET incarnation = excluded.incarnation, \
     host = excluded.host, port = excluded.port, rack = excluded.rack, \
     reader = excluded.reader, \
     listeners = excluded.listeners, instance = excluded.instance, \
     lease_expires_ms = excluded.lease_expires_ms, draining = FALSE, \
     topics_seen = 0, assignments_seen = 0 \
     WHERE brokers.instance IS NULL OR brokers.instance = excluded.instance \
     OR brokers.lease_expires_ms < $9";
/// Who holds node `$1`: its endpoint and when its lease ends.
pub(crate) const NODE_HOLDER: &str =
    "SELECT host, port, lease_expires_ms FROM brokers WHERE node_id = $1";
/// Sets the catalogue's object storage if none is set yet.
pub(crate) const BIND_STORAGE: &str =
    "UPDATE catalog SET storage_url = $1 WHERE id = 1 AND storage_url IS NULL";
pub(crate) const STORAGE_URL: &str = "SELECT storage_url FROM catalog WHERE id = 1";
/// Raises the epoch of every partition node `$1` leads.
pub(crate) const BUMP_NODE_EPOCHS: &str = "UPDATE partitions \
     SET leader_epoch = leader_epoch + 1 WHERE leader = $1 \
     RETURNING topic_id, partition, leader, leader_epoch, handover_to, leader_since_ms";
pub(crate) const BUMP_ASSIGNMENTS_VERSION: &str =
    "UPDATE catalog SET assignments_version = assignments_version + 1 WHERE id = 1";
pub(crate) const RENEW_LEASE: &str = "UPDATE brokers SET lease_expires_ms = $3 \
     WHERE node_id = $1 AND incarnation = $2";
pub(crate) const SET_DRAINING: &str = "UPDATE brokers SET draining = $2 WHERE node_id = $1";
pub(crate) const DELETE_BROKER: &str =
    "DELETE FROM brokers WHERE node_id = $1 AND incarnation = $2";
pub(crate) const BROKERS: &str = "SELECT node_id, incarnation, host, port, rack, \
     lease_expires_ms, draining, topics_seen, assignments_seen, listeners, reader \
     FROM brokers \
     ORDER BY node_id";
/// Raises what node `$1` (incarnation `$2`) has followed to topics version `$3` and
/// assignments version `$4`, never lowering either.
pub(crate) const NOTE_FOLLOWED: &str = "UPDATE brokers SET \
     topics_seen = CASE WHEN topics_seen < $3 THEN $3 ELSE topics_seen END, \
     assignments_seen = CASE WHEN assignments_seen < $4 THEN $4 ELSE assignments_seen END \
     WHERE node_id = $1 AND incarnation = $2";

/// Takes or renews the controller lease for node `$1`, incarnation `$2`, until `$4`,
/// when it is free, lapsed at `$3`, held by a process its node no longer runs, or
/// already this one's; the epoch rises when the holder changes.
pub(crate) const CLAIM_CONTROLLER: &str = "UPDATE catalog SET \
     controller_epoch = CASE WHEN controller = $1 AND controller_incarnation = $2 \
       THEN controller_epoch ELSE controller_epoch + 1 END, \
     controller = $1, controller_incarnation = $2, controller_expires_ms = $4 \
     WHERE id = 1 AND (controller IS NULL OR controller_expires_ms < $3 \
       OR (controller = $1 AND controller_incarnation = $2) \
       OR NOT EXISTS (SELECT 1 FROM brokers b WHERE b.node_id = catalog.controller \
         AND b.incarnation = catalog.controller_incarnation))";
pub(crate) const CONTROLLER: &str = "SELECT controller, controller_incarnation, \
     controller_epoch, controller_expires_ms FROM catalog WHERE id = 1";

pub(crate) const LEADERSHIPS: &str = "SELECT topic_id, partition, leader, leader_epoch, \
     handover_to, leader_since_ms FROM partitions ORDER BY topic_id, partition";
pub(crate) const ASSIGNMENTS_VERSION: &str = "SELECT assignments_version FROM catalog WHERE id = 1";
/// Fences the controller's moves by its epoch `$1`.
pub(crate) const FENCE_CONTROLLER: &str = "UPDATE catalog \
     SET assignments_version = assignments_version + 1 \
     WHERE id = 1 AND controller_epoch = $1";

/// Parameters per row of [`move_partitions`]: topic id, partition, new leader, the
/// leader the move was planned from, the time of the move.
pub(crate) const MOVE_COLUMNS: usize = 5;

/// Gives each listed partition still led by the leader the move was planned from its
/// new leader and a raised epoch (and forgets a handover asked of it); a partition
/// never led before (leader -1) keeps its epoch (there is no earlier leader to fence),
/// so a new partition starts at 0 as in embedded mode.
pub(crate) fn move_partitions(rows: usize) -> String {
    format!(
        "UPDATE partitions SET leader = v.column3, handover_to = -1, \
         leader_since_ms = v.column5, leader_epoch = CASE \
         WHEN partitions.leader = -1 THEN partitions.leader_epoch \
         ELSE partitions.leader_epoch + 1 END \
         FROM (VALUES {}) AS v \
         WHERE partitions.topic_id = v.column1 AND partitions.partition = v.column2 \
         AND partitions.leader = v.column4 \
         RETURNING {RETURNING_LEADERSHIP}",
        crate::catalogue_sql::placeholders(rows, MOVE_COLUMNS)
    )
}

/// Asks the leader of each listed partition, if it is still the one the move was
/// planned from, to hand it over to the move's target (same columns as
/// [`move_partitions`]; the time is not used).
pub(crate) fn request_handovers(rows: usize) -> String {
    format!(
        "UPDATE partitions SET handover_to = v.column3 \
         FROM (VALUES {}) AS v \
         WHERE partitions.topic_id = v.column1 AND partitions.partition = v.column2 \
         AND partitions.leader = v.column4 \
         RETURNING {RETURNING_LEADERSHIP}",
        crate::catalogue_sql::placeholders(rows, MOVE_COLUMNS)
    )
}

/// A partition's columns as [`LeadershipRow`] reads them, after an update.
const RETURNING_LEADERSHIP: &str = "partitions.topic_id, partitions.partition, \
     partitions.leader, partitions.leader_epoch, partitions.handover_to, \
     partitions.leader_since_ms";

/// Asks partition (`$1`, `$2`)'s leader to hand it to node `$3` (`spool cluster
/// move`); nothing if it already leads it.
pub(crate) const REQUEST_MOVE: &str = "UPDATE partitions SET handover_to = $3 \
     WHERE topic_id = $1 AND partition = $2 AND leader <> $3 \
     RETURNING topic_id, partition, leader, leader_epoch, handover_to, leader_since_ms";

/// The leader `$3` (incarnation `$5`, still registered) of partition (`$1`, `$2`) at
/// epoch `$4` hands it to the node it was asked to (registered, not draining), under a
/// raised epoch, at `$6`.
pub(crate) const COMPLETE_HANDOVER: &str = "UPDATE partitions \
     SET leader = handover_to, leader_epoch = leader_epoch + 1, handover_to = -1, \
     leader_since_ms = $6 \
     WHERE topic_id = $1 AND partition = $2 AND leader = $3 AND leader_epoch = $4 \
     AND handover_to >= 0 AND EXISTS (SELECT 1 FROM brokers b \
       WHERE b.node_id = $3 AND b.incarnation = $5) \
     AND EXISTS (SELECT 1 FROM brokers t \
       WHERE t.node_id = partitions.handover_to AND NOT t.draining AND NOT t.reader) \
     RETURNING topic_id, partition, leader, leader_epoch, handover_to, leader_since_ms";

#[derive(sqlx::FromRow)]
pub(crate) struct BrokerRow {
    pub(crate) node_id: i32,
    pub(crate) incarnation: uuid::Uuid,
    pub(crate) host: String,
    pub(crate) port: i32,
    pub(crate) rack: Option<String>,
    pub(crate) lease_expires_ms: i64,
    pub(crate) draining: bool,
    pub(crate) topics_seen: i64,
    pub(crate) assignments_seen: i64,
    pub(crate) listeners: String,
    pub(crate) reader: bool,
}

impl From<BrokerRow> for crate::BrokerRecord {
    fn from(row: BrokerRow) -> crate::BrokerRecord {
        crate::BrokerRecord {
            node_id: row.node_id,
            incarnation: row.incarnation,
            host: row.host,
            port: row.port,
            rack: row.rack,
            lease_expires_ms: row.lease_expires_ms,
            draining: row.draining,
            topics_seen: row.topics_seen,
            assignments_seen: row.assignments_seen,
            listeners: crate::cluster::decode_endpoints(&row.listeners),
            reader: row.reader,
        }
    }
}

/// (holder node, incarnation, epoch, lease expiry) as [`CONTROLLER`] reads them.
pub(crate) type ControllerRow = (Option<i32>, Option<uuid::Uuid>, i64, i64);

/// The controller lease a row holds, if any broker holds it.
pub(crate) fn controller_lease(row: ControllerRow) -> Option<crate::ControllerLease> {
    let (controller, incarnation, epoch, lease_expires_ms) = row;
    controller.map(|node_id| crate::ControllerLease {
        node_id,
        incarnation,
        epoch,
        lease_expires_ms,
    })
}

/// (topic id, partition, leader, leader epoch, handover target, leader since) as
/// rows come back.
pub(crate) type LeadershipRow = (uuid::Uuid, i32, i32, i32, i32, i64);

pub(crate) fn leadership(row: LeadershipRow) -> crate::Leadership {
    let (topic_id, partition, leader, leader_epoch, handover_to, leader_since_ms) = row;
    crate::Leadership {
        key: crate::PartitionKey {
            topic_id,
            partition,
        },
        leader,
        leader_epoch,
        handover_to,
        leader_since_ms,
    }
}

/// Implements [`Cluster`](crate::Cluster) for a struct with a `pool` field.
macro_rules! impl_cluster {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::Cluster for $store {
            async fn register_broker(
                &self,
                lease: &$crate::BrokerLease,
                lease_ms: i64,
            ) -> $crate::Result<Vec<$crate::Leadership>> {
                use $crate::cluster_sql as sql;
                let mut tx = self.pool.begin().await?;
                // The catalog row first, as the controller's moves take it: the two
                // never wait for each other's locks in opposite orders.
                sqlx::query(sql::BUMP_ASSIGNMENTS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                // Partitions of topics from before leader epochs were kept get their
                // rows (at epoch 0, no leader), so the controller assigns them.
                sqlx::query($crate::sql::INSERT_ALL_PARTITIONS)
                    .execute(&mut *tx)
                    .await?;
                let now = $crate::sql::now_ms();
                let registered = sqlx::query(sql::UPSERT_BROKER)
                    .bind(lease.node_id)
                    .bind(lease.incarnation)
                    .bind(&lease.host)
                    .bind(lease.port)
                    .bind(lease.rack.as_deref())
                    .bind(now.saturating_add(lease_ms))
                    .bind($crate::cluster::encode_endpoints(&lease.listeners))
                    .bind(lease.instance)
                    .bind(now)
                    .bind(lease.reader)
                    .execute(&mut *tx)
                    .await?;
                if registered.rows_affected() == 0 {
                    let (host, port, expires_ms): (String, i32, i64) =
                        sqlx::query_as(sql::NODE_HOLDER)
                            .bind(lease.node_id)
                            .fetch_one(&mut *tx)
                            .await?;
                    return Err($crate::MetadataError::NodeInUse {
                        node_id: lease.node_id,
                        holder: format!("{host}:{port}"),
                        expires_in_ms: expires_ms.saturating_sub(now).max(0),
                    });
                }
                let rows: Vec<sql::LeadershipRow> = sqlx::query_as(sql::BUMP_NODE_EPOCHS)
                    .bind(lease.node_id)
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(rows.into_iter().map(sql::leadership).collect())
            }

            async fn bind_storage(&self, url: &str) -> $crate::Result<()> {
                use $crate::cluster_sql as sql;
                sqlx::query(sql::BIND_STORAGE)
                    .bind(url)
                    .execute(&self.pool)
                    .await?;
                let (bound,): (Option<String>,) = sqlx::query_as(sql::STORAGE_URL)
                    .fetch_one(&self.pool)
                    .await?;
                match bound {
                    Some(cluster) if cluster != url => Err($crate::MetadataError::OtherStorage {
                        cluster,
                        asked: url.to_owned(),
                    }),
                    _ => Ok(()),
                }
            }

            async fn bound_storage(&self) -> $crate::Result<Option<String>> {
                let (bound,): (Option<String>,) = sqlx::query_as($crate::cluster_sql::STORAGE_URL)
                    .fetch_one(&self.pool)
                    .await?;
                Ok(bound)
            }

            async fn renew_lease(
                &self,
                node_id: i32,
                incarnation: uuid::Uuid,
                lease_ms: i64,
            ) -> $crate::Result<bool> {
                let renewed = sqlx::query($crate::cluster_sql::RENEW_LEASE)
                    .bind(node_id)
                    .bind(incarnation)
                    .bind($crate::sql::now_ms().saturating_add(lease_ms))
                    .execute(&self.pool)
                    .await?;
                Ok(renewed.rows_affected() > 0)
            }

            async fn set_draining(&self, node_id: i32, draining: bool) -> $crate::Result<bool> {
                let set = sqlx::query($crate::cluster_sql::SET_DRAINING)
                    .bind(node_id)
                    .bind(draining)
                    .execute(&self.pool)
                    .await?;
                Ok(set.rows_affected() > 0)
            }

            async fn deregister_broker(
                &self,
                node_id: i32,
                incarnation: uuid::Uuid,
            ) -> $crate::Result<()> {
                sqlx::query($crate::cluster_sql::DELETE_BROKER)
                    .bind(node_id)
                    .bind(incarnation)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn note_followed(
                &self,
                node_id: i32,
                incarnation: uuid::Uuid,
                topics: i64,
                assignments: i64,
            ) -> $crate::Result<()> {
                sqlx::query($crate::cluster_sql::NOTE_FOLLOWED)
                    .bind(node_id)
                    .bind(incarnation)
                    .bind(topics)
                    .bind(assignments)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn brokers(&self) -> $crate::Result<Vec<$crate::BrokerRecord>> {
                let rows: Vec<$crate::cluster_sql::BrokerRow> =
                    sqlx::query_as($crate::cluster_sql::BROKERS)
                        .fetch_all(&self.pool)
                        .await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn claim_controller(
                &self,
                node_id: i32,
                incarnation: uuid::Uuid,
                lease_ms: i64,
            ) -> $crate::Result<Option<$crate::ControllerLease>> {
                use $crate::cluster_sql as sql;
                let now = $crate::sql::now_ms();
                let mut tx = self.pool.begin().await?;
                sqlx::query(sql::CLAIM_CONTROLLER)
                    .bind(node_id)
                    .bind(incarnation)
                    .bind(now)
                    .bind(now.saturating_add(lease_ms))
                    .execute(&mut *tx)
                    .await?;
                let row: sql::ControllerRow =
                    sqlx::query_as(sql::CONTROLLER).fetch_one(&mut *tx).await?;
                tx.commit().await?;
                Ok(sql::controller_lease(row))
            }

            async fn controller(&self) -> $crate::Result<Option<$crate::ControllerLease>> {
                let row: $crate::cluster_sql::ControllerRow =
                    sqlx::query_as($crate::cluster_sql::CONTROLLER)
                        .fetch_one(&self.pool)
                        .await?;
                Ok($crate::cluster_sql::controller_lease(row))
            }

            async fn leaderships(&self) -> $crate::Result<Vec<$crate::Leadership>> {
                let rows: Vec<$crate::cluster_sql::LeadershipRow> =
                    sqlx::query_as($crate::cluster_sql::LEADERSHIPS)
                        .fetch_all(&self.pool)
                        .await?;
                Ok(rows
                    .into_iter()
                    .map($crate::cluster_sql::leadership)
                    .collect())
            }

            async fn assignments_version(&self) -> $crate::Result<i64> {
                Ok(sqlx::query_scalar($crate::cluster_sql::ASSIGNMENTS_VERSION)
                    .fetch_one(&self.pool)
                    .await?)
            }

            async fn move_partitions(
                &self,
                controller_epoch: i64,
                moves: &[$crate::PartitionMove],
            ) -> $crate::Result<Option<Vec<$crate::Leadership>>> {
                Ok($crate::cluster_sql::apply_moves!(
                    self.pool,
                    sqlx::query($crate::cluster_sql::FENCE_CONTROLLER).bind(controller_epoch),
                    moves,
                    $crate::cluster_sql::move_partitions
                ))
            }

            async fn assign_new_partitions(
                &self,
                assignments: &[($crate::PartitionKey, i32)],
            ) -> $crate::Result<Vec<$crate::Leadership>> {
                let moves: Vec<$crate::PartitionMove> = assignments
                    .iter()
                    .map(|(key, to)| $crate::PartitionMove {
                        key: *key,
                        from: -1,
                        to: *to,
                    })
                    .collect();
                let assigned = $crate::cluster_sql::apply_moves!(
                    self.pool,
                    sqlx::query($crate::cluster_sql::BUMP_ASSIGNMENTS_VERSION),
                    &moves,
                    $crate::cluster_sql::move_partitions
                );
                Ok(assigned.unwrap_or_default())
            }

            async fn request_handovers(
                &self,
                controller_epoch: i64,
                moves: &[$crate::PartitionMove],
            ) -> $crate::Result<Option<Vec<$crate::Leadership>>> {
                Ok($crate::cluster_sql::apply_moves!(
                    self.pool,
                    sqlx::query($crate::cluster_sql::FENCE_CONTROLLER).bind(controller_epoch),
                    moves,
                    $crate::cluster_sql::request_handovers
                ))
            }

            async fn request_move(
                &self,
                key: $crate::PartitionKey,
                to: i32,
            ) -> $crate::Result<Option<$crate::Leadership>> {
                Ok($crate::cluster_sql::change_leadership!(
                    self.pool,
                    $crate::cluster_sql::REQUEST_MOVE,
                    key.topic_id,
                    key.partition,
                    to
                ))
            }

            async fn complete_handover(
                &self,
                node_id: i32,
                incarnation: uuid::Uuid,
                key: $crate::PartitionKey,
                leader_epoch: i32,
            ) -> $crate::Result<Option<$crate::Leadership>> {
                Ok($crate::cluster_sql::change_leadership!(
                    self.pool,
                    $crate::cluster_sql::COMPLETE_HANDOVER,
                    key.topic_id,
                    key.partition,
                    node_id,
                    leader_epoch,
                    incarnation,
                    $crate::sql::now_ms()
                ))
            }
        }
    };
}

pub(crate) use impl_cluster;

/// Runs the controller's `moves` through `statement` (one of [`move_partitions`] and
/// [`request_handovers`]) in one transaction on `$pool`, fenced by the controller
/// epoch: `None` once another controller took over, else the partitions changed.
macro_rules! apply_moves {
    ($pool:expr, $fence:expr, $moves:expr, $statement:path) => {{
        use $crate::cluster_sql as sql;
        let mut tx = $pool.begin().await?;
        let fenced = $fence.execute(&mut *tx).await?;
        let applied = if fenced.rows_affected() == 0 {
            None
        } else {
            let now = $crate::sql::now_ms();
            let mut changed = Vec::with_capacity($moves.len());
            for chunk in $moves.chunks($crate::catalogue_sql::ROWS_PER_STATEMENT) {
                let text = $statement(chunk.len());
                let mut query = sqlx::query_as::<_, sql::LeadershipRow>(&text);
                for planned in chunk {
                    query = query
                        .bind(planned.key.topic_id)
                        .bind(planned.key.partition)
                        .bind(planned.to)
                        .bind(planned.from)
                        .bind(now);
                }
                changed.extend(
                    query
                        .fetch_all(&mut *tx)
                        .await?
                        .into_iter()
                        .map(sql::leadership),
                );
            }
            Some(changed)
        };
        tx.commit().await?;
        applied
    }};
}

pub(crate) use apply_moves;

/// Runs `statement` (an update of one partition's leadership returning its row) with
/// `binds` on `$pool`, raising the assignments version with it (the catalog row
/// first, the lock order of every leadership change); commits only if a partition
/// changed, and returns it.
macro_rules! change_leadership {
    ($pool:expr, $statement:expr, $($bind:expr),+ $(,)?) => {{
        use $crate::cluster_sql as sql;
        let mut tx = $pool.begin().await?;
        sqlx::query(sql::BUMP_ASSIGNMENTS_VERSION)
            .execute(&mut *tx)
            .await?;
        let row: Option<sql::LeadershipRow> = sqlx::query_as($statement)
            $(.bind($bind))+
            .fetch_optional(&mut *tx)
            .await?;
        if row.is_some() {
            tx.commit().await?;
        }
        row.map(sql::leadership)
    }};
}

pub(crate) use change_leadership;
