//! ACLs through the broker, in the manner of Kafka's `AuthorizerIntegrationTest`: for
//! each API, a principal without the binding it needs is refused with the API's code,
//! and the same request succeeds once an admin grants it (a grant applies to the next
//! request, on the same connection). The principal under test is `User:ANONYMOUS` on
//! the PLAINTEXT listener; the admin is a super user logged in over SASL PLAIN.
//! Real clients' ACL tooling is in `compat/test_acls.py`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    CreatePartitionsRequest, DeleteGroupsRequest, DeleteRecordsRequest, DescribeConfigsRequest,
    DescribeGroupsRequest, DescribeUserScramCredentialsRequest, FindCoordinatorRequest, GroupId,
    InitProducerIdRequest, ListGroupsRequest, MetadataRequest, OffsetCommitRequest,
    OffsetFetchRequest, ProducerId, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_testkit::{Acl, BatchBuilder, FetchAt, RawClient, TestBroker, topic_name};

const ANONYMOUS: &str = "User:ANONYMOUS";

// Resource types, operations and error codes, by their wire numbers.
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const TRANSACTIONAL_ID: i8 = 5;
const READ: i8 = 3;
const WRITE: i8 = 4;
const CREATE: i8 = 5;
const DELETE: i8 = 6;
const ALTER: i8 = 7;
const DESCRIBE: i8 = 8;
const DESCRIBE_CONFIGS: i8 = 10;
const IDEMPOTENT_WRITE: i8 = 12;
const TOPIC_DENIED: i16 = 29;
const GROUP_DENIED: i16 = 30;
const CLUSTER_DENIED: i16 = 31;
const TXN_DENIED: i16 = 53;
const SECURITY_DISABLED: i16 = 54;

/// A broker enforcing ACLs; an admin (super user) client; the PLAINTEXT listener.
async fn secured() -> (TestBroker, RawClient, RawClient) {
    let broker = TestBroker::start_secured(
        &[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            ),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("authorizer.enabled", "true"),
            ("super.users", "User:admin"),
        ],
        ("admin", "admin-secret"),
    )
    .await;
    let sasl = broker.listener_addr("SASL_PLAINTEXT");
    let mut admin = RawClient::connect(sasl).await;
    assert_eq!(admin.login_plain("admin", "admin-secret").await, 0);
    let plaintext = broker.listener_addr("PLAINTEXT");
    let anonymous = RawClient::connect(plaintext).await;
    (broker, admin, anonymous)
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

fn one_record() -> Vec<u8> {
    BatchBuilder::new().values(1, 16).build()
}

async fn grant(admin: &mut RawClient, acls: &[Acl]) {
    let codes = admin.create_acls(acls).await;
    assert!(codes.iter().all(|code| *code == 0), "granted: {codes:?}");
}

/// The answer to `call` before and after the grant: refused with `denied`, then
/// answered with `allowed`.
macro_rules! refused_until_granted {
    ($admin:expr, [$($acl:expr),+ $(,)?], $call:expr, $denied:expr, $allowed:expr) => {{
        assert_eq!($call, $denied, "without the grant: {}", stringify!($call));
        grant(&mut $admin, &[$($acl),+]).await;
        assert_eq!($call, $allowed, "with the grant: {}", stringify!($call));
    }};
}

async fn metadata(client: &mut RawClient, topic: Option<&str>) -> Vec<(String, i16, i32)> {
    let topics =
        topic.map(|name| vec![MetadataRequestTopic::default().with_name(Some(topic_name(name)))]);
    let request = MetadataRequest::default()
        .with_topics(topics)
        .with_allow_auto_topic_creation(false)
        .with_include_topic_authorized_operations(true);
    let ResponseKind::Metadata(response) = client.call(RequestKind::Metadata(request), 12).await
    else {
        panic!("not a Metadata response")
    };
    response
        .topics
        .iter()
        .map(|t| {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            (name, t.error_code, t.topic_authorized_operations)
        })
        .collect()
}

async fn fetch_code(client: &mut RawClient, topic: &str) -> i16 {
    client
        .fetch(
            12,
            topic,
            &[FetchAt {
                partition: 0,
                offset: 0,
                max_bytes: 1 << 20,
            }],
            0,
            0,
            1 << 20,
        )
        .await[0]
        .error_code
}

