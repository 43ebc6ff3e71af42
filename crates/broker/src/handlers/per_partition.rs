//! A request's partitions, worked on in one task of the blocking pool: the seam
//! between the handlers that touch many partitions and the partitions' blocking work.
//! In shared-storage mode the tails that work needs are opened first, here (async:
//! the catalogue is read), so that it only finds them.

use std::sync::Arc;

use kafka_protocol::messages::TopicName;
use spool_security::acl::Operation;
use spool_security::authorizer::Access;

use crate::partitions::on_blocking_pool;
use crate::shared::Shared;
use crate::topics::Topic;

/// One topic of a request: its name and, per partition, its index and what the
/// request asks of it.
pub(crate) type Asked<N, R> = Vec<(N, Vec<(i32, R)>)>;

/// The topic named `name` if `access` may do `operation` on it: the partitions a
/// request may have opened.
pub(crate) fn allowed_topic(
    shared: &Shared,
    access: &Access,
    operation: Operation,
    name: &TopicName,
) -> Option<Arc<Topic>> {
    if !access.topic(operation, name.0.as_str()) {
        return None;
    }
    shared.topics().get(name.0.as_str())
}

/// Runs `work` for every partition of a request, all in one task on the blocking
/// pool (one hand-off per request, not per partition). Before, in shared-storage
/// mode, it opens the tails of the topics `opens` names (`None`: the work refuses the
/// partition before it looks for it, e.g. not authorized). Answers keep the
/// request's order; if the task fails, every partition gets the interrupted task's
/// code.
pub(crate) async fn per_partition<N, R, T>(
    shared: &Arc<Shared>,
    asked: Asked<N, R>,
    opens: impl Fn(&N, &R) -> Option<Arc<Topic>>,
    work: impl Fn(&Shared, &N, i32, R) -> Result<T, i16> + Send + 'static,
) -> Asked<N, Result<T, i16>>
where
    N: Clone + Send + 'static,
    R: Send + 'static,
    T: Send + 'static,
{
    let skeleton: Vec<(N, Vec<i32>)> = asked
        .iter()
        .map(|(name, partitions)| (name.clone(), partitions.iter().map(|(i, _)| *i).collect()))
        .collect();
    if shared.storage().is_some() {
        let wanted: Vec<(Arc<Topic>, i32)> = asked
            .iter()
            .flat_map(|(name, partitions)| {
                partitions
                    .iter()
                    .filter_map(|(index, what)| Some((opens(name, what)?, *index)))
            })
            .collect();
        shared.partitions().open_tails(wanted).await;
    }
    let shared = shared.clone();
    let done = on_blocking_pool(move || {
        asked
            .into_iter()
            .map(|(name, partitions)| {
                let answers = partitions
                    .into_iter()
                    .map(|(index, what)| (index, work(&shared, &name, index, what)))
                    .collect();
                (name, answers)
            })
            .collect()
    })
    .await;
    done.unwrap_or_else(|error| {
        skeleton
            .into_iter()
            .map(|(name, indexes)| {
                let failed = indexes
                    .into_iter()
                    .map(|i| (i, Err(error.code())))
                    .collect();
                (name, failed)
            })
            .collect()
    })
}
