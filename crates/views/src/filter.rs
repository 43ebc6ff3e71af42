//! A view's filter: the tags it lets through (`view.filter`, RocketMQ's `TagA || TagB`
//! or `*`) and, optionally, an expression over headers (`view.filter.sql`). A record
//! matches when both say yes.

use std::collections::HashSet;

use super::sql::{self, Expr};
use super::tag_index::{BatchTags, tag_hash};

/// The header a record's tag is in (one per record, as in RocketMQ; the last wins if
/// repeated).
pub const TAG_HEADER: &str = "spool.tag";

/// What a view lets through.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    tags: Tags,
    sql: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tags {
    /// `*`: every record, tagged or not.
    All,
    /// Records tagged with one of these; the hashes are what a batch's summary holds.
    Any {
        names: HashSet<Vec<u8>>,
        hashes: HashSet<u64>,
    },
}

/// What a batch's tag summary says of it, before its records are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every record matches: the batch goes out as stored.
    All,
    /// No record matches: the batch is a gap.
    None,
    /// Read the records to know.
    Some,
}

impl Filter {
    /// The filter of `tags` (`view.filter`) and `sql` (`view.filter.sql`, empty for
    /// none); the message says what is wrong with either.
    pub fn parse(tags: &str, sql: &str) -> Result<Filter, String> {
        let tags = parse_tags(tags)?;
        let sql = if sql.trim().is_empty() {
            None
        } else {
            Some(sql::parse(sql).map_err(|error| format!("view.filter.sql: {error}"))?)
        };
        Ok(Filter { tags, sql })
    }

    /// Whether every record of the source matches (the view is the source).
    pub fn passes_everything(&self) -> bool {
        self.tags == Tags::All && self.sql.is_none()
    }

    /// What the summary of a batch's tags says.
    pub fn judge(&self, batch: &BatchTags) -> Verdict {
        let Tags::Any { hashes, .. } = &self.tags else {
            return if self.sql.is_none() {
                Verdict::All
            } else {
                Verdict::Some
            };
        };
        let Some(tagged) = batch.hashes() else {
            return Verdict::Some;
        };
        let matching = tagged.iter().filter(|hash| hashes.contains(hash)).count();
        if matching == 0 {
            Verdict::None
        } else if matching == tagged.len() && !batch.untagged && self.sql.is_none() {
            Verdict::All
        } else {
            Verdict::Some
        }
    }

    /// What every matching record's headers hold: per constraint, a header and the
    /// values one of which it has (its last occurrence). A message index of one of
    /// these headers names every record the view can show. From the tags, and from
    /// the expression's top-level `AND` terms `h = 'text'` and `h IN ('a', 'b')`.
    pub fn required_values(&self) -> Vec<(String, Vec<Vec<u8>>)> {
        let mut required = Vec::new();
        if let Tags::Any { names, .. } = &self.tags {
            let mut names: Vec<Vec<u8>> = names.iter().cloned().collect();
            names.sort();
            required.push((TAG_HEADER.to_owned(), names));
        }
        if let Some(sql) = &self.sql {
            conjuncts(sql, &mut required);
        }
        required
    }

    /// Whether a record with these headers matches.
    pub fn matches(&self, headers: &[(&[u8], Option<&[u8]>)]) -> bool {
        let header = |name: &str| {
            headers
                .iter()
                .rev()
                .find(|(key, _)| *key == name.as_bytes())
                .and_then(|(_, value)| *value)
        };
        if let Tags::Any { names, .. } = &self.tags {
            match header(TAG_HEADER) {
                Some(tag) if names.contains(tag) => {}
                _ => return false,
            }
        }
        self.sql.as_ref().is_none_or(|sql| sql.matches(&header))
    }
}

/// The header-equality terms of `expr`'s top-level conjunction.
fn conjuncts(expr: &Expr, into: &mut Vec<(String, Vec<Vec<u8>>)>) {
    match expr {
        Expr::And(left, right) => {
            conjuncts(left, into);
            conjuncts(right, into);
        }
        Expr::Compare(header, sql::Op::Eq, sql::Constant::Text(value)) => {
            into.push((header.clone(), vec![value.as_bytes().to_vec()]));
        }
        Expr::In {
            header,
            values,
            negated: false,
        } => {
            into.push((
                header.clone(),
                values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            ));
        }
        _ => {}
    }
}