async fn delete_records(client: &mut RawClient, topic: &str) -> i16 {
    let request = DeleteRecordsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![
            DeleteRecordsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    DeleteRecordsPartition::default()
                        .with_partition_index(0)
                        .with_offset(0),
                ]),
        ]);
    let ResponseKind::DeleteRecords(response) =
        client.call(RequestKind::DeleteRecords(request), 2).await
    else {
        panic!("not a DeleteRecords response")
    };
    response.topics[0].partitions[0].error_code
}

async fn create_partitions(client: &mut RawClient, topic: &str, count: i32) -> i16 {
    let request = CreatePartitionsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![
            CreatePartitionsTopic::default()
                .with_name(topic_name(topic))
                .with_count(count),
        ]);
    let ResponseKind::CreatePartitions(response) =
        client.call(RequestKind::CreatePartitions(request), 3).await
    else {
        panic!("not a CreatePartitions response")
    };
    response.results[0].error_code
}

async fn describe_configs(client: &mut RawClient, resource_type: i8, name: &str) -> i16 {
    let request = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(text(name)),
    ]);
    let ResponseKind::DescribeConfigs(response) =
        client.call(RequestKind::DescribeConfigs(request), 4).await
    else {
        panic!("not a DescribeConfigs response")
    };
    response.results[0].error_code
}

async fn find_coordinator(client: &mut RawClient, key_type: i8, key: &str) -> i16 {
    let request = FindCoordinatorRequest::default()
        .with_key_type(key_type)
        .with_coordinator_keys(vec![text(key)]);
    let ResponseKind::FindCoordinator(response) =
        client.call(RequestKind::FindCoordinator(request), 4).await
    else {
        panic!("not a FindCoordinator response")
    };
    response.coordinators[0].error_code
}

/// OffsetCommit v8 of partition 0 outside any membership: the partition's code.
async fn commit(client: &mut RawClient, group: &str, topic: &str) -> i16 {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(text(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(1),
                ]),
        ]);
    let ResponseKind::OffsetCommit(response) =
        client.call(RequestKind::OffsetCommit(request), 8).await
    else {
        panic!("not an OffsetCommit response")
    };
    response.topics[0].partitions[0].error_code
}

/// OffsetFetch v7 of partition 0: (the group's code, the partition's code).
async fn offset_fetch(client: &mut RawClient, group: &str, topic: &str) -> (i16, i16) {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(text(group)))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partition_indexes(vec![0]),
        ]));
    let ResponseKind::OffsetFetch(response) =
        client.call(RequestKind::OffsetFetch(request), 7).await
    else {
        panic!("not an OffsetFetch response")
    };
    (
        response.error_code,
        response.topics[0].partitions[0].error_code,
    )
}

/// DescribeGroups v5: (the group's code, its authorized operations).
async fn describe_group(client: &mut RawClient, group: &str) -> (i16, i32) {
    let request = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(text(group))])
        .with_include_authorized_operations(true);
    let ResponseKind::DescribeGroups(response) =
        client.call(RequestKind::DescribeGroups(request), 5).await
    else {
        panic!("not a DescribeGroups response")
    };
    let group = &response.groups[0];
    (group.error_code, group.authorized_operations)
}

async fn list_groups(client: &mut RawClient) -> Vec<String> {
    let ResponseKind::ListGroups(response) = client
        .call(RequestKind::ListGroups(ListGroupsRequest::default()), 4)
        .await
    else {
        panic!("not a ListGroups response")
    };
    response
        .groups
        .iter()
        .map(|g| g.group_id.0.to_string())
        .collect()
}

async fn delete_group(client: &mut RawClient, group: &str) -> i16 {
    let request = DeleteGroupsRequest::default().with_groups_names(vec![GroupId(text(group))]);
    let ResponseKind::DeleteGroups(response) =
        client.call(RequestKind::DeleteGroups(request), 2).await
    else {
        panic!("not a DeleteGroups response")
    };
    response.results[0].error_code
}

