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

/// A member's subscription: its topics, and (version 1 on) the partitions it owns
/// as it joins (cooperative rebalancing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    pub topics: Vec<String>,
    pub owned: Vec<(String, Vec<i32>)>,
}

/// A subscription; `None` if the bytes are not one.
#[must_use]
pub fn subscription(metadata: &[u8]) -> Option<Subscription> {
    let mut reader = Reader { rest: metadata };
    let version = reader.i16()?;
    let count = reader.count(2)?;
    let topics = (0..count)
        .map(|_| reader.string())
        .collect::<Option<Vec<String>>>()?;
    if version < 1 {
        return Some(Subscription {
            topics,
            owned: Vec::new(),
        });
    }
    // User data (nullable bytes), then the owned partitions.
    let user_data = reader.i32()?;
    if let Ok(len) = usize::try_from(user_data) {
        reader.take(len)?;
    }
    let owned = topic_partitions(&mut reader)?;
    Some(Subscription { topics, owned })
}

/// A subscription to these topics (version 0, no user data), as DescribeGroups
/// reports a consumer-protocol member's.
#[must_use]
pub fn encode_subscription(topics: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0i16.to_be_bytes());
    put_len(&mut out, topics.len());
    for topic in topics {
        put_string(&mut out, topic);
    }
    out.extend_from_slice(&(-1i32).to_be_bytes()); // no user data
    out
}

/// An assignment of these partitions (version 0, no user data), as a classic
/// member's SyncGroup answer carries it.
#[must_use]
pub fn encode_assignment(partitions: &[(String, Vec<i32>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0i16.to_be_bytes());
    put_len(&mut out, partitions.len());
    for (topic, indexes) in partitions {
        let name = topic.as_bytes();
        out.extend_from_slice(&i16::try_from(name.len()).unwrap_or(i16::MAX).to_be_bytes());
        out.extend_from_slice(
            name.get(..usize::from(i16::MAX.unsigned_abs()))
                .unwrap_or(name),
        );
        put_len(&mut out, indexes.len());
        for index in indexes {
            out.extend_from_slice(&index.to_be_bytes());
        }
    }
    out.extend_from_slice(&(-1i32).to_be_bytes()); // no user data
    out
}

/// A string, cut at the 32,767 bytes its length can say (topic names are far
/// shorter).
fn put_string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    let bytes = bytes
        .get(..usize::from(i16::MAX.unsigned_abs()))
        .unwrap_or(bytes);
    out.extend_from_slice(&i16::try_from(bytes.len()).unwrap_or(i16::MAX).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&i32::try_from(len).unwrap_or(i32::MAX).to_be_bytes());
}

/// An array of (topic, partitions).
fn topic_partitions(reader: &mut Reader<'_>) -> Option<Vec<(String, Vec<i32>)>> {
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

/// The partitions of an assignment, per topic; `None` if the bytes are not one.
#[must_use]
pub fn assigned_partitions(assignment: &[u8]) -> Option<Vec<(String, Vec<i32>)>> {
    let mut reader = Reader { rest: assignment };
    reader.i16()?;
    topic_partitions(&mut reader)
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
    fn subscriptions_carry_owned_partitions_from_version_1() {
        let mut metadata = vec![0, 1, 0, 0, 0, 1];
        string(&mut metadata, "orders");
        metadata.extend_from_slice(&[0, 0, 0, 2, 7, 7]); // user data
        metadata.extend_from_slice(&[0, 0, 0, 1]);
        string(&mut metadata, "orders");
        metadata.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 4]);
        assert_eq!(
            subscription(&metadata),
            Some(Subscription {
                topics: vec!["orders".to_owned()],
                owned: vec![("orders".to_owned(), vec![4])],
            })
        );
        let mut v0 = metadata.clone();
        v0[1] = 0;
        assert_eq!(subscription(&v0).unwrap().owned, Vec::new());
        for cut in 12..metadata.len() {
            assert_eq!(subscription(&metadata[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn an_encoded_subscription_reads_back() {
        let topics = vec!["orders".to_owned(), "payments".to_owned()];
        assert_eq!(
            subscribed_topics(&encode_subscription(&topics)),
            Some(topics)
        );
    }

    #[test]
    fn an_encoded_assignment_reads_back() {
        let partitions = vec![
            ("orders".to_owned(), vec![0, 2]),
            ("payments".to_owned(), vec![1]),
        ];
        assert_eq!(
            assigned_partitions(&encode_assignment(&partitions)),
            Some(partitions)
        );
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