fn parse_tags(text: &str) -> Result<Tags, String> {
    let text = text.trim();
    if text == "*" || text.is_empty() {
        return Ok(Tags::All);
    }
    let mut names = HashSet::new();
    for tag in text.split("||") {
        let tag = tag.trim();
        if tag.is_empty() || tag == "*" {
            return Err(format!(
                "view.filter={text}: give tags separated by ||, or * alone for every record"
            ));
        }
        names.insert(tag.as_bytes().to_vec());
    }
    let hashes = names.iter().map(|name| tag_hash(name)).collect();
    Ok(Tags::Any { names, hashes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(tag: &str) -> Vec<(&[u8], Option<&[u8]>)> {
        vec![(TAG_HEADER.as_bytes(), Some(tag.as_bytes()))]
    }

    #[test]
    fn tags_and_sql_both_decide() {
        let filter = Filter::parse("A || B", "").unwrap();
        assert!(filter.matches(&tagged("A")) && filter.matches(&tagged("B")));
        assert!(!filter.matches(&tagged("C")) && !filter.matches(&[]));
        let mut headers = tagged("A");
        headers.push((b"region", Some(b"eu")));
        let both = Filter::parse("A", "region = 'eu'").unwrap();
        assert!(both.matches(&headers));
        assert!(!both.matches(&tagged("A")));
        let sql_only = Filter::parse("*", "region = 'eu'").unwrap();
        assert!(sql_only.matches(&headers) && !sql_only.matches(&[]));
        assert!(Filter::parse("*", "").unwrap().passes_everything());
    }

    #[test]
    fn batch_summaries_decide_without_the_records_when_they_can() {
        let filter = Filter::parse("A || B", "").unwrap();
        let summary = |tags: &[&str], untagged: bool| {
            let mut batch = BatchTags::default();
            for tag in tags {
                batch.add(Some(tag.as_bytes()));
            }
            if untagged {
                batch.add(None);
            }
            batch
        };
        assert_eq!(filter.judge(&summary(&["C", "D"], true)), Verdict::None);
        assert_eq!(filter.judge(&summary(&["A", "B"], false)), Verdict::All);
        assert_eq!(filter.judge(&summary(&["A"], true)), Verdict::Some);
        assert_eq!(filter.judge(&summary(&["A", "C"], false)), Verdict::Some);
        let many: Vec<String> = (0..40).map(|i| format!("T{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(filter.judge(&summary(&many, false)), Verdict::Some);
        let with_sql = Filter::parse("A", "x = 1").unwrap();
        assert_eq!(with_sql.judge(&summary(&["A"], false)), Verdict::Some);
        assert_eq!(with_sql.judge(&summary(&["C"], false)), Verdict::None);
    }

    #[test]
    fn required_values_come_from_tags_and_equalities_anded() {
        let values = |tags: &str, sql: &str| Filter::parse(tags, sql).unwrap().required_values();
        let text = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            values(
                "B || A",
                "region = 'eu' AND (tier IN ('gold', 'silver') AND amount > 1)"
            ),
            vec![
                (TAG_HEADER.to_owned(), text(&["A", "B"])),
                ("region".to_owned(), text(&["eu"])),
                ("tier".to_owned(), text(&["gold", "silver"])),
            ]
        );
        assert!(values("*", "region = 'eu' OR region = 'us'").is_empty());
        assert!(values("*", "NOT region = 'eu'").is_empty());
        assert!(values("*", "amount = 5").is_empty());
        assert!(values("*", "region NOT IN ('eu')").is_empty());
    }

    #[test]
    fn bad_filters_are_refused_with_the_reason() {
        assert!(
            Filter::parse("A ||", "")
                .unwrap_err()
                .contains("view.filter")
        );
        assert!(Filter::parse("A || *", "").is_err());
        assert!(
            Filter::parse("A", "x >")
                .unwrap_err()
                .contains("view.filter.sql")
        );
    }
}
