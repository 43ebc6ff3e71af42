//! What a member subscribes to, as topic ids: the topics it names that exist, and
//! those whose names its regular expression matches (whole names, as Kafka's RE2/J
//! `matches`). Expressions are compiled once per group and matched again only when
//! the broker's topics changed.

use std::collections::{BTreeSet, HashMap};

use super::member::Member;
use super::{PartitionCounts, Topics};
use crate::error::GroupError;
use regex::{Regex, RegexBuilder};

/// The most memory one compiled expression may take (the `regex` crate's default
/// is 10 MiB): a subscription names topics, it is not a program.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A group's regular expressions, compiled, and the topic names each matched.
#[derive(Debug, Default)]
pub(crate) struct Regexes {
    compiled: HashMap<String, Resolved>,
}

#[derive(Debug)]
struct Resolved {
    regex: Regex,
    /// The topics' version it was matched at.
    version: Option<u64>,
    names: BTreeSet<String>,
}

impl Regexes {
    /// Compiles `pattern` unless it is known: `INVALID_REGULAR_EXPRESSION` if it is
    /// not one.
    pub(crate) fn learn(&mut self, pattern: &str) -> Result<(), GroupError> {
        if pattern.is_empty() || self.compiled.contains_key(pattern) {
            return Ok(());
        }
        // The expression alone first: one that compiles has balanced groups, so the
        // anchors around it hold (`a)|(b` would otherwise escape them).
        let invalid = |_| GroupError::InvalidRegularExpression;
        RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(invalid)?;
        let regex = RegexBuilder::new(&format!("^(?:{pattern})$"))
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(invalid)?;
        self.compiled.insert(
            pattern.to_owned(),
            Resolved {
                regex,
                version: None,
                names: BTreeSet::new(),
            },
        );
        Ok(())
    }

    /// Forgets the expressions no member uses.
    pub(crate) fn retain_used<'a>(&mut self, members: impl Iterator<Item = &'a Member>) {
        let used: BTreeSet<&str> = members.map(|m| m.regex.as_str()).collect();
        self.compiled
            .retain(|pattern, _| used.contains(pattern.as_str()));
    }

    /// The topic names `pattern` matches now.
    fn matching(&mut self, pattern: &str, topics: &dyn Topics) -> Option<&BTreeSet<String>> {
        let resolved = self.compiled.get_mut(pattern)?;
        let version = topics.version();
        if resolved.version != Some(version) {
            resolved.names = topics
                .names()
                .into_iter()
                .filter(|name| resolved.regex.is_match(name))
                .collect();
            resolved.version = Some(version);
        }
        Some(&resolved.names)
    }

    /// The topics `member` subscribes to that exist: their partition counts by id.
    pub(crate) fn topics_of(&mut self, member: &Member, topics: &dyn Topics) -> PartitionCounts {
        let mut names: Vec<&str> = member.subscribed_names.iter().map(String::as_str).collect();
        let matched = self.matching(&member.regex, topics);
        names.extend(matched.into_iter().flatten().map(String::as_str));
        names
            .into_iter()
            .filter_map(|name| topics.by_name(name))
            .map(|topic| (topic.id, topic.partitions))
            .collect()
    }
}
