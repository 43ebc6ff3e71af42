//! Topic names and topic-partition pairs, validated by Kafka's rules.

use std::fmt;

use crate::PartitionId;

/// Kafka's limit on topic-name length.
const MAX_TOPIC_NAME_LEN: usize = 249;

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidName {
    #[error("topic name is empty")]
    Empty,
    #[error("topic name is {0} characters long; Kafka allows at most 249")]
    TooLong(usize),
    #[error("topic name may not be '.' or '..'")]
    DotOnly,
    #[error("topic name {0:?} may only contain ASCII letters, digits, '.', '_' and '-'")]
    IllegalCharacter(String),
}

/// A topic name that is legal in Kafka and therefore safe as a directory name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicName(String);

impl TopicName {
    /// Validates `name` by Kafka's rules: 1 to 249 characters of `[a-zA-Z0-9._-]`,
    /// not `.` or `..`.
    pub fn new(name: impl Into<String>) -> Result<TopicName, InvalidName> {
        let name = name.into();
        if name.is_empty() {
            return Err(InvalidName::Empty);
        }
        if name.len() > MAX_TOPIC_NAME_LEN {
            return Err(InvalidName::TooLong(name.len()));
        }
        if name == "." || name == ".." {
            return Err(InvalidName::DotOnly);
        }
        let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if !name.chars().all(legal) {
            return Err(InvalidName::IllegalCharacter(name));
        }
        Ok(TopicName(name))
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One partition of one topic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    pub topic: TopicName,
    pub partition: PartitionId,
}

impl TopicPartition {
    #[must_use]
    pub fn new(topic: TopicName, partition: i32) -> TopicPartition {
        TopicPartition {
            topic,
            partition: PartitionId(partition),
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafka_rules() {
        assert!(TopicName::new("orders.v1_eu-west").is_ok());
        assert_eq!(TopicName::new(""), Err(InvalidName::Empty));
        assert_eq!(TopicName::new(".."), Err(InvalidName::DotOnly));
        assert!(matches!(
            TopicName::new("a/b"),
            Err(InvalidName::IllegalCharacter(_))
        ));
        assert!(matches!(
            TopicName::new("x".repeat(250)),
            Err(InvalidName::TooLong(250))
        ));
        assert!(TopicName::new("x".repeat(249)).is_ok());
    }
}
