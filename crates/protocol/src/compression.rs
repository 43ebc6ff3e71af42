//! The record codecs of Kafka's batches, for the few paths that must open a batch: a
//! topic that recompresses to its own `compression.type`, and the log cleaner that
//! reads each record's key. Never on the default produce or fetch path.
//!
//! Formats are Kafka's: gzip streams, LZ4 frames (independent 64 KiB blocks, which
//! Kafka's Java decoder requires), zstd frames, and snappy in the xerial framing that
//! Java clients write (raw snappy, as some clients send, is read too). Decompression
//! stops at a limit, so a small batch cannot inflate without bound.

use std::io::{Read, Write};

use spool_model::CompressionCodec;

/// Why records could not be compressed or decompressed.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("the {0:?} records are corrupt: {1}")]
    Corrupt(CompressionCodec, String),
    #[error("the records inflate beyond {0} bytes")]
    TooLarge(usize),
    #[error("codec {0:?} is not one Kafka defines")]
    Unknown(CompressionCodec),
    #[error("compressing to {0:?} failed: {1}")]
    Compress(CompressionCodec, String),
}

/// The xerial framing's header: magic, version 1, compatible version 1.
const XERIAL_HEADER: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// Uncompressed bytes per xerial block (what Java's SnappyOutputStream uses).
const XERIAL_BLOCK: usize = 32 << 10;

/// Inflates `data` compressed with `codec`, refusing output beyond `limit` bytes.
pub fn decompress(
    codec: CompressionCodec,
    data: &[u8],
    limit: usize,
) -> Result<Vec<u8>, CodecError> {
    let corrupt = |error: &dyn std::fmt::Display| CodecError::Corrupt(codec, error.to_string());
    match codec {
        CompressionCodec::None => bounded(data.to_vec(), limit),
        CompressionCodec::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(data), limit)
            .map_err(|e| io_error(codec, e, limit)),
        CompressionCodec::Lz4 => {
            let decoder = lz4::Decoder::new(data).map_err(|e| corrupt(&e))?;
            read_bounded(decoder, limit).map_err(|e| io_error(codec, e, limit))
        }
        CompressionCodec::Zstd => {
            let decoder =
                zstd::stream::read::Decoder::with_buffer(data).map_err(|e| corrupt(&e))?;
            read_bounded(decoder, limit).map_err(|e| io_error(codec, e, limit))
        }
        CompressionCodec::Snappy => match data.strip_prefix(XERIAL_HEADER) {
            Some(mut blocks) => {
                let mut out = Vec::new();
                while !blocks.is_empty() {
                    let (len, rest) = blocks
                        .split_first_chunk::<4>()
                        .ok_or_else(|| corrupt(&"a block length is cut short"))?;
                    let len = usize::try_from(u32::from_be_bytes(*len)).unwrap_or(usize::MAX);
                    let block = rest
                        .get(..len)
                        .ok_or_else(|| corrupt(&"a block is cut short"))?;
                    raw_snappy(block, limit.saturating_sub(out.len()), &mut out, codec)?;
                    blocks = rest.get(len..).unwrap_or_default();
                }
                Ok(out)
            }
            None => {
                let mut out = Vec::new();
                raw_snappy(data, limit, &mut out, codec)?;
                Ok(out)
            }
        },
        CompressionCodec::Unknown(_) => Err(CodecError::Unknown(codec)),
    }
}

