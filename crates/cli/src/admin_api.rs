//! What the CLI asks of a broker's HTTP admin API: the things the Kafka protocol has
//! no request for (the delayed records a partition holds, transaction checkers,
//! mirror links). For the delayed records it is optional: when the API cannot be
//! reached, the commands show what the Kafka protocol gives and say so.

use std::time::Duration;

use serde_json::Value;

use crate::error::CliError;

/// The admin API's address: `--admin-url`, or the first bootstrap broker's host on
/// the admin listener's default port.
pub(crate) fn admin_url(explicit: Option<&str>, brokers: &str) -> String {
    http_url(explicit, brokers, DEFAULT_ADMIN_PORT)
}

/// `explicit`, or `http://` the first bootstrap broker's host on `port` (a broker's
/// HTTP listeners: the admin API, the schema registry).
pub(crate) fn http_url(explicit: Option<&str>, brokers: &str, port: u16) -> String {
    if let Some(url) = explicit {
        return url.trim_end_matches('/').to_owned();
    }
    let first = brokers.split(',').next().unwrap_or("127.0.0.1:9092").trim();
    let host = first.rsplit_once(':').map_or(first, |(host, _)| host);
    format!("http://{host}:{port}")
}

#[derive(Debug, clap::Args)]
pub(crate) struct AdminArgs {
    /// The broker's admin API (default: the first broker's host, port 9644).
    #[arg(long)]
    pub(crate) admin_url: Option<String>,
}

/// Calls the admin API; its JSON answer, or its refusal as an error.
pub(crate) fn call(
    base: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
    timeout: Duration,
) -> Result<Value, CliError> {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .new_agent();
    let address = format!("{base}{path}");
    let unreachable = |error: ureq::Error| {
        CliError::Failed(format!(
            "cannot reach the admin API at {address}: {error} (set --admin-url)"
        ))
    };
    let mut response = match (method, body) {
        ("POST", Some(body)) => agent
            .post(&address)
            .content_type("application/json")
            .send(body.to_string())
            .map_err(unreachable)?,
        ("DELETE", _) => agent.delete(&address).call().map_err(unreachable)?,
        _ => agent.get(&address).call().map_err(unreachable)?,
    };
    let status = response.status();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|error| CliError::Failed(format!("{address}: {error}")))?;
    let value: Value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text)
            .map_err(|error| CliError::Failed(format!("{address}: {error}")))?
    };
    if status.is_success() {
        return Ok(value);
    }
    let message = value["message"].as_str().unwrap_or(&text).to_owned();
    // The schema registry answers some refusals with 404 and a code of its own
    // (40404–40409: soft-deleted, not soft-deleted first, …): refusals, not "not
    // found".
    let refused = value["error_code"]
        .as_u64()
        .is_some_and(|code| code > 40403);
    if status.as_u16() == 404 && !refused {
        Err(CliError::NotFound(message))
    } else {
        Err(CliError::Failed(message))
    }
}

/// `text` as one URL path segment.
pub(crate) fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(byte).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
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

/// The admin API's view of `topic` (`GET /api/topics/{topic}`), as JSON.
fn topic_detail(url: &str, topic: &str, timeout: Duration) -> Result<serde_json::Value, String> {
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
    serde_json::from_str(&body).map_err(|error| format!("{address}: {error}"))
}

/// Each partition's delayed records (`None` for a partition the API reports none
/// of), from the admin API at `url`.
pub(crate) fn delayed(
    url: &str,
    topic: &str,
    timeout: Duration,
) -> Result<Vec<(i32, Option<Delayed>)>, String> {
    let topic = topic_detail(url, topic, timeout)?;
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

/// A table topic's table (its lag, files and rows written, errors) as the admin API
/// at `url` reports it (docs/tables.md); `None` when it reports no table.
pub(crate) fn table(
    url: &str,
    topic: &str,
    timeout: Duration,
) -> Result<Option<serde_json::Value>, String> {
    let mut topic = topic_detail(url, topic, timeout)?;
    Ok(Some(topic["table"].take()).filter(|table| !table.is_null()))
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

    #[test]
    fn a_prefix_is_one_path_segment() {
        assert_eq!(percent_encoded("orders-eu.1_~"), "orders-eu.1_~");
        assert_eq!(percent_encoded("a/b c%"), "a%2Fb%20c%25");
    }
}
