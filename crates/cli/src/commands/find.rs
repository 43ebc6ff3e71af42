//! `spool find TOPIC --key K | --header NAME=V | --field PATH=V`: the records whose
//! key, header or JSON field has a value, through the topic's index (the admin API's
//! `GET /api/topics/{topic}/messages`, docs/index.md), printed as `spool consume`
//! prints records.

use std::io::Write;
use std::time::Duration;

use base64::Engine;
use rdkafka::Timestamp;
use rdkafka::message::{Header, OwnedHeaders, OwnedMessage};
use serde_json::Value;

use crate::admin_api::{AdminArgs, admin_url, call, percent_encoded};
use crate::client::ClientArgs;
use crate::commands::consume::record_json;
use crate::commands::template::Template;
use crate::error::CliError;
use crate::output::Format;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["key", "header", "field"])))]
pub(crate) struct FindArgs {
    topic: String,
    /// Records with this key (the topic indexes `key`).
    #[arg(long)]
    key: Option<String>,
    /// Records with this header value, NAME=VALUE (the topic indexes `header:NAME`).
    #[arg(long, value_name = "NAME=VALUE")]
    header: Option<String>,
    /// Records whose JSON value has this field value, PATH=VALUE with PATH as in
    /// `value:$.PATH` (the topic indexes it), e.g. `user.id=42`.
    #[arg(long, value_name = "PATH=VALUE")]
    field: Option<String>,
    /// Only records at or after this time (ms since the epoch).
    #[arg(long)]
    from: Option<i64>,
    /// Only records at or before this time (ms since the epoch).
    #[arg(long)]
    to: Option<i64>,
    /// Only this partition.
    #[arg(short, long)]
    partition: Option<i32>,
    /// At most this many records (1 to 1000).
    #[arg(short = 'n', long, default_value_t = 100)]
    num: u32,
    /// Oldest first (the default is newest first).
    #[arg(long)]
    oldest: bool,
    /// How each record is printed: %t %p %o %k %v %T %h %K %S (see docs/cli.md).
    #[arg(short = 'f', long, default_value = r"%v\n")]
    template: String,
    #[command(flatten)]
    admin: AdminArgs,
}

pub(crate) fn run(args: &FindArgs, client: &ClientArgs) -> Result<(), CliError> {
    let template = Template::parse(&args.template).map_err(CliError::Usage)?;
    let url = admin_url(args.admin.admin_url.as_deref(), &client.brokers);
    let path = format!(
        "/api/topics/{}/messages?{}",
        percent_encoded(&args.topic),
        query(args)?
    );
    let answer = call(
        &url,
        "GET",
        &path,
        None,
        Duration::from_secs(client.timeout.max(1)),
    )?;
    let mut out = std::io::stdout().lock();
    for found in answer["messages"].as_array().into_iter().flatten() {
        let message = owned(&args.topic, found)?;
        let mut line = Vec::new();
        match client.format {
            Format::Human => template.render(&message, &mut line),
            Format::Json => {
                line.extend_from_slice(record_json(&message).to_string().as_bytes());
                line.push(b'\n');
            }
        }
        out.write_all(&line)
            .map_err(|e| CliError::Failed(format!("writing out: {e}")))?;
    }
    out.flush()
        .map_err(|e| CliError::Failed(format!("writing out: {e}")))
}

/// The query string of the search.
fn query(args: &FindArgs) -> Result<String, CliError> {
    let pair = |text: &str, what: &str| {
        text.split_once('=')
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .ok_or_else(|| CliError::Usage(format!("--{what} {text}: expected NAME=VALUE")))
    };
    let (name, value) = match (&args.key, &args.header, &args.field) {
        (Some(key), _, _) => ("key".to_owned(), key.clone()),
        (_, Some(header), _) => {
            let (name, value) = pair(header, "header")?;
            (format!("header.{name}"), value)
        }
        (_, _, Some(field)) => {
            let (path, value) = pair(field, "field")?;
            let path = path.strip_prefix("$.").unwrap_or(&path).to_owned();
            (format!("field.{path}"), value)
        }
        _ => return Err(CliError::Usage("give --key, --header or --field".into())),
    };
    let mut query = vec![
        format!("{}={}", percent_encoded(&name), percent_encoded(&value)),
        format!("limit={}", args.num),
        format!("order={}", if args.oldest { "oldest" } else { "newest" }),
        "encoding=base64".to_owned(),
    ];
    query.extend(args.partition.map(|p| format!("partition={p}")));
    query.extend(args.from.map(|t| format!("from={t}")));
    query.extend(args.to.map(|t| format!("to={t}")));
    Ok(query.join("&"))
}

/// A found record as a Kafka message, for the consume command's printing.
fn owned(topic: &str, found: &Value) -> Result<OwnedMessage, CliError> {
    let bytes = |value: &Value| -> Result<Option<Vec<u8>>, CliError> {
        if value.is_null() {
            return Ok(None);
        }
        let data = value["data"].as_str().unwrap_or_default();
        let decoded = match value["encoding"].as_str() {
            Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| CliError::Failed(format!("the admin API's answer: {e}")))?,
            _ => data.as_bytes().to_vec(),
        };
        Ok(Some(decoded))
    };
    let mut headers = OwnedHeaders::new();
    for header in found["headers"].as_array().into_iter().flatten() {
        let value = bytes(&header["value"])?;
        headers = headers.insert(Header {
            key: header["key"].as_str().unwrap_or_default(),
            value: value.as_deref(),
        });
    }
    Ok(OwnedMessage::new(
        bytes(&found["value"])?,
        bytes(&found["key"])?,
        topic.to_owned(),
        Timestamp::CreateTime(found["timestamp"].as_i64().unwrap_or(-1)),
        i32::try_from(found["partition"].as_i64().unwrap_or(-1)).unwrap_or(-1),
        found["offset"].as_i64().unwrap_or(-1),
        Some(headers),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: FindArgs,
    }

    fn parsed(words: &[&str]) -> Result<String, String> {
        let cli = Cli::try_parse_from(std::iter::once("find").chain(words.iter().copied()))
            .map_err(|e| e.to_string())?;
        query(&cli.args).map_err(|e| e.to_string())
    }

    #[test]
    fn each_form_becomes_the_apis_parameter() {
        assert_eq!(
            parsed(&["t", "--key", "order 7"]).ok().as_deref(),
            Some("key=order%207&limit=100&order=newest&encoding=base64")
        );
        assert_eq!(
            parsed(&[
                "t",
                "--header",
                "trace=a=b",
                "--oldest",
                "-n",
                "5",
                "-p",
                "2"
            ])
            .ok()
            .as_deref(),
            Some("header.trace=a%3Db&limit=5&order=oldest&encoding=base64&partition=2")
        );
        assert_eq!(
            parsed(&["t", "--field", "$.user.id=42", "--from", "1", "--to", "9"])
                .ok()
                .as_deref(),
            Some("field.user.id=42&limit=100&order=newest&encoding=base64&from=1&to=9")
        );
        assert!(parsed(&["t"]).is_err());
        assert!(parsed(&["t", "--key", "a", "--header", "h=v"]).is_err());
        assert!(parsed(&["t", "--header", "novalue"]).is_err());
    }
}
