//! Broker configs over raw requests, for what no client library can send: the
//! cluster-wide default resource (name `""`) described and altered, validate-only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource as IncrementalResource, AlterableConfig as IncrementalConfig,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest, MetadataRequest,
    RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_testkit::{RawClient, TestBroker};

const BROKER: i8 = 4;

async fn alter(
    client: &mut RawClient,
    name: &str,
    configs: &[(&str, &str)],
    validate_only: bool,
) -> i16 {
    let resource = AlterConfigsResource::default()
        .with_resource_type(BROKER)
        .with_resource_name(StrBytes::from_string(name.to_owned()))
        .with_configs(
            configs
                .iter()
                .map(|(key, value)| {
                    AlterableConfig::default()
                        .with_name(StrBytes::from_string((*key).to_owned()))
                        .with_value(Some(StrBytes::from_string((*value).to_owned())))
                })
                .collect(),
        );
    let request = AlterConfigsRequest::default()
        .with_resources(vec![resource])
        .with_validate_only(validate_only);
    let ResponseKind::AlterConfigs(response) =
        client.call(RequestKind::AlterConfigs(request), 2).await
    else {
        panic!("not an AlterConfigs response")
    };
    response.responses[0].error_code
}

/// IncrementalAlterConfigs of one BROKER resource: SET (a value) or DELETE (None).
async fn incremental(client: &mut RawClient, name: &str, changes: &[(&str, Option<&str>)]) -> i16 {
    let configs = changes
        .iter()
        .map(|(key, value)| {
            IncrementalConfig::default()
                .with_name(StrBytes::from_string((*key).to_owned()))
                .with_config_operation(if value.is_some() { 0 } else { 1 })
                .with_value(value.map(|v| StrBytes::from_string(v.to_owned())))
        })
        .collect();
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        IncrementalResource::default()
            .with_resource_type(BROKER)
            .with_resource_name(StrBytes::from_string(name.to_owned()))
            .with_configs(configs),
    ]);
    let ResponseKind::IncrementalAlterConfigs(response) = client
        .call(RequestKind::IncrementalAlterConfigs(request), 1)
        .await
    else {
        panic!("not an IncrementalAlterConfigs response")
    };
    response.responses[0].error_code
}

/// (name, value, source) of a BROKER resource's configs.
async fn describe(client: &mut RawClient, name: &str) -> Vec<(String, String, i8)> {
    let request = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(BROKER)
            .with_resource_name(StrBytes::from_string(name.to_owned())),
    ]);
    let ResponseKind::DescribeConfigs(response) =
        client.call(RequestKind::DescribeConfigs(request), 4).await
    else {
        panic!("not a DescribeConfigs response")
    };
    let result = &response.results[0];
    assert_eq!(result.error_code, 0, "{:?}", result.error_message);
    result
        .configs
        .iter()
        .map(|c| {
            let value = c
                .value
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            (c.name.to_string(), value, c.config_source)
        })
        .collect()
}

#[tokio::test]
async fn the_cluster_default_resource_lists_only_its_overrides() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert!(describe(&mut client, "").await.is_empty());

    assert_eq!(
        alter(&mut client, "", &[("log.segment.bytes", "1048576")], true).await,
        0
    );
    assert!(
        describe(&mut client, "").await.is_empty(),
        "validate-only changes nothing"
    );

    assert_eq!(
        alter(&mut client, "", &[("log.segment.bytes", "1048576")], false).await,
        0
    );
    assert_eq!(
        describe(&mut client, "").await,
        vec![("log.segment.bytes".to_owned(), "1048576".to_owned(), 3)]
    );
    let node = describe(&mut client, "1").await;
    let segment = node
        .iter()
        .find(|(name, ..)| name == "log.segment.bytes")
        .unwrap();
    assert_eq!((segment.1.as_str(), segment.2), ("1048576", 3));
    let partitions = node
        .iter()
        .find(|(name, ..)| name == "num.partitions")
        .unwrap();
    assert_eq!(partitions.2, 5, "DEFAULT_CONFIG");

    assert_eq!(
        alter(&mut client, "", &[("log.segment.bytes", "-1")], false).await,
        40,
        "INVALID_CONFIG"
    );
    assert_eq!(
        alter(&mut client, "2", &[("num.partitions", "2")], false).await,
        42,
        "INVALID_REQUEST"
    );
    assert_eq!(
        describe(&mut client, "").await.len(),
        1,
        "unchanged by refused requests"
    );
}

