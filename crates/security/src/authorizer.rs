//! The authorizer: every ACL binding indexed so that a decision is a few hash lookups
//! (the resource's literal name, `*`, and the prefixes of its name whose lengths some
//! PREFIXED binding has), never a scan of all bindings. A request takes the index as
//! it is when the request starts ([`Access`]); a change of the bindings builds a new
//! index and swaps it in.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, PoisonError, RwLock};

use spool_metadata::AclRecord;

use super::acl::{ALLOW, CLUSTER_NAME, Operation, PatternType, ResourceType};

/// What the authorizer is configured with.
#[derive(Debug, Clone, Default)]
pub struct AuthorizerSettings {
    /// `authorizer.enabled`: off, every request is allowed (Spool before ACLs).
    pub enabled: bool,
    /// `super.users`: principals allowed everything.
    pub super_users: HashSet<String>,
    /// `allow.everyone.if.no.acl.found`.
    pub allow_if_no_acl: bool,
}

/// One binding's entry, kept under its resource pattern.
#[derive(Debug)]
struct Entry {
    principal: String,
    host: Host,
    operation: Operation,
    allow: bool,
}

/// A binding's host: `*`, an address, or text that is neither (which no client has).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Host {
    Any,
    Address(IpAddr),
    Never,
}

impl Host {
    fn parse(text: &str) -> Host {
        if text == "*" {
            return Host::Any;
        }
        text.parse::<IpAddr>()
            .map_or(Host::Never, |address| Host::Address(address.to_canonical()))
    }
}

impl Entry {
    fn applies_to(&self, principal: &str, host: IpAddr) -> bool {
        (self.principal == principal || self.principal == "User:*")
            && match self.host {
                Host::Any => true,
                Host::Address(address) => address == host,
                Host::Never => false,
            }
    }
}

/// The bindings of one resource type.
#[derive(Debug, Default)]
struct TypeIndex {
    /// By literal name, `*` included.
    literal: HashMap<String, Vec<Entry>>,
    prefixed: HashMap<String, Vec<Entry>>,
    /// The byte lengths of the prefixes, each once, ascending.
    prefix_lengths: Vec<usize>,
}

impl TypeIndex {
    /// The entries of every binding that applies to `name`.
    fn matching<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Vec<Entry>> + 'a {
        let literal = self.literal.get(name);
        let wildcard = (name != "*").then(|| self.literal.get("*")).flatten();
        let prefixed = self
            .prefix_lengths
            .iter()
            .take_while(move |length| **length <= name.len())
            .filter(move |length| name.is_char_boundary(**length))
            .filter_map(move |length| self.prefixed.get(&name[..*length]));
        literal.into_iter().chain(wildcard).chain(prefixed)
    }
}

/// Every binding, indexed, with the settings that decide alongside them.
#[derive(Debug, Default)]
pub struct AclIndex {
    settings: AuthorizerSettings,
    types: [TypeIndex; 4],
    bindings: Vec<AclRecord>,
}

impl AclIndex {
    pub fn new(settings: AuthorizerSettings, bindings: Vec<AclRecord>) -> AclIndex {
        let mut types: [TypeIndex; 4] = Default::default();
        for acl in &bindings {
            let (Some(resource_type), Some(pattern), Some(operation)) = (
                ResourceType::from_code(acl.resource_type),
                PatternType::from_code(acl.pattern_type),
                Operation::from_code(acl.operation),
            ) else {
                continue;
            };
            let index = &mut types[resource_type.index()];
            let entry = Entry {
                principal: acl.principal.clone(),
                host: Host::parse(&acl.host),
                operation,
                allow: acl.permission == ALLOW,
            };
            let by_name = match pattern {
                PatternType::Literal => &mut index.literal,
                PatternType::Prefixed => &mut index.prefixed,
            };
            by_name
                .entry(acl.resource_name.clone())
                .or_default()
                .push(entry);
        }
        for index in &mut types {
            let mut lengths: Vec<usize> = index.prefixed.keys().map(String::len).collect();
            lengths.sort_unstable();
            lengths.dedup();
            index.prefix_lengths = lengths;
        }
        AclIndex {
            settings,
            types,
            bindings,
        }
    }

    /// Every binding, as stored.
    pub fn bindings(&self) -> &[AclRecord] {
        &self.bindings
    }

