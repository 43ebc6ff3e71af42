//! A minimal HTTP/1.1 client for the admin listener's tests: one request per
//! connection (`Connection: close`), the whole response read. Enough for JSON and
//! the metrics text; not a general client.

// Test helpers: a failed request fails the test, with what was being done.
#![allow(clippy::expect_used)]

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response: its status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

/// Sends `method path` with an optional JSON `body` to `addr`.
pub async fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> HttpResponse {
    let mut stream = TcpStream::connect(addr)
        .await
        .expect("connect to the admin listener");
    let body = body.unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .await
        .expect("read the response");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a header and a body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status code");
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    HttpResponse {
        status,
        content_type,
        body: body.to_owned(),
    }
}

/// `GET path`.
pub async fn http_get(addr: SocketAddr, path: &str) -> HttpResponse {
    http(addr, "GET", path, None).await
}
