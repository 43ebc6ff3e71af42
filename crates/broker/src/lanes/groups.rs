//! A lane client's group requests go to its group's part in its lane: every group id
//! a request names becomes `G;lane=X` on the way in, and back to `G` in the answer,
//! so that the client sees its own group while its members, committed offsets and
//! coordinator stay apart from the base members' (a tester's consumer never moves
//! production's offsets). Share groups are not split (`docs/lanes.md`).

use kafka_protocol::messages::{GroupId, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use spool_views::lanes::{lane_group, split_group};

/// FindCoordinator's `key_type` of a consumer group.
const GROUP_KEY: i8 = 0;

/// Names the lane's part of every group `body` names.
pub(crate) fn enter(body: &mut RequestKind, lane: &str) {
    let into = |id: &mut GroupId| into_lane(&mut id.0, lane);
    match body {
        RequestKind::FindCoordinator(request) if request.key_type == GROUP_KEY => {
            into_lane(&mut request.key, lane);
            for key in &mut request.coordinator_keys {
                into_lane(key, lane);
            }
        }
        RequestKind::JoinGroup(request) => into(&mut request.group_id),
        RequestKind::SyncGroup(request) => into(&mut request.group_id),
        RequestKind::Heartbeat(request) => into(&mut request.group_id),
        RequestKind::LeaveGroup(request) => into(&mut request.group_id),
        RequestKind::OffsetCommit(request) => into(&mut request.group_id),
        RequestKind::OffsetFetch(request) => {
            into(&mut request.group_id);
            for group in &mut request.groups {
                into(&mut group.group_id);
            }
        }
        RequestKind::OffsetDelete(request) => into(&mut request.group_id),
        RequestKind::TxnOffsetCommit(request) => into(&mut request.group_id),
        RequestKind::AddOffsetsToTxn(request) => into(&mut request.group_id),
        RequestKind::DescribeGroups(request) => request.groups.iter_mut().for_each(into),
        RequestKind::DeleteGroups(request) => request.groups_names.iter_mut().for_each(into),
        RequestKind::ConsumerGroupHeartbeat(request) => into(&mut request.group_id),
        RequestKind::ConsumerGroupDescribe(request) => {
            request.group_ids.iter_mut().for_each(into);
        }
        _ => {}
    }
}

/// Names the group again, not its lane's part, wherever `response` echoes an id.
pub(crate) fn leave(response: &mut ResponseKind, lane: &str) {
    let back = |id: &mut GroupId| out_of_lane(&mut id.0, lane);
    match response {
        ResponseKind::FindCoordinator(response) => {
            for coordinator in &mut response.coordinators {
                out_of_lane(&mut coordinator.key, lane);
            }
        }
        ResponseKind::OffsetFetch(response) => {
            for group in &mut response.groups {
                back(&mut group.group_id);
            }
        }
        ResponseKind::DescribeGroups(response) => {
            for group in &mut response.groups {
                back(&mut group.group_id);
            }
        }
        ResponseKind::DeleteGroups(response) => {
            for result in &mut response.results {
                back(&mut result.group_id);
            }
        }
        ResponseKind::ConsumerGroupDescribe(response) => {
            for group in &mut response.groups {
                back(&mut group.group_id);
            }
        }
        _ => {}
    }
}

/// `G` → `G;lane=X` (an empty id, a field of another version, stays empty).
fn into_lane(id: &mut StrBytes, lane: &str) {
    if !id.is_empty() {
        *id = StrBytes::from_string(lane_group(id.as_str(), lane));
    }
}

/// `G;lane=X` → `G`, for this lane only.
fn out_of_lane(id: &mut StrBytes, lane: &str) {
    if let (group, Some(of)) = split_group(id.as_str())
        && of == lane
    {
        *id = StrBytes::from_string(group.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::describe_groups_response::DescribedGroup;
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
    use kafka_protocol::messages::{
        DescribeGroupsResponse, FindCoordinatorRequest, JoinGroupRequest, OffsetFetchRequest,
    };

    use super::*;

    fn group(id: &str) -> GroupId {
        GroupId(StrBytes::from_string(id.to_owned()))
    }

    #[test]
    fn a_lane_clients_groups_are_its_lanes_part_both_ways() {
        let mut join =
            RequestKind::JoinGroup(JoinGroupRequest::default().with_group_id(group("g")));
        enter(&mut join, "ppe");
        let RequestKind::JoinGroup(join) = join else {
            unreachable!()
        };
        assert_eq!(join.group_id.0.as_str(), "g;lane=ppe");

        let mut fetch = RequestKind::OffsetFetch(OffsetFetchRequest::default().with_groups(vec![
            OffsetFetchRequestGroup::default().with_group_id(group("g")),
        ]));
        enter(&mut fetch, "ppe");
        let RequestKind::OffsetFetch(fetch) = fetch else {
            unreachable!()
        };
        assert_eq!(fetch.group_id.0.as_str(), "", "the other version's field");
        assert_eq!(fetch.groups[0].group_id.0.as_str(), "g;lane=ppe");

        let mut transactional = RequestKind::FindCoordinator(
            FindCoordinatorRequest::default()
                .with_key_type(1)
                .with_key(StrBytes::from_static_str("txn")),
        );
        enter(&mut transactional, "ppe");
        let RequestKind::FindCoordinator(transactional) = transactional else {
            unreachable!()
        };
        assert_eq!(transactional.key.as_str(), "txn", "only groups are split");

        let mut described =
            ResponseKind::DescribeGroups(DescribeGroupsResponse::default().with_groups(vec![
                DescribedGroup::default().with_group_id(group("g;lane=ppe")),
                DescribedGroup::default().with_group_id(group("g;lane=boe")),
            ]));
        leave(&mut described, "ppe");
        let ResponseKind::DescribeGroups(described) = described else {
            unreachable!()
        };
        assert_eq!(described.groups[0].group_id.0.as_str(), "g");
        assert_eq!(described.groups[1].group_id.0.as_str(), "g;lane=boe");
    }
}
