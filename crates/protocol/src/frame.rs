//! Kafka's framing: a 4-byte big-endian size, then that many bytes of request.
//!
//! Sans-io, in the manner of mini-redis's `Frame::check`: an incomplete frame is
//! `Ok(None)` (read more bytes), a frame whose declared size is negative or over the
//! cap is an error (close the connection), and a complete one gives its size.

/// Bytes of the size prefix.
pub const SIZE_PREFIX_LEN: usize = 4;

/// Why a connection's byte stream cannot be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame declares a negative size ({0})")]
    NegativeSize(i32),
    #[error("frame declares {size} bytes, over the limit of {limit} (socket.request.max.bytes)")]
    TooLarge { size: usize, limit: usize },
}

/// Looks at the start of `buffer`: `Ok(Some(n))` when a whole frame of `n` bytes
/// (after the prefix) is present, `Ok(None)` when more bytes are needed.
pub fn check_frame(buffer: &[u8], limit: usize) -> Result<Option<usize>, FrameError> {
    let Some(prefix) = buffer.get(..SIZE_PREFIX_LEN) else {
        return Ok(None);
    };
    let declared = i32::from_be_bytes(prefix.try_into().unwrap_or([0; 4]));
    let size = usize::try_from(declared).map_err(|_| FrameError::NegativeSize(declared))?;
    if size > limit {
        return Err(FrameError::TooLarge { size, limit });
    }
    if buffer.len() < SIZE_PREFIX_LEN + size {
        return Ok(None);
    }
    Ok(Some(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_checked_before_any_allocation() {
        assert_eq!(check_frame(&[0, 0], 100), Ok(None));
        assert_eq!(check_frame(&[0, 0, 0, 3, 1, 2], 100), Ok(None));
        assert_eq!(check_frame(&[0, 0, 0, 3, 1, 2, 3, 9], 100), Ok(Some(3)));
        assert_eq!(
            check_frame(&[0xff, 0xff, 0xff, 0xff], 100),
            Err(FrameError::NegativeSize(-1))
        );
        assert_eq!(
            check_frame(&[0x7f, 0, 0, 0], 100),
            Err(FrameError::TooLarge {
                size: 0x7f00_0000,
                limit: 100
            })
        );
    }
}
