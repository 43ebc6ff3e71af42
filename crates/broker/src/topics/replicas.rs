//! How many copies a topic asks for and which brokers a client names for its
//! partitions, checked against the brokers that may hold a replica: this broker alone
//! in embedded mode (one copy); in a cluster the live writers, the object store
//! keeping the copies (docs/cluster.md#replication-factor).

use super::AdminError;
use crate::errors::code;

/// The brokers that may hold a replica: a cluster's live writers, or (`clustered`
/// false) this broker.
#[derive(Debug)]
pub(super) struct Holders {
    pub(super) nodes: Vec<i32>,
    pub(super) clustered: bool,
}

/// The replication factor a topic is created with: −1 is 1 (Kafka's
/// `default.replication.factor`); up to as many as there are holders (Metadata names
/// that many replicas, all in sync).
pub(super) fn replication_factor(holders: &Holders, asked: i16) -> Result<i16, AdminError> {
    let count = holders.nodes.len().max(1);
    match asked {
        -1 => Ok(1),
        n if n >= 1 && usize::try_from(n).is_ok_and(|n| n <= count) => Ok(n),
        n if !holders.clustered => Err(AdminError::new(
            code::INVALID_REPLICATION_FACTOR,
            format!("replication factor {n}: this broker stores one copy (use 1 or -1)"),
        )),
        n => Err(AdminError::new(
            code::INVALID_REPLICATION_FACTOR,
            format!(
                "replication factor {n}: {count} live broker(s) can hold replicas (the \
                 object store keeps the copies; use 1 to {count})"
            ),
        )),
    }
}

/// A client's replica assignment for new partitions of a topic replicated `factor`
/// times (`None`: any one factor, the same for all): each partition names that many
/// distinct brokers, all of them holders. Kafka's code: `INVALID_REPLICA_ASSIGNMENT`.
pub(super) fn check_assignment(
    holders: &Holders,
    assignment: &[Vec<i32>],
    factor: Option<i16>,
) -> Result<(), AdminError> {
    let refuse = |message: String| Err(AdminError::new(code::INVALID_REPLICA_ASSIGNMENT, message));
    let width = factor.map_or_else(
        || assignment.first().map_or(0, Vec::len),
        |f| usize::try_from(f).unwrap_or(0),
    );
    for (partition, replicas) in assignment.iter().enumerate() {
        let mut seen = replicas.clone();
        seen.sort_unstable();
        seen.dedup();
        if replicas.is_empty() || seen.len() != replicas.len() {
            return refuse(format!(
                "partition {partition}: name each broker once, at least one"
            ));
        }
        if replicas.len() != width {
            return refuse(format!(
                "partition {partition} names {} brokers, not {width}: every partition has the \
                 topic's replication factor",
                replicas.len()
            ));
        }
        if let Some(node) = replicas.iter().find(|node| !holders.nodes.contains(node)) {
            return refuse(format!(
                "partition {partition}: broker {node} is not a live broker that leads \
                 partitions ({:?})",
                holders.nodes
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Holders {
        Holders {
            nodes: vec![1, 2, 3],
            clustered: true,
        }
    }

    #[test]
    fn factors_go_up_to_the_holders() {
        assert_eq!(replication_factor(&cluster(), -1).ok(), Some(1));
        assert_eq!(replication_factor(&cluster(), 3).ok(), Some(3));
        assert!(replication_factor(&cluster(), 4).is_err());
        assert!(replication_factor(&cluster(), 0).is_err());
        let embedded = Holders {
            nodes: vec![1],
            clustered: false,
        };
        assert!(replication_factor(&embedded, 2).is_err());
    }

    #[test]
    fn assignments_name_holders_once_with_one_width() {
        let check = |lists: &[Vec<i32>], factor| check_assignment(&cluster(), lists, factor);
        assert!(check(&[vec![2, 1], vec![3, 2]], None).is_ok());
        assert!(check(&[vec![2, 1]], Some(2)).is_ok());
        for bad in [
            vec![vec![1, 1]],
            vec![vec![]],
            vec![vec![1, 9]],
            vec![vec![1, 2], vec![3]],
        ] {
            assert!(check(&bad, None).is_err(), "{bad:?}");
        }
        assert!(check(&[vec![1, 2, 3]], Some(2)).is_err());
    }
}
