//! A response on its way to the socket: encoded bytes, and byte ranges of segment files
//! that are sent with `sendfile(2)` so that stored records go from the page cache to
//! the socket without passing through user space.

use std::io;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use spool_log::ReadChunk;
use spool_store::StoreFile;
use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;

/// Where replies are written: the TCP socket itself (stored records go by
/// `sendfile`), or a TLS stream.
pub(crate) enum SocketWriter {
    Plain(OwnedWriteHalf),
    Tls(tokio::io::WriteHalf<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl std::fmt::Debug for SocketWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SocketWriter::Plain(_) => "Plain",
            SocketWriter::Tls(_) => "Tls",
        })
    }
}

impl SocketWriter {
    /// Closes the write side (TLS: with its close_notify).
    pub(crate) async fn shutdown(&mut self) {
        let _ = match self {
            SocketWriter::Plain(writer) => writer.shutdown().await,
            SocketWriter::Tls(writer) => writer.shutdown().await,
        };
    }
}

/// What to do after a request.
pub(crate) enum Reply {
    /// Send this response.
    Send(Response),
    /// Send nothing (Produce with acks=0).
    Nothing,
    /// The request was unacceptable: close the connection.
    Close,
    /// Send this response, then close (a failed authentication).
    SendAndClose(Response),
    /// The reply once this is done (a produce waiting for durability).
    Later(std::pin::Pin<Box<dyn std::future::Future<Output = Reply> + Send>>),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Send(response) => f.debug_tuple("Send").field(response).finish(),
            Reply::SendAndClose(response) => f.debug_tuple("SendAndClose").field(response).finish(),
            Reply::Nothing => f.write_str("Nothing"),
            Reply::Close => f.write_str("Close"),
            Reply::Later(_) => f.write_str("Later"),
        }
    }
}

/// The most of a file range read into memory at a time for a TLS connection.
const TLS_READ: u64 = 1 << 20;

/// Memory chunks shorter than this are copied into the surrounding bytes: one write
/// instead of several.
const COPY_BELOW: u64 = 64 * 1024;

/// One piece of a response.
#[derive(Debug)]
enum Part {
    Bytes(Bytes),
    File {
        file: Arc<dyn StoreFile>,
        position: u64,
        len: u64,
    },
}

/// A framed response: the 4-byte size, then the parts in order.
#[derive(Debug)]
pub(crate) struct Response {
    parts: Vec<Part>,
}

impl Response {
    /// Every byte of the response in one buffer (a response converted for an older
    /// version, tests).
    pub(crate) fn to_vec(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        for part in &self.parts {
            match part {
                Part::Bytes(bytes) => out.extend_from_slice(bytes),
                Part::File {
                    file,
                    position,
                    len,
                } => chunk_of(file, *position, *len).append_to(&mut out)?,
            }
        }
        Ok(out)
    }

    /// Writes the response to the socket: file ranges by `sendfile` on a plain
    /// socket; through memory (in pieces of [`TLS_READ`]) on a TLS stream, which has
    /// to encrypt them.
    pub(crate) async fn write_to(&self, socket: &mut SocketWriter) -> io::Result<()> {
        match socket {
            SocketWriter::Plain(socket) => {
                for part in &self.parts {
                    match part {
                        Part::Bytes(bytes) => socket.write_all(bytes).await?,
                        Part::File {
                            file,
                            position,
                            len,
                        } => send_file(socket, file, *position, *len).await?,
                    }
                }
            }
            SocketWriter::Tls(stream) => {
                for part in &self.parts {
                    match part {
                        Part::Bytes(bytes) => stream.write_all(bytes).await?,
                        Part::File {
                            file,
                            position,
                            len,
                        } => {
                            let end = position + len;
                            let mut at = *position;
                            while at < end {
                                let piece = (end - at).min(TLS_READ);
                                let mut bytes =
                                    Vec::with_capacity(usize::try_from(piece).unwrap_or(0));
                                chunk_of(file, at, piece).append_to(&mut bytes)?;
                                stream.write_all(&bytes).await?;
                                at += piece;
                            }
                        }
                    }
                }
                stream.flush().await?;
            }
        }
        Ok(())
    }
}

/// Builds a response: encoded fields go into a buffer; file chunks become parts of
/// their own. The size prefix is filled in by [`ResponseWriter::finish`].
#[derive(Debug)]
pub(crate) struct ResponseWriter {
    parts: Vec<Part>,
    buffer: BytesMut,
    len: u64,
}

impl ResponseWriter {
    pub(crate) fn new() -> ResponseWriter {
        let mut buffer = BytesMut::with_capacity(256);
        buffer.put_i32(0);
        ResponseWriter {
            parts: Vec::new(),
            buffer,
            len: 0,
        }
    }

    /// The buffer to encode fields into.
    pub(crate) fn buffer(&mut self) -> &mut BytesMut {
        &mut self.buffer
    }

    /// Appends stored bytes: file ranges by reference, memory by copy or reference.
    pub(crate) fn push_chunk(&mut self, chunk: &ReadChunk) {
        match chunk {
            ReadChunk::Memory(bytes) if (bytes.len() as u64) < COPY_BELOW => {
                self.buffer.extend_from_slice(bytes);
            }
            ReadChunk::Memory(bytes) => self.push_part(Part::Bytes(bytes.clone())),
            ReadChunk::File {
                file,
                position,
                len,
            } => self.push_part(Part::File {
                file: file.clone(),
                position: *position,
                len: *len,
            }),
        }
    }

