//! A structural pre-check of request bodies, run before `kafka-protocol` decodes them.
//!
//! Why this is written by hand: `kafka-protocol` (0.18) sizes each decoded array with
//! `Vec::with_capacity(count)` straight from the count on the wire, before reading a
//! single element. A 20-byte request declaring two billion topics asks for hundreds of
//! gigabytes, and a failed allocation aborts the process. No released version guards
//! this, so Spool walks the request first, with a compact description of each
//! request's fields ([`shapes`]), and refuses any array whose declared count exceeds
//! the bytes left (every element takes at least one byte). The walk allocates nothing.
//!
//! The walk only needs each request's structure, not its meaning; it must agree with
//! `kafka-protocol`'s decoding, which the real-client tests exercise.
//!
//! Tagged fields need care: `kafka-protocol` decodes a tagged field it knows (Fetch
//! has four) straight from the buffer and ignores the size the field declares. A walk
//! that skipped the declared size would then lose step with the decoder, which could
//! read an array count the walk never checked (the `request_decoding` fuzz target
//! found such a Fetch v18 request). So a known tagged field is walked as its kind, and
//! must fill its declared size exactly.
#![deny(clippy::indexing_slicing)]

pub mod group_shapes;
pub mod response_shapes;
pub mod shapes;
pub mod share_shapes;

/// How a field is laid out on the wire.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A fixed number of bytes: int8 to int64, float64, bool, uuid.
    Fixed(usize),
    /// A string: int16 length (−1 for null), or a compact (varint) length when flexible.
    String,
    /// Bytes or records: int32 length (−1 for null), or a compact length when flexible.
    Bytes,
    /// An array of structs with these fields (each ending with tagged fields when flexible).
    Structs(&'static [Field]),
    /// An array of fixed-size values (e.g. `[int32]`).
    Scalars(usize),
    /// An array of strings.
    Strings,
    /// One struct (not an array) with these fields.
    Struct(&'static [Field]),
    /// A tagged field with this tag, holding a value of this kind. Walked only where
    /// the tagged fields are, at the end of its struct.
    Tagged(u32, &'static Kind),
}

/// A field present in versions `since..=until`.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub since: i16,
    pub until: i16,
    pub kind: Kind,
}

/// A field from version `since` on.
#[must_use]
pub const fn from(since: i16, kind: Kind) -> Field {
    Field {
        since,
        until: i16::MAX,
        kind,
    }
}

/// A field in versions `since..=until` only.
#[must_use]
pub const fn between(since: i16, until: i16, kind: Kind) -> Field {
    Field { since, until, kind }
}

/// A request body: its fields and the first version that uses flexible encoding.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub flexible_since: i16,
    pub fields: &'static [Field],
}

/// Why a request body failed the structural check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error("request ends in the middle of a field")]
    Truncated,
    #[error("array declares {count} elements but only {remaining} bytes follow")]
    CountExceedsBytes { count: u64, remaining: usize },
    #[error("a length field is negative ({0})")]
    NegativeLength(i64),
    #[error("a varint is longer than 5 bytes")]
    VarintTooLong,
    #[error("tagged field {tag} declares {declared} bytes but its value takes a different number")]
    TaggedFieldSize { tag: u32, declared: usize },
}

/// Walks `body` as a request of `shape` at `version`; returns how many bytes were
/// left after the last field (0 for a well-formed request).
pub fn check(shape: &Shape, version: i16, body: &[u8]) -> Result<usize, GuardError> {
    let mut walker = Walker {
        rest: body,
        flexible: version >= shape.flexible_since,
        version,
    };
    walker.structure(shape.fields)?;
    Ok(walker.rest.len())
}

struct Walker<'a> {
    rest: &'a [u8],
    flexible: bool,
    version: i16,
}