    /// Kafka's decision: a super user may; with no binding on the resource,
    /// `allow.everyone.if.no.acl.found` decides; a DENY that applies wins; else an
    /// ALLOW that applies (or implies the operation) allows.
    pub fn allows(
        &self,
        principal: &str,
        host: IpAddr,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if self.settings.super_users.contains(principal) {
            return true;
        }
        let mut any_binding = false;
        let mut allowed = false;
        for entries in self.types[resource_type.index()].matching(name) {
            any_binding |= !entries.is_empty();
            for entry in entries.iter().filter(|e| e.applies_to(principal, host)) {
                if entry.allow {
                    allowed |= entry.operation.allows(operation);
                } else if entry.operation.denies(operation) {
                    return false;
                }
            }
        }
        if any_binding {
            allowed
        } else {
            self.settings.allow_if_no_acl
        }
    }

    /// Whether `operation` is allowed on some resource of the type, named or not
    /// yet: KIP-679's stand-in for IDEMPOTENT_WRITE (WRITE on any topic). A super user
    /// may; with no binding of the type, `allow.everyone.if.no.acl.found` decides; a
    /// DENY on every resource (`*`) refuses; else any ALLOW that applies allows.
    pub fn allows_somewhere(
        &self,
        principal: &str,
        host: IpAddr,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool {
        if self.settings.super_users.contains(principal) {
            return true;
        }
        let index = &self.types[resource_type.index()];
        if index.literal.is_empty() && index.prefixed.is_empty() {
            return self.settings.allow_if_no_acl;
        }
        let applies = |entry: &&Entry| entry.applies_to(principal, host);
        let denied_everywhere = index.literal.get("*").is_some_and(|entries| {
            entries
                .iter()
                .filter(applies)
                .any(|e| !e.allow && e.operation.denies(operation))
        });
        !denied_everywhere
            && index
                .literal
                .values()
                .chain(index.prefixed.values())
                .flatten()
                .filter(applies)
                .any(|e| e.allow && e.operation.allows(operation))
    }
}

/// The authorizer of a broker: its settings and the current index.
#[derive(Debug)]
pub struct Authorizer {
    settings: AuthorizerSettings,
    index: RwLock<Arc<AclIndex>>,
}

impl Authorizer {
    pub fn new(settings: AuthorizerSettings, bindings: Vec<AclRecord>) -> Authorizer {
        Authorizer {
            index: RwLock::new(Arc::new(AclIndex::new(settings.clone(), bindings))),
            settings,
        }
    }

    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// The bindings as they are now.
    pub fn current(&self) -> Arc<AclIndex> {
        self.index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Indexes `bindings` (read again from the store) in place of the old ones.
    pub fn load(&self, bindings: Vec<AclRecord>) {
        let index = Arc::new(AclIndex::new(self.settings.clone(), bindings));
        *self.index.write().unwrap_or_else(PoisonError::into_inner) = index;
    }

    /// What a request of `principal` from `host` may do.
    pub fn access(&self, principal: Arc<str>, host: IpAddr) -> Access {
        Access {
            index: self.settings.enabled.then(|| self.current()),
            principal,
            host: host.to_canonical(),
        }
    }
}

/// What one request may do: decisions for its principal and host against the
/// bindings as they were when it started. Everything is allowed with the authorizer
/// off.
#[derive(Debug, Clone)]
pub struct Access {
    index: Option<Arc<AclIndex>>,
    principal: Arc<str>,
    host: IpAddr,
}

impl Access {
    /// Whether ACLs are enforced at all (`authorizer.enabled`).
    pub fn enforced(&self) -> bool {
        self.index.is_some()
    }

    pub fn principal(&self) -> &str {
        &self.principal
    }

    pub fn allows(&self, operation: Operation, resource: ResourceType, name: &str) -> bool {
        self.index
            .as_ref()
            .is_none_or(|index| index.allows(&self.principal, self.host, operation, resource, name))
    }

    /// Whether `operation` is allowed on some topic (see [`AclIndex::allows_somewhere`]).
    pub fn topic_somewhere(&self, operation: Operation) -> bool {
        self.index.as_ref().is_none_or(|index| {
            index.allows_somewhere(&self.principal, self.host, operation, ResourceType::Topic)
        })
    }

    pub fn topic(&self, operation: Operation, name: &str) -> bool {
        self.allows(operation, ResourceType::Topic, name)
    }

    pub fn group(&self, operation: Operation, name: &str) -> bool {
        self.allows(operation, ResourceType::Group, name)
    }

