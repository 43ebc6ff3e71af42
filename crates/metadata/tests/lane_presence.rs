//! Lane presence on both backends: each broker's row replaced, all listed after a
//! reopen.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

#[tokio::test]
async fn each_brokers_lane_presence_is_replaced_and_listed() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        assert!(store.lane_presences().await.unwrap().is_empty(), "{label}");
        store.put_lane_presence(2, "{\"a\":1}").await.unwrap();
        store.put_lane_presence(1, "{}").await.unwrap();
        store.put_lane_presence(2, "{\"a\":2}").await.unwrap();
        drop(store);
        let store = backend.open().await;
        assert_eq!(
            store.lane_presences().await.unwrap(),
            vec![(1, "{}".to_owned()), (2, "{\"a\":2}".to_owned())],
            "{label}"
        );
    }
}