async fn init_idempotent(client: &mut RawClient) -> i16 {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(-1)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let ResponseKind::InitProducerId(response) =
        client.call(RequestKind::InitProducerId(request), 4).await
    else {
        panic!("not an InitProducerId response")
    };
    response.error_code
}

async fn describe_users(client: &mut RawClient) -> i16 {
    let request = DescribeUserScramCredentialsRequest::default().with_users(None);
    let ResponseKind::DescribeUserScramCredentials(response) = client
        .call(RequestKind::DescribeUserScramCredentials(request), 0)
        .await
    else {
        panic!("not a DescribeUserScramCredentials response")
    };
    response.error_code
}

#[tokio::test]
async fn acls_are_created_described_and_deleted_by_admins_only() {
    let (_broker, mut admin, mut anonymous) = secured().await;
    let binding = Acl::allow(TOPIC, "orders", ANONYMOUS, READ);
    assert_eq!(
        anonymous.create_acls(std::slice::from_ref(&binding)).await,
        vec![CLUSTER_DENIED]
    );
    assert_eq!(anonymous.describe_acls(None).await.0, CLUSTER_DENIED);
    assert_eq!(
        anonymous.delete_acls("orders", false).await.0,
        CLUSTER_DENIED
    );

    let prefix = Acl::allow(TOPIC, "ord", ANONYMOUS, WRITE).prefixed();
    let other = Acl::allow(GROUP, "g", "User:bob", READ).deny();
    let mut unspecific = binding.clone();
    unspecific.operation = 1; // ANY: a filter's value, not a binding's
    assert_eq!(
        admin
            .create_acls(&[binding.clone(), prefix.clone(), other.clone(), unspecific])
            .await,
        vec![0, 0, 0, 42]
    );
    let (code, mut mine) = admin.describe_acls(Some(ANONYMOUS)).await;
    assert_eq!(code, 0);
    mine.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(mine, vec![prefix, binding]);
    assert_eq!(admin.describe_acls(None).await.1.len(), 3);
    // MATCH: every binding that applies to "orders" (its literal and the prefix).
    assert_eq!(admin.delete_acls("orders", true).await, (0, 2));
    assert_eq!(admin.describe_acls(None).await.1, vec![other]);

    // With the authorizer off, the ACL APIs say so.
    let open = TestBroker::start().await;
    let mut client = open.client().await;
    assert_eq!(
        client
            .create_acls(&[Acl::allow(TOPIC, "t", ANONYMOUS, READ)])
            .await,
        vec![SECURITY_DISABLED]
    );
    assert_eq!(client.describe_acls(None).await.0, SECURITY_DISABLED);
}

