//! The query string of a message search, `GET /api/topics/{topic}/messages`
//! (docs/index.md): one of `key=V`, `header.NAME=V` or `field.PATH=V`, with
//! `partition`, `from` and `to` (epoch ms), `limit`, `order` (`newest` or
//! `oldest`) and `encoding` (how keys and values come back).

use std::collections::HashMap;

use crate::api::MAX_MESSAGES;
use crate::{ApiError, Encoding, MessageSearch};

/// Records a search returns when the request does not say.
const DEFAULT_FOUND: usize = 100;

/// Reads a search from the query string; an error says which parameter is wrong.
pub(crate) fn search_query(
    topic: String,
    params: &HashMap<String, String>,
) -> Result<MessageSearch, ApiError> {
    let number = |name: &str| -> Result<Option<i64>, ApiError> {
        params
            .get(name)
            .map(|text| {
                text.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!("{name}={text}: expected a whole number"))
                })
            })
            .transpose()
    };
    let mut wanted = Vec::new();
    for (name, value) in params {
        let field = if name == "key" {
            "key".to_owned()
        } else if let Some(header) = name.strip_prefix("header.") {
            format!("header:{header}")
        } else if let Some(path) = name.strip_prefix("field.") {
            if path.starts_with('$') {
                format!("value:{path}")
            } else {
                format!("value:$.{path}")
            }
        } else {
            continue;
        };
        wanted.push((field, value.as_bytes().to_vec()));
    }
    let (field, value) = match wanted.len() {
        1 => wanted.remove(0),
        0 => {
            return Err(ApiError::bad_request(
                "give what to find: key=V, header.NAME=V or field.PATH=V",
            ));
        }
        _ => {
            return Err(ApiError::bad_request(
                "give one of key=V, header.NAME=V or field.PATH=V, not several",
            ));
        }
    };
    let partition = number("partition")?
        .map(|p| {
            i32::try_from(p)
                .ok()
                .filter(|p| *p >= 0)
                .ok_or_else(|| ApiError::bad_request(format!("partition={p}: expected 0 or more")))
        })
        .transpose()?;
    let (from, to) = (number("from")?, number("to")?);
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        return Err(ApiError::bad_request(format!(
            "from={from} is after to={to}"
        )));
    }
    let limit = match number("limit")? {
        None => DEFAULT_FOUND,
        Some(limit) => usize::try_from(limit)
            .ok()
            .filter(|limit| (1..=MAX_MESSAGES).contains(limit))
            .ok_or_else(|| {
                ApiError::bad_request(format!("limit={limit}: expected 1 to {MAX_MESSAGES}"))
            })?,
    };
    let newest_first = match params.get("order").map(String::as_str) {
        None | Some("newest") => true,
        Some("oldest") => false,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "order={other}: expected newest or oldest"
            )));
        }
    };
    let encoding = match params.get("encoding").map(String::as_str) {
        None | Some("auto") => Encoding::Auto,
        Some("base64") => Encoding::Base64,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "encoding={other}: expected auto or base64"
            )));
        }
    };
    Ok(MessageSearch {
        topic,
        field,
        value,
        partition,
        from,
        to,
        limit,
        newest_first,
        encoding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Result<MessageSearch, ApiError> {
        let params = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        search_query("orders".to_owned(), &params)
    }

    #[test]
    fn each_form_names_its_field() {
        let field = |pairs: &[(&str, &str)]| query(pairs).map(|s| (s.field, s.value));
        assert_eq!(
            field(&[("key", "o-1")]).ok(),
            Some(("key".into(), b"o-1".to_vec()))
        );
        assert_eq!(
            field(&[("header.trace-id", "t")]).ok(),
            Some(("header:trace-id".into(), b"t".to_vec()))
        );
        assert_eq!(
            field(&[("field.user.id", "42")]).ok(),
            Some(("value:$.user.id".into(), b"42".to_vec()))
        );
        assert_eq!(
            field(&[("field.$.a[0]", "x")]).ok(),
            Some(("value:$.a[0]".into(), b"x".to_vec()))
        );
    }

    #[test]
    fn the_other_parameters_are_read_and_checked() {
        let search = query(&[
            ("key", "k"),
            ("partition", "2"),
            ("from", "10"),
            ("to", "20"),
            ("limit", "5"),
            ("order", "oldest"),
        ]);
        let search = search.unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(search.partition, Some(2));
        assert_eq!(
            (search.from, search.to, search.limit),
            (Some(10), Some(20), 5)
        );
        assert!(!search.newest_first);
        assert!(query(&[("key", "k")]).is_ok_and(|s| s.newest_first && s.limit == 100));
        for bad in [
            &[][..],
            &[("key", "a"), ("header.h", "b")],
            &[("key", "a"), ("limit", "0")],
            &[("key", "a"), ("limit", "1001")],
            &[("key", "a"), ("partition", "-1")],
            &[("key", "a"), ("from", "9"), ("to", "8")],
            &[("key", "a"), ("order", "up")],
            &[("key", "a"), ("from", "soon")],
        ] {
            assert!(query(bad).is_err(), "{bad:?}");
        }
    }
}