    pub fn cluster(&self, operation: Operation) -> bool {
        self.allows(operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    pub fn transactional_id(&self, operation: Operation, id: &str) -> bool {
        self.allows(operation, ResourceType::TransactionalId, id)
    }

    /// The authorized-operations bitfield of a resource (Metadata, DescribeGroups):
    /// bit `1 << code` for each operation of its type this request's principal may do.
    pub fn operations(&self, resource: ResourceType, name: &str) -> i32 {
        resource
            .operations()
            .iter()
            .filter(|operation| self.allows(**operation, resource, name))
            .fold(0, |bits, operation| bits | (1 << operation.code()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::acl::DENY;
    use super::*;

    fn acl(
        resource: ResourceType,
        name: &str,
        pattern: PatternType,
        principal: &str,
        operation: Operation,
        permission: i8,
    ) -> AclRecord {
        AclRecord {
            resource_type: resource.code(),
            resource_name: name.to_owned(),
            pattern_type: pattern.code(),
            principal: principal.to_owned(),
            host: "*".to_owned(),
            operation: operation.code(),
            permission,
        }
    }

    fn access(index: &Arc<AclIndex>, principal: &str) -> Access {
        Access {
            index: Some(index.clone()),
            principal: Arc::from(principal),
            host: IpAddr::from([10, 0, 0, 1]),
        }
    }

    fn settings(allow_if_no_acl: bool) -> AuthorizerSettings {
        AuthorizerSettings {
            enabled: true,
            super_users: HashSet::from(["User:admin".to_owned()]),
            allow_if_no_acl,
        }
    }

    #[test]
    fn deny_wins_prefixes_apply_and_super_users_pass() {
        use Operation::*;
        use PatternType::*;
        use ResourceType::Topic;
        let index = Arc::new(AclIndex::new(
            settings(false),
            vec![
                acl(Topic, "orders", Prefixed, "User:alice", Read, ALLOW),
                acl(Topic, "orders.secret", Literal, "User:alice", Read, DENY),
                acl(Topic, "*", Literal, "User:*", Write, ALLOW),
                acl(Topic, "audit", Literal, "User:bob", All, DENY),
            ],
        ));
        let alice = access(&index, "User:alice");
        assert!(alice.topic(Read, "orders.eu"));
        assert!(alice.topic(Describe, "orders.eu"), "implied by READ");
        assert!(!alice.topic(Read, "orders.secret"), "DENY wins");
        assert!(
            alice.topic(Describe, "orders.secret"),
            "a DENY implies nothing"
        );
        assert!(!alice.topic(Read, "payments"));
        assert!(
            alice.topic(Write, "payments"),
            "the wildcard applies to all"
        );
        let bob = access(&index, "User:bob");
        assert!(!bob.topic(Write, "audit"));
        assert!(access(&index, "User:admin").topic(Delete, "audit"));
        // No binding on a group: allow.everyone.if.no.acl.found (false).
        assert!(!alice.group(Read, "g"));
        let open = Arc::new(AclIndex::new(settings(true), Vec::new()));
        assert!(access(&open, "User:alice").group(Read, "g"));
    }

    #[test]
    fn write_somewhere_stands_for_idempotent_write() {
        use Operation::*;
        use PatternType::*;
        use ResourceType::Topic;
        let index = Arc::new(AclIndex::new(
            settings(false),
            vec![
                // A prefix covers topics not made yet (KIP-679).
                acl(Topic, "new-", Prefixed, "User:alice", Write, ALLOW),
                acl(Topic, "logs", Literal, "User:bob", Read, ALLOW),
                acl(Topic, "x", Literal, "User:carol", Write, ALLOW),
                acl(Topic, "*", Literal, "User:carol", Write, DENY),
            ],
        ));
        assert!(access(&index, "User:alice").topic_somewhere(Write));
        assert!(
            !access(&index, "User:bob").topic_somewhere(Write),
            "READ is not WRITE"
        );
        assert!(
            !access(&index, "User:carol").topic_somewhere(Write),
            "denied everywhere"
        );
        assert!(access(&index, "User:admin").topic_somewhere(Write));
        let empty = Arc::new(AclIndex::new(settings(true), Vec::new()));
        assert!(access(&empty, "User:bob").topic_somewhere(Write));
    }

    #[test]
    fn hosts_narrow_a_binding() {
        let mut binding = acl(
            ResourceType::Group,
            "g",
            PatternType::Literal,
            "User:alice",
            Operation::Read,
            ALLOW,
        );
        binding.host = "10.0.0.2".to_owned();
        let index = Arc::new(AclIndex::new(settings(true), vec![binding]));
        // A binding exists for the group, so the default no longer applies.
        assert!(!access(&index, "User:alice").group(Operation::Read, "g"));
    }

    #[test]
    fn the_bitfield_holds_what_is_allowed() {
        let index = Arc::new(AclIndex::new(
            settings(false),
            vec![acl(
                ResourceType::Topic,
                "t",
                PatternType::Literal,
                "User:alice",
                Operation::Write,
                ALLOW,
            )],
        ));
        let bits = access(&index, "User:alice").operations(ResourceType::Topic, "t");
        assert_eq!(bits, (1 << 4) | (1 << 8));
    }
}
