//! Listeners by Kafka's names: `listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://0.0.0.0:9093`,
//! `advertised.listeners` in the same form, and `listener.security.protocol.map` for
//! listeners named otherwise than their protocol (`CLIENT:SASL_SSL,INTERNAL:PLAINTEXT`).

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;

/// How a listener's connections are secured (Kafka's `security.protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    fn from_name(name: &str) -> Option<SecurityProtocol> {
        SecurityProtocol::ALL
            .into_iter()
            .find(|protocol| protocol.name().eq_ignore_ascii_case(name))
    }

    /// Whether connections begin with a TLS handshake.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether clients must authenticate with SASL before anything else.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One listener: its name, where it listens, how it is secured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub address: SocketAddr,
    pub protocol: SecurityProtocol,
}

/// Parses `listeners` with the protocol map (`listener.security.protocol.map`; a name
/// that is a protocol's needs no entry). Names are unique, addresses too.
pub fn parse_listeners(
    listeners: &str,
    protocol_map: &BTreeMap<String, SecurityProtocol>,
) -> Result<Vec<Listener>, String> {
    let mut parsed: Vec<Listener> = Vec::new();
    for (name, host, port) in parse_endpoints(listeners)? {
        let protocol = protocol_map
            .get(&name)
            .copied()
            .or_else(|| SecurityProtocol::from_name(&name))
            .ok_or_else(|| {
                format!(
                    "listener {name}: not a security protocol's name, and not in listener.security.protocol.map"
                )
            })?;
        let host = if host.is_empty() {
            "0.0.0.0"
        } else {
            host.as_str()
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let address: SocketAddr = format!("{}:{port}", bracketed(host))
            .parse()
            .map_err(|_| format!("listener {name}: {host}:{port} is not an IP address and port"))?;
        if parsed.iter().any(|other| other.name == name) {
            return Err(format!("listener {name} is given twice"));
        }
        if parsed
            .iter()
            .any(|other| other.address == address && address.port() != 0)
        {
            return Err(format!("two listeners on {address}"));
        }
        parsed.push(Listener {
            name,
            address,
            protocol,
        });
    }
    if parsed.is_empty() {
        return Err("listeners names no listener".to_owned());
    }
    Ok(parsed)
}

fn bracketed(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// Parses `NAME://host:port,...` into (name, host, port); an empty host is allowed.
pub fn parse_endpoints(text: &str) -> Result<Vec<(String, String, u16)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (name, rest) = item
                .split_once("://")
                .ok_or_else(|| format!("{item}: expected NAME://host:port"))?;
            let (host, port) = rest
                .rsplit_once(':')
                .ok_or_else(|| format!("{item}: expected NAME://host:port"))?;
            let port: u16 = port
                .parse()
                .map_err(|_| format!("{item}: {port} is not a port"))?;
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(format!(
                    "{item}: a listener name is letters, digits, _ and -"
                ));
            }
            Ok((name.to_ascii_uppercase(), host.to_owned(), port))
        })
        .collect()
}

/// Parses `listener.security.protocol.map`: `NAME:PROTOCOL,...`.
pub fn parse_protocol_map(text: &str) -> Result<BTreeMap<String, SecurityProtocol>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (name, protocol) = item
                .split_once(':')
                .ok_or_else(|| format!("{item}: expected NAME:PROTOCOL"))?;
            let protocol = SecurityProtocol::from_name(protocol.trim()).ok_or_else(|| {
                format!("{item}: the protocol is one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
            })?;
            Ok((name.trim().to_ascii_uppercase(), protocol))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_by_protocol_name_or_through_the_map() {
        let map = parse_protocol_map("CLIENT:SASL_SSL, internal:plaintext").unwrap();
        let listeners = parse_listeners(
            "PLAINTEXT://127.0.0.1:9092,CLIENT://:9093,INTERNAL://[::1]:9094",
            &map,
        )
        .unwrap();
        assert_eq!(
            listeners,
            vec![
                Listener {
                    name: "PLAINTEXT".into(),
                    address: "127.0.0.1:9092".parse().unwrap(),
                    protocol: SecurityProtocol::Plaintext
                },
                Listener {
                    name: "CLIENT".into(),
                    address: "0.0.0.0:9093".parse().unwrap(),
                    protocol: SecurityProtocol::SaslSsl
                },
                Listener {
                    name: "INTERNAL".into(),
                    address: "[::1]:9094".parse().unwrap(),
                    protocol: SecurityProtocol::Plaintext
                },
            ]
        );
    }

    #[test]
    fn bad_listeners_say_what_is_wrong() {
        let map = BTreeMap::new();
        for (text, says) in [
            ("CUSTOM://127.0.0.1:1", "protocol.map"),
            ("PLAINTEXT://127.0.0.1:x", "not a port"),
            ("PLAINTEXT//127.0.0.1:1", "NAME://host:port"),
            ("PLAINTEXT://host.example:1", "not an IP address"),
            ("PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2", "twice"),
            ("PLAINTEXT://127.0.0.1:1,SSL://127.0.0.1:1", "two listeners"),
            ("", "no listener"),
        ] {
            let error = parse_listeners(text, &map).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
        assert!(parse_protocol_map("A:TLS").is_err());
    }
}