    fn push_part(&mut self, part: Part) {
        self.flush_buffer();
        self.len += match &part {
            Part::Bytes(bytes) => bytes.len() as u64,
            Part::File { len, .. } => *len,
        };
        self.parts.push(part);
    }

    fn flush_buffer(&mut self) {
        if !self.buffer.is_empty() {
            self.len += self.buffer.len() as u64;
            self.parts.push(Part::Bytes(self.buffer.split().freeze()));
        }
    }

    /// The framed response, or `None` when it is larger than a frame can say.
    pub(crate) fn finish(mut self) -> Option<Response> {
        let total = self.len + self.buffer.len() as u64;
        let size = i32::try_from(total.checked_sub(4)?).ok()?.to_be_bytes();
        match self.parts.first_mut() {
            // All in the buffer (every response but a Fetch from files): patch it.
            None => self.buffer.get_mut(..4)?.copy_from_slice(&size),
            // The fields before the first file range: a short copy.
            Some(Part::Bytes(head)) => {
                let mut patched = BytesMut::from(head.as_ref());
                patched.get_mut(..4)?.copy_from_slice(&size);
                *head = patched.freeze();
            }
            Some(Part::File { .. }) => return None,
        }
        self.flush_buffer();
        Some(Response { parts: self.parts })
    }
}

fn chunk_of(file: &Arc<dyn StoreFile>, position: u64, len: u64) -> ReadChunk {
    ReadChunk::File {
        file: file.clone(),
        position,
        len,
    }
}

/// Asks the kernel to start reading the file ranges among `chunks` into the page
/// cache (`POSIX_FADV_WILLNEED`). Called on a blocking thread when a fetch is read,
/// so that the `sendfile` calls on the async threads later rarely wait for the disk.
pub(crate) fn prefetch(chunks: &[ReadChunk]) {
    for chunk in chunks {
        if let ReadChunk::File {
            file,
            position,
            len,
        } = chunk
            && let Some(fd) = file.fd()
        {
            let _ = rustix::fs::fadvise(
                fd,
                *position,
                std::num::NonZeroU64::new(*len),
                rustix::fs::Advice::WillNeed,
            );
        }
    }
}

/// Sends `len` bytes of `file` from `position` with `sendfile(2)`, waiting for the
/// socket to become writable as needed. Files without a descriptor, and file systems
/// that cannot `sendfile`, are copied instead.
async fn send_file(
    socket: &mut OwnedWriteHalf,
    file: &Arc<dyn StoreFile>,
    mut position: u64,
    len: u64,
) -> io::Result<()> {
    let end = position + len;
    if file.fd().is_some() {
        let stream = socket.as_ref();
        while position < end {
            let want = usize::try_from(end - position).unwrap_or(usize::MAX);
            stream.writable().await?;
            let sent = stream.try_io(Interest::WRITABLE, || {
                let fd = file.fd().ok_or(io::ErrorKind::Unsupported)?;
                rustix::fs::sendfile(stream, fd, Some(&mut position), want).map_err(io::Error::from)
            });
            match sent {
                // The range was read under the high watermark, so the file holds it;
                // a short file means it was cut under us, and the frame cannot be
                // finished.
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => {}
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(error) if cannot_sendfile(&error) => break,
                Err(error) => return Err(error),
            }
        }
    }
    if position < end {
        let mut bytes = Vec::new();
        chunk_of(file, position, end - position).append_to(&mut bytes)?;
        socket.write_all(&bytes).await?;
    }
    Ok(())
}

/// `sendfile` is not available for this file (its file system does not support it).
fn cannot_sendfile(error: &io::Error) -> bool {
    let code = error.raw_os_error();
    [
        rustix::io::Errno::INVAL,
        rustix::io::Errno::NOSYS,
        rustix::io::Errno::OPNOTSUPP,
    ]
    .iter()
    .any(|errno| Some(errno.raw_os_error()) == code)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use spool_store::{LocalStore, OpenMode, Store};
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A file range larger than the socket buffers goes out whole through `sendfile`,
    /// between bytes written before and after it, under one size prefix.
    #[tokio::test]
    async fn file_ranges_are_sent_between_the_encoded_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path()).unwrap();
        let file = store.open(Path::new("segment"), OpenMode::Create).unwrap();
        let contents: Vec<u8> = (0..8 << 20).map(|i: u32| (i % 251) as u8).collect();
        file.write_at(&contents, 0).unwrap();
        assert!(file.fd().is_some(), "a local file has a descriptor");

        let mut writer = ResponseWriter::new();
        writer.buffer().put_slice(b"head");
        let (position, len) = (1000u64, 6u64 << 20);
        writer.push_chunk(&ReadChunk::File {
            file: file.clone(),
            position,
            len,
        });
        writer.push_chunk(&ReadChunk::Memory(Bytes::from_static(b"tail")));
        let response = writer.finish().unwrap();

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        let (_read_half, write_half) = accepted.unwrap().0.into_split();
        let sender = tokio::spawn(async move {
            response
                .write_to(&mut SocketWriter::Plain(write_half))
                .await
                .unwrap();
        });
        let mut received = Vec::new();
        client.unwrap().read_to_end(&mut received).await.unwrap();
        sender.await.unwrap();

        let size = i32::from_be_bytes(received[..4].try_into().unwrap());
        assert_eq!(usize::try_from(size).unwrap(), received.len() - 4);
        assert_eq!(&received[4..8], b"head");
        let start = usize::try_from(position).unwrap();
        let end = start + usize::try_from(len).unwrap();
        assert!(received[8..received.len() - 4] == contents[start..end]);
        assert_eq!(&received[received.len() - 4..], b"tail");
    }
}