impl Walker<'_> {
    fn structure(&mut self, fields: &[Field]) -> Result<(), GuardError> {
        for field in fields {
            if (field.since..=field.until).contains(&self.version)
                && !matches!(field.kind, Kind::Tagged(..))
            {
                self.field(field.kind)?;
            }
        }
        if self.flexible {
            self.tagged_fields(fields)?;
        }
        Ok(())
    }

    fn field(&mut self, kind: Kind) -> Result<(), GuardError> {
        match kind {
            Kind::Fixed(len) => self.skip(len),
            Kind::String => {
                let len = if self.flexible {
                    self.compact_length()?
                } else {
                    self.length16()?
                };
                self.skip(len)
            }
            Kind::Bytes => {
                let len = if self.flexible {
                    self.compact_length()?
                } else {
                    self.length32()?
                };
                self.skip(len)
            }
            Kind::Structs(fields) => {
                for _ in 0..self.array_count()? {
                    self.structure(fields)?;
                }
                Ok(())
            }
            Kind::Scalars(len) => {
                let count = self.array_count()?;
                self.skip(count.saturating_mul(len))
            }
            Kind::Strings => {
                for _ in 0..self.array_count()? {
                    self.field(Kind::String)?;
                }
                Ok(())
            }
            Kind::Struct(fields) => self.structure(fields),
            Kind::Tagged(_, kind) => self.field(*kind),
        }
    }

    /// An array's element count, checked against the bytes left; null counts as 0.
    fn array_count(&mut self) -> Result<usize, GuardError> {
        let count: i64 = if self.flexible {
            i64::from(self.uvarint()?) - 1
        } else {
            i64::from(i32::from_be_bytes(self.take::<4>()?))
        };
        if count < 0 {
            return Ok(0); // null (a count below −1 is decoded as an error later)
        }
        let count = u64::try_from(count).unwrap_or(u64::MAX);
        if count > self.rest.len() as u64 {
            return Err(GuardError::CountExceedsBytes {
                count,
                remaining: self.rest.len(),
            });
        }
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    /// The tagged fields ending a struct of `fields`: a known one (a `Tagged` field of
    /// the struct, at this version) must be exactly its declared size; others are
    /// skipped, as the decoder skips them.
    fn tagged_fields(&mut self, fields: &[Field]) -> Result<(), GuardError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = usize::try_from(self.uvarint()?).unwrap_or(usize::MAX);
            let known = fields.iter().find_map(|field| match field.kind {
                Kind::Tagged(known, kind)
                    if known == tag && (field.since..=field.until).contains(&self.version) =>
                {
                    Some(*kind)
                }
                _ => None,
            });
            if let Some(kind) = known {
                let value = self.rest.get(..size).ok_or(GuardError::Truncated)?;
                let mut inner = Walker {
                    rest: value,
                    flexible: self.flexible,
                    version: self.version,
                };
                if inner.field(kind).is_err() || !inner.rest.is_empty() {
                    return Err(GuardError::TaggedFieldSize {
                        tag,
                        declared: size,
                    });
                }
            }
            self.skip(size)?;
        }
        Ok(())
    }

    fn length16(&mut self) -> Result<usize, GuardError> {
        let len = i16::from_be_bytes(self.take::<2>()?);
        Ok(usize::try_from(len.max(0)).unwrap_or(0))
    }

    fn length32(&mut self) -> Result<usize, GuardError> {
        let len = i32::from_be_bytes(self.take::<4>()?);
        Ok(usize::try_from(len.max(0)).unwrap_or(0))
    }

    fn compact_length(&mut self) -> Result<usize, GuardError> {
        let len = self.uvarint()?;
        Ok(usize::try_from(len.saturating_sub(1)).unwrap_or(usize::MAX))
    }

    /// An unsigned varint of at most 5 bytes, as `kafka-protocol` reads it.
    fn uvarint(&mut self) -> Result<u32, GuardError> {
        let mut value: u32 = 0;
        for shift in 0..5 {
            let [byte] = self.take::<1>()?;
            value |= u32::from(byte & 0x7f) << (7 * shift);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(GuardError::VarintTooLong)
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], GuardError> {
        let bytes = self.rest.get(..N).ok_or(GuardError::Truncated)?;
        let array = bytes.try_into().map_err(|_| GuardError::Truncated)?;
        self.rest = self.rest.get(N..).unwrap_or_default();
        Ok(array)
    }

    fn skip(&mut self, len: usize) -> Result<(), GuardError> {
        self.rest = self.rest.get(len..).ok_or(GuardError::Truncated)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
