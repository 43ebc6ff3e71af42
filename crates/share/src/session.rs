//! Share sessions: what a partition leader remembers of each (group, member) between
//! its ShareFetch requests, by KIP-932's rules.
//!
//! - Epoch 0 opens a session (replacing the member's old one, whose records are
//!   released) and may not carry acknowledgements.
//! - Epoch N > 0 continues it: N must be the epoch expected next (the one after the
//!   last, wrapping from `i32::MAX` to 1). Its partitions add to the session's; its
//!   forgotten ones leave it (the member's records in them are released). A fetch
//!   covers every partition of the session.
//! - Epoch −1 closes it, after its acknowledgements; nothing is fetched, nothing may
//!   be forgotten. Closing releases the member's records.
//! - ShareAcknowledge continues or closes a session; it cannot open one.
//! - A session unused for the member's session timeout is dropped (its records
//!   released), and so is one whose connection closed: each session remembers the
//!   connection its last request came on (as Kafka's share session cache does).

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::error::ShareError;

/// A topic partition, by topic id.
pub type PartitionRef = (Uuid, i32);

/// The session epoch that opens a session.
pub const OPEN: i32 = 0;
/// The session epoch that closes one.
pub const CLOSE: i32 = -1;

/// A client connection to this broker, numbered as it was accepted.
pub type ConnectionId = u64;

/// A session that ended without its member closing it: the member's records in
/// `partitions` are to be released.
pub type Ended = (String, String, Vec<PartitionRef>);

/// The sessions of one broker.
#[derive(Debug)]
pub struct ShareSessions {
    sessions: HashMap<(String, String), Session>,
    limit: usize,
}

#[derive(Debug)]
struct Session {
    next_epoch: i32,
    partitions: BTreeSet<PartitionRef>,
    last_used: Instant,
    connection: ConnectionId,
}

/// What a ShareFetch says about its session.
#[derive(Debug, Clone)]
pub struct SessionRequest<'a> {
    pub group: &'a str,
    pub member: &'a str,
    pub epoch: i32,
    /// The connection it came on.
    pub connection: ConnectionId,
    /// The partitions it names (added to the session).
    pub added: Vec<PartitionRef>,
    pub forgotten: Vec<PartitionRef>,
    pub has_acknowledgements: bool,
}

/// What the broker is to do for a ShareFetch, the session's rules applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStep {
    /// Fetch from `partitions` (the session's, all of them); first release the
    /// member's records in `released` (a replaced session's, or forgotten ones).
    Fetch {
        partitions: Vec<PartitionRef>,
        released: Vec<PartitionRef>,
    },
    /// The session is closed: after the acknowledgements, release the member's
    /// records in `released`; fetch nothing.
    Closed { released: Vec<PartitionRef> },
}

impl ShareSessions {
    /// Sessions for at most `limit` members at once.
    #[must_use]
    pub fn new(limit: usize) -> ShareSessions {
        ShareSessions {
            sessions: HashMap::new(),
            limit,
        }
    }

    /// How many sessions are open.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Applies a ShareFetch's session fields.
    pub fn fetch(
        &mut self,
        request: &SessionRequest<'_>,
        now: Instant,
    ) -> Result<SessionStep, ShareError> {
        let key = (request.group.to_owned(), request.member.to_owned());
        match request.epoch {
            OPEN => {
                if request.has_acknowledgements {
                    return Err(ShareError::InvalidRequest(
                        "a ShareFetch opening a share session cannot acknowledge records"
                            .to_owned(),
                    ));
                }
                let replaced = self.sessions.remove(&key);
                if replaced.is_none() && self.sessions.len() >= self.limit {
                    return Err(ShareError::SessionLimitReached(self.limit));
                }
                let partitions: BTreeSet<PartitionRef> = request
                    .added
                    .iter()
                    .copied()
                    .filter(|p| !request.forgotten.contains(p))
                    .collect();
                self.sessions.insert(
                    key,
                    Session {
                        next_epoch: 1,
                        partitions: partitions.clone(),
                        last_used: now,
                        connection: request.connection,
                    },
                );
                Ok(SessionStep::Fetch {
                    partitions: partitions.into_iter().collect(),
                    released: replaced
                        .map(|old| old.partitions.into_iter().collect())
                        .unwrap_or_default(),
                })
            }
            CLOSE => {
                if !request.forgotten.is_empty() {
                    return Err(ShareError::InvalidRequest(
                        "a ShareFetch closing a share session cannot forget partitions".to_owned(),
                    ));
                }
                let session = self
                    .sessions
                    .remove(&key)
                    .ok_or_else(|| not_found(request.group, request.member))?;
                Ok(SessionStep::Closed {
                    released: session.partitions.into_iter().collect(),
                })
            }
            epoch => {
                let session = self
                    .sessions
                    .get_mut(&key)
                    .ok_or_else(|| not_found(request.group, request.member))?;
                check_epoch(session, epoch)?;
                session.next_epoch = next(epoch);
                session.last_used = now;
                session.connection = request.connection;
                session.partitions.extend(request.added.iter().copied());
                let mut released = Vec::new();
                for partition in &request.forgotten {
                    if session.partitions.remove(partition) {
                        released.push(*partition);
                    }
                }
                Ok(SessionStep::Fetch {
                    partitions: session.partitions.iter().copied().collect(),
                    released,
                })
            }
        }
    }