/// Compresses `data` with `codec` at `level` (`None`: the codec's default).
pub fn compress(
    codec: CompressionCodec,
    level: Option<i32>,
    data: &[u8],
) -> Result<Vec<u8>, CodecError> {
    let failed = |error: std::io::Error| CodecError::Compress(codec, error.to_string());
    match codec {
        CompressionCodec::None => Ok(data.to_vec()),
        CompressionCodec::Gzip => {
            let level = level
                .and_then(|l| u32::try_from(l).ok())
                .unwrap_or(6)
                .min(9);
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
            encoder.write_all(data).map_err(failed)?;
            encoder.finish().map_err(failed)
        }
        CompressionCodec::Lz4 => {
            let level = level.and_then(|l| u32::try_from(l).ok()).unwrap_or(9);
            let mut encoder = lz4::EncoderBuilder::new()
                .level(level)
                .block_size(lz4::BlockSize::Max64KB)
                .block_mode(lz4::BlockMode::Independent)
                .build(Vec::new())
                .map_err(failed)?;
            encoder.write_all(data).map_err(failed)?;
            let (out, finished) = encoder.finish();
            finished.map_err(failed)?;
            Ok(out)
        }
        CompressionCodec::Zstd => zstd::bulk::compress(data, level.unwrap_or(3)).map_err(failed),
        CompressionCodec::Snappy => {
            let mut out = XERIAL_HEADER.to_vec();
            let mut encoder = snap::raw::Encoder::new();
            for block in data.chunks(XERIAL_BLOCK) {
                let compressed = encoder
                    .compress_vec(block)
                    .map_err(|e| CodecError::Compress(codec, e.to_string()))?;
                let len = u32::try_from(compressed.len())
                    .map_err(|_| CodecError::Compress(codec, "block too large".into()))?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&compressed);
            }
            Ok(out)
        }
        CompressionCodec::Unknown(_) => Err(CodecError::Unknown(codec)),
    }
}

fn raw_snappy(
    block: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
    codec: CompressionCodec,
) -> Result<(), CodecError> {
    let corrupt = |error: snap::Error| CodecError::Corrupt(codec, error.to_string());
    let len = snap::raw::decompress_len(block).map_err(corrupt)?;
    if len > limit {
        return Err(CodecError::TooLarge(limit));
    }
    let start = out.len();
    out.resize(start + len, 0);
    let written = snap::raw::Decoder::new()
        .decompress(block, out.get_mut(start..).unwrap_or_default())
        .map_err(corrupt)?;
    out.truncate(start + written);
    Ok(())
}

fn bounded(data: Vec<u8>, limit: usize) -> Result<Vec<u8>, CodecError> {
    if data.len() > limit {
        Err(CodecError::TooLarge(limit))
    } else {
        Ok(data)
    }
}

/// Reads `reader` to its end, or fails once more than `limit` bytes came out.
fn read_bounded(reader: impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let taken = reader
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut out)?;
    if taken > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            "inflated beyond the limit",
        ));
    }
    Ok(out)
}

fn io_error(codec: CompressionCodec, error: std::io::Error, limit: usize) -> CodecError {
    if error.kind() == std::io::ErrorKind::FileTooLarge {
        CodecError::TooLarge(limit)
    } else {
        CodecError::Corrupt(codec, error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODECS: [CompressionCodec; 5] = [
        CompressionCodec::None,
        CompressionCodec::Gzip,
        CompressionCodec::Snappy,
        CompressionCodec::Lz4,
        CompressionCodec::Zstd,
    ];

    fn sample() -> Vec<u8> {
        (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    #[test]
    fn every_codec_round_trips_at_several_levels() {
        let data = sample();
        for codec in CODECS {
            for level in [None, Some(1), Some(9)] {
                let packed = compress(codec, level, &data).unwrap();
                assert_eq!(
                    decompress(codec, &packed, data.len()).unwrap(),
                    data,
                    "{codec:?}"
                );
            }
        }
        let empty = compress(CompressionCodec::Zstd, None, &[]).unwrap();
        assert!(
            decompress(CompressionCodec::Zstd, &empty, 10)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn inflating_past_the_limit_is_refused() {
        let zeros = vec![0u8; 1 << 20];
        for codec in CODECS {
            let packed = compress(codec, None, &zeros).unwrap();
            assert!(
                matches!(
                    decompress(codec, &packed, 1000),
                    Err(CodecError::TooLarge(1000))
                ),
                "{codec:?}"
            );
        }
    }

    #[test]
    fn raw_snappy_is_read_and_garbage_is_corrupt() {
        let data = sample();
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(
            decompress(CompressionCodec::Snappy, &raw, usize::MAX).unwrap(),
            data
        );
        for codec in &CODECS[1..] {
            assert!(
                matches!(
                    decompress(
                        *codec,
                        b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\xff\xff\xff\xffjunk",
                        1 << 20
                    ),
                    Err(CodecError::Corrupt(..))
                ),
                "{codec:?}"
            );
        }
    }
}
