//! The consumer protocol's opaque bytes inside JoinGroup and SyncGroup: a member's
//! subscription (`ConsumerProtocolSubscription`) and assignment
//! (`ConsumerProtocolAssignment`). Both start with an int16 version and an array of
//! topics, the same in every version. They are read by hand, with bounds checks,
//! because a client wrote them: every count is checked against the bytes present
//! before anything is kept (kafka-protocol would size vectors from the counts).

/// Reads big-endian fields from the front of a slice.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.rest.split_at_checked(n)?;
        self.rest = tail;
        Some(head)
    }

    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.i16()?).ok()?;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }

    /// An array count, refused when the array could not fit in what is left
    /// (`min_item` bytes per item at least).
    fn count(&mut self, min_item: usize) -> Option<usize> {
        let count = usize::try_from(self.i32()?).ok()?;
        (count.saturating_mul(min_item) <= self.rest.len()).then_some(count)
    }
}

/// The topics of a subscription; `None` if the bytes are not one.
#[must_use]
pub fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut reader = Reader { rest: metadata };
    reader.i16()?;
    let count = reader.count(2)?;
    (0..count).map(|_| reader.string()).collect()
}

/// The partitions of an assignment, per topic; `None` if the bytes are not one.
#[must_use]
pub fn assigned_partitions(assignment: &[u8]) -> Option<Vec<(String, Vec<i32>)>> {
    let mut reader = Reader { rest: assignment };
    reader.i16()?;
    let count = reader.count(2 + 4)?;
    (0..count)
        .map(|_| {
            let topic = reader.string()?;
            let partitions = reader.count(4)?;
            let partitions = (0..partitions)
                .map(|_| reader.i32())
                .collect::<Option<Vec<i32>>>()?;
            Some((topic, partitions))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(out: &mut Vec<u8>, text: &str) {
        out.extend_from_slice(&i16::try_from(text.len()).unwrap().to_be_bytes());
        out.extend_from_slice(text.as_bytes());
    }

    #[test]
    fn subscriptions_are_read_within_their_bytes() {
        let mut metadata = vec![0, 1, 0, 0, 0, 2];
        for topic in ["orders", "payments"] {
            string(&mut metadata, topic);
        }
        metadata.extend_from_slice(&[0, 0, 0, 0]); // user data, ignored
        assert_eq!(
            subscribed_topics(&metadata),
            Some(vec!["orders".to_owned(), "payments".to_owned()])
        );
        assert_eq!(
            subscribed_topics(&[0, 1, 0x7f, 0xff, 0xff, 0xff]),
            None,
            "count past the end"
        );
        assert_eq!(subscribed_topics(&metadata[..9]), None);
    }

    #[test]
    fn assignments_are_read_within_their_bytes() {
        let mut assignment = vec![0, 1, 0, 0, 0, 1];
        string(&mut assignment, "orders");
        assignment.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 5]);
        assignment.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]); // null user data
        assert_eq!(
            assigned_partitions(&assignment),
            Some(vec![("orders".to_owned(), vec![3, 5])])
        );
        for cut in 0..assignment.len() - 4 {
            assert_eq!(
                assigned_partitions(&assignment[..cut]),
                None,
                "cut at {cut}"
            );
        }
        let mut lying = assignment.clone();
        lying[14..18].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(
            assigned_partitions(&lying),
            None,
            "partition count past the end"
        );
    }
}
