//! Client quota requests for the raw client.

#![allow(clippy::panic)]

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, DescribeClientQuotasRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use crate::RawClient;

/// An entity part for the raw client: (`user` or `client-id`, name; `None` for the
/// default).
pub type QuotaPart<'a> = (&'a str, Option<&'a str>);

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

impl RawClient {
    /// AlterClientQuotas v1 of one entity: sets (`Some`) or removes (`None`) each
    /// key; the entry's error code.
    pub async fn alter_quotas(
        &mut self,
        entity: &[QuotaPart<'_>],
        ops: &[(&str, Option<f64>)],
    ) -> i16 {
        let entity = entity
            .iter()
            .map(|(kind, name)| {
                EntityData::default()
                    .with_entity_type(text(kind))
                    .with_entity_name(name.map(text))
            })
            .collect();
        let ops = ops
            .iter()
            .map(|(key, value)| {
                OpData::default()
                    .with_key(text(key))
                    .with_value(value.unwrap_or(0.0))
                    .with_remove(value.is_none())
            })
            .collect();
        let request = AlterClientQuotasRequest::default()
            .with_entries(vec![EntryData::default().with_entity(entity).with_ops(ops)]);
        let ResponseKind::AlterClientQuotas(response) =
            self.call(RequestKind::AlterClientQuotas(request), 1).await
        else {
            panic!("not an AlterClientQuotas response")
        };
        response.entries[0].error_code
    }

    /// DescribeClientQuotas v1 with components (type, match type, match): the error
    /// code and each entry as its parts and its (key, value)s, sorted.
    #[allow(clippy::type_complexity)]
    pub async fn describe_quotas(
        &mut self,
        components: &[(&str, i8, Option<&str>)],
        strict: bool,
    ) -> (
        i16,
        Vec<(Vec<(String, Option<String>)>, Vec<(String, f64)>)>,
    ) {
        let components = components
            .iter()
            .map(|(kind, match_type, name)| {
                ComponentData::default()
                    .with_entity_type(text(kind))
                    .with_match_type(*match_type)
                    .with_match(name.map(text))
            })
            .collect();
        let request = DescribeClientQuotasRequest::default()
            .with_components(components)
            .with_strict(strict);
        let ResponseKind::DescribeClientQuotas(response) = self
            .call(RequestKind::DescribeClientQuotas(request), 1)
            .await
        else {
            panic!("not a DescribeClientQuotas response")
        };
        let mut entries: Vec<_> = response
            .entries
            .unwrap_or_default()
            .into_iter()
            .map(|entry| {
                let parts: Vec<(String, Option<String>)> = entry
                    .entity
                    .iter()
                    .map(|e| {
                        (
                            e.entity_type.to_string(),
                            e.entity_name.as_ref().map(ToString::to_string),
                        )
                    })
                    .collect();
                let mut values: Vec<(String, f64)> = entry
                    .values
                    .iter()
                    .map(|v| (v.key.to_string(), v.value))
                    .collect();
                values.sort_by(|a, b| a.0.cmp(&b.0));
                (parts, values)
            })
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        (response.error_code, entries)
    }
}