    /// Applies a ShareAcknowledge's session epoch: `Some(partitions)` when it closed
    /// the session (the member's records there are to be released).
    pub fn acknowledge(
        &mut self,
        group: &str,
        member: &str,
        epoch: i32,
        connection: ConnectionId,
        now: Instant,
    ) -> Result<Option<Vec<PartitionRef>>, ShareError> {
        let key = (group.to_owned(), member.to_owned());
        if epoch == OPEN {
            return Err(ShareError::InvalidSessionEpoch {
                got: OPEN,
                expected: self.sessions.get(&key).map_or(OPEN, |s| s.next_epoch),
            });
        }
        if epoch == CLOSE {
            let session = self
                .sessions
                .remove(&key)
                .ok_or_else(|| not_found(group, member))?;
            return Ok(Some(session.partitions.into_iter().collect()));
        }
        let session = self
            .sessions
            .get_mut(&key)
            .ok_or_else(|| not_found(group, member))?;
        check_epoch(session, epoch)?;
        session.next_epoch = next(epoch);
        session.last_used = now;
        session.connection = connection;
        Ok(None)
    }

    /// Drops the sessions unused for `idle(group)`; returns each with the
    /// partitions whose records its member held.
    pub fn expire(&mut self, now: Instant, idle: impl Fn(&str) -> Duration) -> Vec<Ended> {
        self.end_where(|(group, _), session| {
            now.saturating_duration_since(session.last_used) >= idle(group)
        })
    }

    /// Drops the sessions whose last request came on `connection`, which closed;
    /// returns each with the partitions whose records its member held.
    pub fn connection_closed(&mut self, connection: ConnectionId) -> Vec<Ended> {
        if self.sessions.is_empty() {
            return Vec::new();
        }
        self.end_where(|_, session| session.connection == connection)
    }

    fn end_where(&mut self, ends: impl Fn(&(String, String), &Session) -> bool) -> Vec<Ended> {
        let ended: Vec<(String, String)> = self
            .sessions
            .iter()
            .filter(|(key, session)| ends(key, session))
            .map(|(key, _)| key.clone())
            .collect();
        ended
            .into_iter()
            .filter_map(|key| {
                let session = self.sessions.remove(&key)?;
                Some((key.0, key.1, session.partitions.into_iter().collect()))
            })
            .collect()
    }

    /// Drops every session of `group` (the group was deleted).
    pub fn forget_group(&mut self, group: &str) {
        self.sessions.retain(|(g, _), _| g != group);
    }
}

fn check_epoch(session: &Session, epoch: i32) -> Result<(), ShareError> {
    if epoch == session.next_epoch {
        Ok(())
    } else {
        Err(ShareError::InvalidSessionEpoch {
            got: epoch,
            expected: session.next_epoch,
        })
    }
}

fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX { 1 } else { epoch + 1 }
}