#[tokio::test]
async fn each_api_is_refused_until_its_binding_is_granted() {
    let (broker, mut admin, mut anon) = secured().await;
    for topic in [
        "t-produce",
        "t-fetch",
        "t-describe",
        "t-delete",
        "t-alter",
        "t-commit",
    ] {
        assert_eq!(admin.create_topic(topic, 1).await, 0);
        assert_eq!(admin.produce(topic, 0, one_record()).await.0, 0);
    }

    // Metadata: unauthorized topics are left out of "all", refused when named.
    assert!(metadata(&mut anon, None).await.is_empty());
    let allowed_ops = (1 << READ) | (1 << DESCRIBE);
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "t-describe", ANONYMOUS, READ)],
        metadata(&mut anon, Some("t-describe")).await[0].1,
        TOPIC_DENIED,
        0
    );
    assert_eq!(
        metadata(&mut anon, None).await,
        vec![("t-describe".to_owned(), 0, allowed_ops)]
    );
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "t-produce", ANONYMOUS, WRITE)],
        anon.produce("t-produce", 0, one_record()).await.0,
        TOPIC_DENIED,
        0
    );
    // CVE-2018-17196: a transactional batch needs WRITE on a transactional id, whatever
    // the request claims.
    let transactional = BatchBuilder::new()
        .producer(1000, 0, 0)
        .attributes(0x10)
        .values(1, 16)
        .build();
    assert_eq!(
        anon.produce("t-produce", 0, transactional).await.0,
        TXN_DENIED
    );
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "t-fetch", ANONYMOUS, READ)],
        fetch_code(&mut anon, "t-fetch").await,
        TOPIC_DENIED,
        0
    );
    // ListOffsets needs DESCRIBE, which READ (granted above) implies.
    assert_eq!(anon.list_offset(7, "t-fetch", 0, -1).await.error_code, 0);
    assert_eq!(
        anon.list_offset(7, "t-delete", 0, -1).await.error_code,
        TOPIC_DENIED
    );
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "t-delete", ANONYMOUS, DELETE)],
        delete_records(&mut anon, "t-delete").await,
        TOPIC_DENIED,
        0
    );
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "t-alter", ANONYMOUS, ALTER)],
        create_partitions(&mut anon, "t-alter", 2).await,
        TOPIC_DENIED,
        0
    );
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "t-alter", ANONYMOUS, DESCRIBE_CONFIGS)],
        describe_configs(&mut anon, TOPIC, "t-alter").await,
        TOPIC_DENIED,
        0
    );
    refused_until_granted!(
        admin,
        [Acl::allow(
            CLUSTER,
            "kafka-cluster",
            ANONYMOUS,
            DESCRIBE_CONFIGS
        )],
        describe_configs(&mut anon, 4, "1").await,
        CLUSTER_DENIED,
        0
    );
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "t-alter", ANONYMOUS, 11)],
        anon.set_config(TOPIC, "t-alter", "retention.ms", "60000")
            .await,
        TOPIC_DENIED,
        0
    );
    // CreateTopics and DeleteTopics, through a prefixed binding.
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "new-", ANONYMOUS, CREATE).prefixed()],
        anon.create_topic("new-topic", 1).await,
        TOPIC_DENIED,
        0
    );
    assert_eq!(anon.create_topic("other-topic", 1).await, TOPIC_DENIED);
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "new-", ANONYMOUS, DELETE).prefixed()],
        anon.delete_topic("new-topic").await,
        TOPIC_DENIED,
        0
    );

    // Groups: FindCoordinator needs DESCRIBE on the group, OffsetCommit READ on the
    // group and the topic, OffsetFetch DESCRIBE on both, DeleteGroups DELETE.
    refused_until_granted!(
        admin,
        [Acl::allow(GROUP, "g", ANONYMOUS, DESCRIBE)],
        find_coordinator(&mut anon, 0, "g").await,
        GROUP_DENIED,
        0
    );
    refused_until_granted!(
        admin,
        [Acl::allow(GROUP, "g", ANONYMOUS, READ)],
        commit(&mut anon, "g", "t-commit").await,
        GROUP_DENIED,
        TOPIC_DENIED
    );
    assert_eq!(
        offset_fetch(&mut anon, "g", "t-commit").await,
        (0, TOPIC_DENIED)
    );
    refused_until_granted!(
        admin,
        [Acl::allow(TOPIC, "t-commit", ANONYMOUS, READ)],
        commit(&mut anon, "g", "t-commit").await,
        TOPIC_DENIED,
        0
    );
    assert_eq!(offset_fetch(&mut anon, "g", "t-commit").await, (0, 0));
    assert_eq!(
        offset_fetch(&mut anon, "h", "t-commit").await.0,
        GROUP_DENIED
    );
    let group_ops = (1 << READ) | (1 << DESCRIBE);
    assert_eq!(describe_group(&mut anon, "g").await, (0, group_ops));
    assert_eq!(describe_group(&mut anon, "h").await.0, GROUP_DENIED);
    assert_eq!(list_groups(&mut admin).await, vec!["g".to_owned()]);
    grant(&mut admin, &[Acl::allow(GROUP, "h", ANONYMOUS, READ)]).await;
    assert_eq!(commit(&mut anon, "h", "t-commit").await, 0);
    // Without DESCRIBE on the cluster, only the groups it may describe are listed.
    let mut listed = list_groups(&mut anon).await;
    listed.sort();
    assert_eq!(listed, vec!["g".to_owned(), "h".to_owned()]);
    // A DENY of READ leaves DESCRIBE (implied by the ALLOW of READ) alone; a DENY of
    // DESCRIBE takes it away.
    grant(
        &mut admin,
        &[Acl::allow(GROUP, "h", ANONYMOUS, READ).deny()],
    )
    .await;
    assert_eq!(list_groups(&mut anon).await.len(), 2);
    grant(
        &mut admin,
        &[Acl::allow(GROUP, "h", ANONYMOUS, DESCRIBE).deny()],
    )
    .await;
    assert_eq!(list_groups(&mut anon).await, vec!["g".to_owned()]);
    refused_until_granted!(
        admin,
        [Acl::allow(GROUP, "g", ANONYMOUS, DELETE)],
        delete_group(&mut anon, "g").await,
        GROUP_DENIED,
        0
    );

    // Producers: an idempotent one needs IDEMPOTENT_WRITE on the cluster or WRITE on
    // some topic (KIP-679); a transactional one WRITE on its id.
    let mut fresh = RawClient::connect(anon_addr(&broker)).await;
    assert_eq!(init_idempotent(&mut fresh).await, 0, "WRITE on t-produce");
    refused_until_granted!(
        admin,
        [Acl::allow(TRANSACTIONAL_ID, "tx", ANONYMOUS, WRITE)],
        anon.init_transactional("tx", 10_000).await.0,
        TXN_DENIED,
        0
    );
    assert_eq!(
        find_coordinator(&mut anon, 1, "tx").await,
        0,
        "WRITE implies DESCRIBE"
    );
    assert_eq!(find_coordinator(&mut anon, 1, "ty").await, TXN_DENIED);

    // Admin APIs of the cluster: quotas (DESCRIBE_CONFIGS was granted above),
    // credentials.
    assert_eq!(anon.describe_quotas(&[], false).await.0, 0);
    refused_until_granted!(
        admin,
        [Acl::allow(CLUSTER, "kafka-cluster", ANONYMOUS, 11)],
        anon.alter_quotas(&[("user", Some("x"))], &[("producer_byte_rate", Some(1e6))])
            .await,
        CLUSTER_DENIED,
        0
    );
    refused_until_granted!(
        admin,
        [Acl::allow(CLUSTER, "kafka-cluster", ANONYMOUS, ALTER)],
        describe_users(&mut anon).await,
        CLUSTER_DENIED,
        0
    );
}

