//! `spool quota`: client quotas (KIP-546's Describe/AlterClientQuotas) of users,
//! client ids, or both, named or the default.

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::client::ClientArgs;
use crate::error::CliError;
use crate::kafka_admin::{Connection, connect, error_name};
use crate::output::{self, Format};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum QuotaCommand {
    /// Set quotas: `producer_byte_rate=N`, `consumer_byte_rate=N`,
    /// `request_percentage=N`.
    Set {
        #[command(flatten)]
        entity: EntityArgs,
        #[arg(required = true)]
        values: Vec<String>,
    },
    /// Remove quotas by key.
    Remove {
        #[command(flatten)]
        entity: EntityArgs,
        #[arg(required = true)]
        keys: Vec<String>,
    },
    /// List quotas: all, or those of the entity named.
    List {
        #[command(flatten)]
        entity: EntityArgs,
    },
}

#[derive(Debug, clap::Args)]
pub(crate) struct EntityArgs {
    #[arg(long, conflicts_with = "default_user")]
    user: Option<String>,
    /// The default of users without a quota of their own.
    #[arg(long)]
    default_user: bool,
    #[arg(long, conflicts_with = "default_client_id")]
    client_id: Option<String>,
    /// The default of client ids without a quota of their own.
    #[arg(long)]
    default_client_id: bool,
}

impl EntityArgs {
    /// (entity type, name; `None` for the default) of each part named.
    fn parts(&self) -> Vec<(&'static str, Option<String>)> {
        let mut parts = Vec::new();
        if self.user.is_some() || self.default_user {
            parts.push(("user", self.user.clone()));
        }
        if self.client_id.is_some() || self.default_client_id {
            parts.push(("client-id", self.client_id.clone()));
        }
        parts
    }
}

#[derive(Debug, Serialize)]
struct QuotaView {
    /// `user=alice`, `client-id=<default>`, …
    entity: String,
    key: String,
    value: f64,
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

pub(crate) async fn run(command: QuotaCommand, client: &ClientArgs) -> Result<(), CliError> {
    let (mut connection, _) = connect(client, "manage quotas").await?;
    let (entity, ops) = match command {
        QuotaCommand::List { entity } => {
            return list(&mut connection, &entity, client.format).await;
        }
        QuotaCommand::Set { entity, values } => {
            let ops = values
                .iter()
                .map(|pair| {
                    let (key, value) = pair
                        .split_once('=')
                        .ok_or_else(|| CliError::Usage(format!("{pair:?}: expected KEY=VALUE")))?;
                    let value: f64 = value
                        .parse()
                        .map_err(|_| CliError::Usage(format!("{pair:?}: not a number")))?;
                    Ok(OpData::default().with_key(text(key)).with_value(value))
                })
                .collect::<Result<Vec<_>, CliError>>()?;
            (entity, ops)
        }
        QuotaCommand::Remove { entity, keys } => {
            let ops = keys
                .iter()
                .map(|key| OpData::default().with_key(text(key)).with_remove(true))
                .collect();
            (entity, ops)
        }
    };
    let parts = entity.parts();
    if parts.is_empty() {
        return Err(CliError::Usage(
            "name an entity: --user, --default-user, --client-id or --default-client-id".to_owned(),
        ));
    }
    let entity = parts
        .iter()
        .map(|(kind, name)| {
            EntityData::default()
                .with_entity_type(StrBytes::from_static_str(kind))
                .with_entity_name(name.as_deref().map(text))
        })
        .collect();
    let request = AlterClientQuotasRequest::default()
        .with_entries(vec![EntryData::default().with_entity(entity).with_ops(ops)]);
    let response: AlterClientQuotasResponse = connection.call(request, 1).await?;
    for entry in &response.entries {
        if entry.error_code != 0 {
            let message = entry.error_message.as_ref().map(ToString::to_string);
            return Err(CliError::Failed(format!(
                "refused: {}{}",
                error_name(entry.error_code),
                message.map(|m| format!(": {m}")).unwrap_or_default()
            )));
        }
    }
    println!("done");
    Ok(())
}

async fn list(
    connection: &mut Connection,
    entity: &EntityArgs,
    format: Format,
) -> Result<(), CliError> {
    // Match types: 0 exact, 1 default.
    let components = entity
        .parts()
        .into_iter()
        .map(|(kind, name)| {
            ComponentData::default()
                .with_entity_type(StrBytes::from_static_str(kind))
                .with_match_type(if name.is_some() { 0 } else { 1 })
                .with_match(name.as_deref().map(text))
        })
        .collect();
    let request = DescribeClientQuotasRequest::default().with_components(components);
    let response: DescribeClientQuotasResponse = connection.call(request, 1).await?;
    if response.error_code != 0 {
        return Err(CliError::Failed(format!(
            "cannot list quotas: {}",
            error_name(response.error_code)
        )));
    }
    let mut quotas = Vec::new();
    for entry in response.entries.unwrap_or_default() {
        let entity = entry
            .entity
            .iter()
            .map(|part| {
                let name = part
                    .entity_name
                    .as_ref()
                    .map_or_else(|| "<default>".to_owned(), ToString::to_string);
                format!("{}={name}", part.entity_type.as_str())
            })
            .collect::<Vec<_>>()
            .join(",");
        for value in &entry.values {
            quotas.push(QuotaView {
                entity: entity.clone(),
                key: value.key.to_string(),
                value: value.value,
            });
        }
    }
    quotas.sort_by(|a, b| (&a.entity, &a.key).cmp(&(&b.entity, &b.key)));
    match format {
        Format::Json => output::print_json(&quotas),
        Format::Human => {
            let mut table = output::table(["ENTITY", "KEY", "VALUE"]);
            for quota in &quotas {
                table.add_row([
                    quota.entity.clone(),
                    quota.key.clone(),
                    quota.value.to_string(),
                ]);
            }
            output::print_table(&table, "no quotas");
        }
    }
    Ok(())
}
