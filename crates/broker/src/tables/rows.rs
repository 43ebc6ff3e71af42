//! A partition's batches as table rows: committed records only (control batches and
//! aborted transactions' batches left out, their offsets still covered), each with
//! its offset and timestamp.

use spool_log::{AbortedTxn, is_aborted_batch};

use spool_protocol::batch::BatchFrames;
use spool_protocol::keyed::BatchRecords;
use spool_tables::{Header, Row};

/// The most one batch may inflate to (as the write path allows).
const MAX_INFLATED_BATCH: usize = 256 << 20;

/// The rows of `partition` in `bytes` (whole batches read from `from`; records
/// before `from` are left out) up to `limit`, and the offset after the last batch
/// taken. A batch that does not decode is an error naming its offset.
pub(super) fn decode(
    bytes: &[u8],
    aborted: &[AbortedTxn],
    partition: i32,
    from: i64,
    limit: i64,
) -> Result<(Vec<Row>, i64), String> {
    let mut rows = Vec::new();
    let mut next = from;
    for frame in BatchFrames::new(bytes) {
        let Ok((header, batch)) = frame else { break };
        if header.base_offset.0 >= limit {
            break;
        }
        next = header.next_offset().0;
        if header.is_control() || is_aborted_batch(aborted, &header) {
            continue;
        }
        let unreadable = |error: &dyn std::fmt::Display| {
            format!(
                "the batch at offset {} does not decode: {error}",
                header.base_offset.0
            )
        };
        let inflated = BatchRecords::read(batch, MAX_INFLATED_BATCH).map_err(|e| unreadable(&e))?;
        let records = inflated.records().map_err(|e| unreadable(&e))?;
        for record in &records {
            let offset = header.base_offset.0 + record.offset_delta;
            if offset < from {
                continue;
            }
            let timestamp_ms = header.record_timestamp(record.timestamp_delta);
            let headers = record
                .headers()
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| Header {
                    key: String::from_utf8_lossy(key).into_owned(),
                    value: value.map(<[u8]>::to_vec),
                })
                .collect();
            rows.push(Row {
                partition,
                offset,
                timestamp_ms,
                key: record.key.map(<[u8]>::to_vec),
                value: record.value.map(<[u8]>::to_vec),
                headers,
            });
        }
    }
    Ok((rows, next))
}