fn not_found(group: &str, member: &str) -> ShareError {
    ShareError::SessionNotFound {
        group: group.to_owned(),
        member: member.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(
        epoch: i32,
        added: &[PartitionRef],
        forgotten: &[PartitionRef],
        acks: bool,
    ) -> SessionRequest<'static> {
        SessionRequest {
            group: "g",
            member: "m",
            epoch,
            connection: 1,
            added: added.to_vec(),
            forgotten: forgotten.to_vec(),
            has_acknowledgements: acks,
        }
    }

    #[test]
    fn a_session_opens_at_zero_and_goes_on_epoch_by_epoch() {
        let (mut sessions, now) = (ShareSessions::new(10), Instant::now());
        let (t, u) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert!(matches!(
            sessions.fetch(&request(OPEN, &[(t, 0)], &[], true), now),
            Err(ShareError::InvalidRequest(_))
        ));
        assert!(matches!(
            sessions.fetch(&request(1, &[(t, 0)], &[], false), now),
            Err(ShareError::SessionNotFound { .. })
        ));
        let opened = sessions.fetch(&request(OPEN, &[(t, 0)], &[], false), now);
        assert_eq!(
            opened,
            Ok(SessionStep::Fetch {
                partitions: vec![(t, 0)],
                released: vec![]
            })
        );
        let added = sessions.fetch(&request(1, &[(u, 3)], &[], true), now);
        assert_eq!(
            added,
            Ok(SessionStep::Fetch {
                partitions: vec![(t, 0), (u, 3)],
                released: vec![]
            })
        );
        assert_eq!(
            sessions.fetch(&request(1, &[], &[], false), now),
            Err(ShareError::InvalidSessionEpoch {
                got: 1,
                expected: 2
            })
        );
        assert_eq!(sessions.acknowledge("g", "m", 2, 1, now), Ok(None));
        let forgot = sessions.fetch(&request(3, &[], &[(t, 0)], false), now);
        assert_eq!(
            forgot,
            Ok(SessionStep::Fetch {
                partitions: vec![(u, 3)],
                released: vec![(t, 0)]
            })
        );
        assert_eq!(
            sessions.acknowledge("g", "m", CLOSE, 1, now),
            Ok(Some(vec![(u, 3)]))
        );
        assert!(sessions.is_empty());
    }

    #[test]
    fn reopening_releases_the_old_session_and_acknowledge_cannot_open() {
        let (mut sessions, now) = (ShareSessions::new(1), Instant::now());
        let t = Uuid::from_u128(1);
        assert!(matches!(
            sessions.acknowledge("g", "m", OPEN, 1, now),
            Err(ShareError::InvalidSessionEpoch { .. })
        ));
        let _ = sessions.fetch(&request(OPEN, &[(t, 0)], &[], false), now);
        let again = sessions.fetch(&request(OPEN, &[(t, 1)], &[], false), now);
        assert_eq!(
            again,
            Ok(SessionStep::Fetch {
                partitions: vec![(t, 1)],
                released: vec![(t, 0)]
            })
        );
        let other = SessionRequest {
            member: "n",
            ..request(OPEN, &[(t, 0)], &[], false)
        };
        assert_eq!(
            sessions.fetch(&other, now),
            Err(ShareError::SessionLimitReached(1))
        );
    }

    #[test]
    fn an_idle_session_expires_and_epochs_wrap() {
        let (mut sessions, now) = (ShareSessions::new(10), Instant::now());
        let t = Uuid::from_u128(1);
        let _ = sessions.fetch(&request(OPEN, &[(t, 0)], &[], false), now);
        assert!(sessions.expire(now, |_| Duration::from_secs(45)).is_empty());
        let later = now + Duration::from_secs(45);
        assert_eq!(
            sessions.expire(later, |_| Duration::from_secs(45)),
            vec![("g".to_owned(), "m".to_owned(), vec![(t, 0)])]
        );
        assert_eq!(next(i32::MAX), 1);
    }

    #[test]
    fn a_closed_connection_ends_the_sessions_whose_last_request_came_on_it() {
        let (mut sessions, now) = (ShareSessions::new(10), Instant::now());
        let t = Uuid::from_u128(1);
        let _ = sessions.fetch(&request(OPEN, &[(t, 0)], &[], false), now);
        let moved = SessionRequest {
            connection: 2,
            ..request(1, &[], &[], false)
        };
        assert!(sessions.fetch(&moved, now).is_ok());
        assert!(sessions.connection_closed(1).is_empty());
        assert_eq!(sessions.len(), 1);
        assert_eq!(
            sessions.connection_closed(2),
            vec![("g".to_owned(), "m".to_owned(), vec![(t, 0)])]
        );
        assert!(sessions.is_empty());
    }
}
