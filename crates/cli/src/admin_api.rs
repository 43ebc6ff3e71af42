//! What the CLI asks of a broker's HTTP admin API: the few things the Kafka protocol
//! has no request for (the delayed records a partition holds). Optional: when the API
//! cannot be reached, the commands show what the Kafka protocol gives and say so.

use std::time::Duration;

/// The admin API's address: `--admin-url`, or the first bootstrap broker's host on
/// the admin listener's default port.
pub(crate) fn admin_url(explicit: Option<&str>, brokers: &str) -> String {
    if let Some(url) = explicit {
        return url.trim_end_matches('/').to_owned();
    }
    let first = brokers.split(',').next().unwrap_or("127.0.0.1:9092").trim();
    let host = first.rsplit_once(':').map_or(first, |(host, _)| host);
    format!("http://{host}:{DEFAULT_ADMIN_PORT}")
}

/// `admin.listen`'s default port.
const DEFAULT_ADMIN_PORT: u16 = 9644;

/// A partition's pending delayed records, as the admin API reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Delayed {
    pub(crate) pending: u64,
    /// When the next one is due (epoch ms).
    pub(crate) next_due_ms: Option<i64>,
}

/// Each partition's pending delayed records (by partition index; `None` for a
/// partition of a topic without delayed delivery), or why they are not known.
pub(crate) fn delayed(
    url: &str,
    topic: &str,
    timeout: Duration,
) -> Result<Vec<(i32, Option<Delayed>)>, String> {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .build()
        .new_agent();
    let address = format!("{url}/api/topics/{topic}");
    let body = agent
        .get(&address)
        .call()
        .map_err(|error| format!("{address}: {error}"))?
        .body_mut()
        .read_to_string()
        .map_err(|error| format!("{address}: {error}"))?;
    let topic: serde_json::Value =
        serde_json::from_str(&body).map_err(|error| format!("{address}: {error}"))?;
    Ok(topic["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|partition| {
            let index = i32::try_from(partition["partition"].as_i64()?).ok()?;
            let delayed = &partition["delayed"];
            let pending = delayed["pending"].as_u64().map(|pending| Delayed {
                pending,
                next_due_ms: delayed["next_due_ms"].as_i64(),
            });
            Some((index, pending))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_url_defaults_to_the_first_brokers_host() {
        assert_eq!(
            admin_url(None, "10.0.0.5:9092,other:9092"),
            "http://10.0.0.5:9644"
        );
        assert_eq!(admin_url(None, "[::1]:9092"), "http://[::1]:9644");
        assert_eq!(
            admin_url(Some("http://admin:80/"), "x:1"),
            "http://admin:80"
        );
    }
}
