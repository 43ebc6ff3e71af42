//! A request's partitions, worked on in one task of the blocking pool: the seam
//! between the handlers that touch many partitions and the partitions' blocking work.

use std::sync::Arc;

use crate::partitions::on_blocking_pool;
use crate::shared::Shared;

/// One topic of a request: its name and, per partition, its index and what the
/// request asks of it.
pub(crate) type Asked<N, R> = Vec<(N, Vec<(i32, R)>)>;

/// Runs `work` for every partition of a request, all in one task on the blocking
/// pool (one hand-off per request, not per partition). Answers keep the request's
/// order; if the task fails, every partition gets the interrupted task's code.
pub(crate) async fn per_partition<N, R, T>(
    shared: &Arc<Shared>,
    asked: Asked<N, R>,
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