fn anon_addr(broker: &TestBroker) -> std::net::SocketAddr {
    broker.listener_addr("PLAINTEXT")
}

#[tokio::test]
async fn deny_beats_allow_and_prefixes_and_wildcards_apply() {
    let (broker, mut admin, mut anon) = secured().await;
    for topic in ["logs.app", "logs.audit", "metrics"] {
        assert_eq!(admin.create_topic(topic, 1).await, 0);
    }
    grant(
        &mut admin,
        &[
            Acl::allow(TOPIC, "logs.", "User:*", READ).prefixed(),
            Acl::allow(TOPIC, "logs.audit", ANONYMOUS, READ).deny(),
            Acl::allow(TOPIC, "*", ANONYMOUS, DESCRIBE),
        ],
    )
    .await;
    assert_eq!(fetch_code(&mut anon, "logs.app").await, 0);
    assert_eq!(fetch_code(&mut anon, "logs.audit").await, TOPIC_DENIED);
    assert_eq!(fetch_code(&mut anon, "metrics").await, TOPIC_DENIED);
    // DESCRIBE through the wildcard: every topic is listed.
    assert_eq!(metadata(&mut anon, None).await.len(), 3);
    // Removing the DENY lets the prefix apply again.
    assert_eq!(admin.delete_acls("logs.audit", false).await, (0, 1));
    assert_eq!(fetch_code(&mut anon, "logs.audit").await, 0);
    // Idempotent producers need WRITE somewhere: there is none.
    let mut fresh = RawClient::connect(anon_addr(&broker)).await;
    assert_eq!(init_idempotent(&mut fresh).await, CLUSTER_DENIED);
    grant(
        &mut admin,
        &[Acl::allow(
            CLUSTER,
            "kafka-cluster",
            ANONYMOUS,
            IDEMPOTENT_WRITE,
        )],
    )
    .await;
    assert_eq!(init_idempotent(&mut fresh).await, 0);
}