#[tokio::test]
async fn incremental_changes_set_and_delete_single_overrides() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    let changes = [
        ("num.partitions", Some("4")),
        ("log.roll.ms", Some("60000")),
    ];
    assert_eq!(incremental(&mut client, "", &changes).await, 0);
    assert_eq!(
        incremental(&mut client, "", &[("num.partitions", None)]).await,
        0
    );
    assert_eq!(
        describe(&mut client, "").await,
        vec![("log.roll.ms".to_owned(), "60000".to_owned(), 3)]
    );
    assert_eq!(
        incremental(&mut client, "1", &[("num.partitions", Some("2"))]).await,
        0
    );
    assert_eq!(client.create_topic("inherits", -1).await, 0);
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(spool_testkit::topic_name("inherits"))),
    ]));
    let ResponseKind::Metadata(metadata) = client.call(RequestKind::Metadata(request), 12).await
    else {
        panic!("not a Metadata response")
    };
    assert_eq!(
        metadata.topics[0].partitions.len(),
        2,
        "num.partitions applied"
    );
    let node = describe(&mut client, "1").await;
    let partitions = node
        .iter()
        .find(|(name, ..)| name == "num.partitions")
        .unwrap();
    assert_eq!(
        (partitions.1.as_str(), partitions.2),
        ("2", 2),
        "DYNAMIC_BROKER_CONFIG"
    );
    assert_eq!(
        incremental(&mut client, "1", &[("max.connections", Some("3"))]).await,
        42,
        "INVALID_REQUEST: needs a restart"
    );
}

#[tokio::test]
async fn topic_configs_come_with_types_documentation_and_synonyms_when_asked() {
    let broker = TestBroker::start_with(&[("log.retention.hours", "3")]).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("documented", 1).await, 0);
    let ask = |version_has_docs: bool| {
        DescribeConfigsRequest::default()
            .with_include_synonyms(true)
            .with_include_documentation(version_has_docs)
            .with_resources(vec![
                DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str("documented"))
                    .with_configuration_keys(Some(vec![
                        StrBytes::from_static_str("retention.ms"),
                        StrBytes::from_static_str("min.insync.replicas"),
                        StrBytes::from_static_str("cleanup.policy"),
                    ])),
            ])
    };
    let ResponseKind::DescribeConfigs(response) = client
        .call(RequestKind::DescribeConfigs(ask(true)), 4)
        .await
    else {
        panic!("not a DescribeConfigs response")
    };
    let configs = &response.results[0].configs;
    assert_eq!(configs.len(), 3);
    let by_name = |name: &str| configs.iter().find(|c| c.name.as_str() == name).unwrap();
    let retention = by_name("retention.ms");
    assert_eq!(retention.value.as_deref(), Some("10800000"));
    assert_eq!(retention.config_type, 5, "LONG");
    assert_eq!(retention.config_source, 4, "STATIC_BROKER_CONFIG");
    let synonyms: Vec<(&str, &str, i8)> = retention
        .synonyms
        .iter()
        .map(|s| (s.name.as_str(), s.value.as_deref().unwrap(), s.source))
        .collect();
    assert_eq!(
        synonyms,
        vec![
            ("log.retention.hours", "3", 4),
            ("log.retention.ms", "604800000", 5)
        ]
    );
    assert_eq!(by_name("cleanup.policy").config_type, 7, "LIST");
    let no_op = by_name("min.insync.replicas");
    assert_eq!(no_op.config_type, 3, "INT");
    let documentation = no_op.documentation.as_deref().unwrap();
    assert!(documentation.contains("no effect"), "{documentation}");

    // Broker scope: APPEND to the list-valued log.cleanup.policy, SUBTRACT it again.
    let change = |operation: i8, value: &str| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            IncrementalResource::default()
                .with_resource_type(BROKER)
                .with_resource_name(StrBytes::from_static_str("1"))
                .with_configs(vec![
                    IncrementalConfig::default()
                        .with_name(StrBytes::from_static_str("log.cleanup.policy"))
                        .with_config_operation(operation)
                        .with_value(Some(StrBytes::from_string(value.to_owned()))),
                ]),
        ])
    };
    for (operation, value, expected) in [(2, "delete", "delete"), (3, "delete", "")] {
        let ResponseKind::IncrementalAlterConfigs(response) = client
            .call(
                RequestKind::IncrementalAlterConfigs(change(operation, value)),
                1,
            )
            .await
        else {
            panic!("not an IncrementalAlterConfigs response")
        };
        let code = response.responses[0].error_code;
        if expected.is_empty() {
            assert_eq!(
                code, 40,
                "an empty cleanup.policy is refused: INVALID_CONFIG"
            );
        } else {
            assert_eq!(code, 0);
            let described = describe(&mut client, "1").await;
            assert!(described.contains(&("log.cleanup.policy".to_owned(), expected.to_owned(), 2)));
        }
    }
}
