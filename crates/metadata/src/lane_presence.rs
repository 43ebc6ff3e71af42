//! Lane presence: what each broker of a cluster knows of the groups it coordinates
//! that lanes need (which groups have live members in which lanes, and which clients
//! are the base members of those groups), so that every broker can tell which lanes a
//! base consumer stands in for. One row per broker, replaced when it changes; the
//! rows of brokers that are not live are the reader's to ignore.

use crate::Result;

#[async_trait::async_trait]
pub trait LanePresences {
    /// Replaces broker `broker_id`'s presence (an opaque text the broker writes).
    async fn put_lane_presence(&self, broker_id: i32, presence: &str) -> Result<()>;
    /// Every broker's presence, by broker id.
    async fn lane_presences(&self) -> Result<Vec<(i32, String)>>;
}
