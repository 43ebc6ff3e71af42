//! Output templates for consumed records, in the manner of kcat's `-f`:
//! `%t` topic, `%p` partition, `%o` offset, `%k` key, `%v` value, `%T` timestamp (ms),
//! `%h` headers (`k=v,k=v`), `%K` key length, `%S` value length, `%%` a percent sign;
//! `\n`, `\t`, `\r` and `\\` escapes. A missing key or value prints as nothing.

use rdkafka::Message;
use rdkafka::message::Headers;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(Vec<u8>),
    Topic,
    Partition,
    Offset,
    Key,
    Value,
    Timestamp,
    Headers,
    KeyLength,
    ValueLength,
}

/// A parsed template.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    pub(crate) fn parse(text: &str) -> Result<Template, String> {
        let mut pieces = Vec::new();
        let mut literal = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            let piece = match c {
                '%' => match chars.next() {
                    Some('t') => Piece::Topic,
                    Some('p') => Piece::Partition,
                    Some('o') => Piece::Offset,
                    Some('k') => Piece::Key,
                    Some('v' | 's') => Piece::Value,
                    Some('T') => Piece::Timestamp,
                    Some('h') => Piece::Headers,
                    Some('K') => Piece::KeyLength,
                    Some('S') => Piece::ValueLength,
                    Some('%') => {
                        literal.push(b'%');
                        continue;
                    }
                    other => {
                        return Err(format!(
                            "unknown template field %{} (known: %t %p %o %k %v %T %h %K %S %%)",
                            other.map(String::from).unwrap_or_default()
                        ));
                    }
                },
                '\\' => {
                    let escaped = match chars.next() {
                        Some('n') => '\n',
                        Some('t') => '\t',
                        Some('r') => '\r',
                        Some('\\') => '\\',
                        other => {
                            return Err(format!(
                                "unknown escape \\{} (known: \\n \\t \\r \\\\)",
                                other.map(String::from).unwrap_or_default()
                            ));
                        }
                    };
                    let mut buffer = [0u8; 4];
                    literal.extend_from_slice(escaped.encode_utf8(&mut buffer).as_bytes());
                    continue;
                }
                c => {
                    let mut buffer = [0u8; 4];
                    literal.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
                    continue;
                }
            };
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(piece);
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(Template { pieces })
    }

    /// Appends the record as the template says to `out`.
    pub(crate) fn render<M: Message>(&self, message: &M, out: &mut Vec<u8>) {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(bytes) => out.extend_from_slice(bytes),
                Piece::Topic => out.extend_from_slice(message.topic().as_bytes()),
                Piece::Partition => {
                    out.extend_from_slice(message.partition().to_string().as_bytes())
                }
                Piece::Offset => out.extend_from_slice(message.offset().to_string().as_bytes()),
                Piece::Key => out.extend_from_slice(message.key().unwrap_or_default()),
                Piece::Value => out.extend_from_slice(message.payload().unwrap_or_default()),
                Piece::Timestamp => {
                    let millis = message.timestamp().to_millis().unwrap_or(-1);
                    out.extend_from_slice(millis.to_string().as_bytes());
                }
                Piece::Headers => {
                    if let Some(headers) = message.headers() {
                        for (at, header) in headers.iter().enumerate() {
                            if at > 0 {
                                out.push(b',');
                            }
                            out.extend_from_slice(header.key.as_bytes());
                            out.push(b'=');
                            out.extend_from_slice(header.value.unwrap_or_default());
                        }
                    }
                }
                Piece::KeyLength => {
                    let len = message.key().map_or(-1, |k| k.len() as i64);
                    out.extend_from_slice(len.to_string().as_bytes());
                }
                Piece::ValueLength => {
                    let len = message.payload().map_or(-1, |v| v.len() as i64);
                    out.extend_from_slice(len.to_string().as_bytes());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rdkafka::Timestamp;
    use rdkafka::message::{Header, OwnedHeaders, OwnedMessage};

    use super::*;

    #[test]
    fn fields_and_escapes_render() {
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "a",
                value: Some("1"),
            })
            .insert(Header {
                key: "b",
                value: Some("2"),
            });
        let message = OwnedMessage::new(
            Some(b"value".to_vec()),
            Some(b"key".to_vec()),
            "t".to_string(),
            Timestamp::CreateTime(1234),
            3,
            42,
            Some(headers),
        );
        let template = Template::parse(r"%t/%p@%o %k=%v %T [%h] %K %S 100%%\n").unwrap();
        let mut out = Vec::new();
        template.render(&message, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "t/3@42 key=value 1234 [a=1,b=2] 3 5 100%\n"
        );
        assert!(Template::parse("%x").is_err());
        assert!(Template::parse(r"\q").is_err());
    }
}
