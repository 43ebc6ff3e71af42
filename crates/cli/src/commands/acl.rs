//! `spool acl`: create, list and delete ACL bindings (CreateAcls, DescribeAcls,
//! DeleteAcls), Kafka's model (`docs/security.md`).

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::client::ClientArgs;
use crate::error::CliError;
use crate::kafka_admin::{Connection, connect, error_name};
use crate::output::{self, Format};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum AclCommand {
    /// Add a binding: who may (or may not, with --deny) do what to which resource.
    Create {
        #[command(flatten)]
        resource: ResourceArgs,
        /// The name is a prefix: every resource whose name starts with it (PREFIXED).
        #[arg(long)]
        prefixed: bool,
        /// `User:name`, or `User:*` for everyone.
        #[arg(long)]
        principal: String,
        /// read, write, create, delete, alter, describe, cluster-action,
        /// describe-configs, alter-configs, idempotent-write or all.
        #[arg(long)]
        operation: String,
        /// A DENY binding (the default is ALLOW).
        #[arg(long)]
        deny: bool,
        /// The client IP address it applies to.
        #[arg(long, default_value = "*")]
        host: String,
    },
    /// List bindings: all, or those matching the options given.
    List {
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Delete the bindings matching the options given.
    Delete {
        #[command(flatten)]
        filter: FilterArgs,
    },
}

#[derive(Debug, clap::Args)]
#[group(multiple = false)]
pub(crate) struct ResourceArgs {
    #[arg(long)]
    topic: Option<String>,
    #[arg(long)]
    group: Option<String>,
    /// The cluster (`kafka-cluster`).
    #[arg(long)]
    cluster: bool,
    #[arg(long)]
    transactional_id: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct FilterArgs {
    #[command(flatten)]
    resource: ResourceArgs,
    /// The resource named is a PREFIXED pattern (else LITERAL).
    #[arg(long)]
    prefixed: bool,
    #[arg(long)]
    principal: Option<String>,
    #[arg(long)]
    operation: Option<String>,
    #[arg(long)]
    host: Option<String>,
    /// With `delete` and nothing else named: every binding.
    #[arg(long)]
    all: bool,
}

// Wire codes (docs/security.md).
const ANY: i8 = 1;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const DENY: i8 = 2;
const ALLOW: i8 = 3;
const OPERATIONS: [(&str, i8); 11] = [
    ("all", 2),
    ("read", 3),
    ("write", 4),
    ("create", 5),
    ("delete", 6),
    ("alter", 7),
    ("describe", 8),
    ("cluster-action", 9),
    ("describe-configs", 10),
    ("alter-configs", 11),
    ("idempotent-write", 12),
];
const RESOURCE_TYPES: [(&str, i8); 4] = [
    ("topic", 2),
    ("group", 3),
    ("cluster", 4),
    ("transactional-id", 5),
];

fn operation_code(name: &str) -> Result<i8, CliError> {
    let wanted = name.to_ascii_lowercase().replace('_', "-");
    OPERATIONS
        .iter()
        .find(|(n, _)| *n == wanted)
        .map(|(_, code)| *code)
        .ok_or_else(|| CliError::Usage(format!("unknown operation {name:?}")))
}

fn name_of(table: &[(&'static str, i8)], code: i8) -> String {
    table
        .iter()
        .find(|(_, c)| *c == code)
        .map_or_else(|| code.to_string(), |(name, _)| (*name).to_owned())
}

impl ResourceArgs {
    /// (resource type, name, pattern type), `None` when no resource is named.
    fn pattern(&self, prefixed: bool) -> Option<(i8, String, i8)> {
        let pattern = if prefixed { PREFIXED } else { LITERAL };
        let (kind, name) = if let Some(topic) = &self.topic {
            (2, topic.clone())
        } else if let Some(group) = &self.group {
            (3, group.clone())
        } else if self.cluster {
            (4, "kafka-cluster".to_owned())
        } else {
            (5, self.transactional_id.clone()?)
        };
        Some((kind, name, pattern))
    }
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

#[derive(Debug, Serialize)]
struct Binding {
    resource_type: String,
    name: String,
    pattern: String,
    principal: String,
    host: String,
    operation: String,
    permission: String,
}

impl Binding {
    /// A binding as printed, from its resource pattern (type, name, pattern type) and
    /// its entry (principal, host, operation, permission), as the wire has them.
    fn of(resource: (i8, &StrBytes, i8), entry: (&StrBytes, &StrBytes, i8, i8)) -> Binding {
        let (resource_type, name, pattern) = resource;
        let (principal, host, operation, permission) = entry;
        Binding {
            resource_type: name_of(&RESOURCE_TYPES, resource_type),
            name: name.to_string(),
            pattern: pattern_name(pattern),
            principal: principal.to_string(),
            host: host.to_string(),
            operation: name_of(&OPERATIONS, operation),
            permission: permission_name(permission),
        }
    }
}

pub(crate) async fn run(command: AclCommand, client: &ClientArgs) -> Result<(), CliError> {
    let (mut connection, _) = connect(client, "manage ACLs").await?;
    match command {
        AclCommand::Create {
            resource,
            prefixed,
            principal,
            operation,
            deny,
            host,
        } => {
            let (resource_type, name, pattern) = resource.pattern(prefixed).ok_or_else(|| {
                CliError::Usage(
                    "name a resource: --topic, --group, --cluster or --transactional-id".to_owned(),
                )
            })?;
            let creation = AclCreation::default()
                .with_resource_type(resource_type)
                .with_resource_name(text(&name))
                .with_resource_pattern_type(pattern)
                .with_principal(text(&principal))
                .with_host(text(&host))
                .with_operation(operation_code(&operation)?)
                .with_permission_type(if deny { DENY } else { ALLOW });
            let request = CreateAclsRequest::default().with_creations(vec![creation]);
            let response: CreateAclsResponse = connection.call(request, 3).await?;
            for result in &response.results {
                if result.error_code != 0 {
                    let message = result.error_message.as_ref().map(ToString::to_string);
                    return Err(CliError::Failed(format!(
                        "the binding was refused: {}{}",
                        error_name(result.error_code),
                        message.map(|m| format!(": {m}")).unwrap_or_default()
                    )));
                }
            }
            println!("created");
            Ok(())
        }
        AclCommand::List { filter } => {
            let bindings = list(&mut connection, &filter).await?;
            print(client.format, &bindings);
            Ok(())
        }
        AclCommand::Delete { filter } => {
            if filter.resource.pattern(false).is_none()
                && filter.principal.is_none()
                && filter.operation.is_none()
                && filter.host.is_none()
                && !filter.all
            {
                // Every binding, the super users' grants included: say so.
                return Err(CliError::Usage(
                    "name what to delete (a resource, --principal, --operation or --host), or --all"
                        .to_owned(),
                ));
            }
            let deleted = delete(&mut connection, &filter).await?;
            match client.format {
                Format::Json => output::print_json(&deleted),
                Format::Human => println!("deleted {} binding(s)", deleted.len()),
            }
            Ok(())
        }
    }
}

/// The filter's fields: (resource type, name, pattern type, principal, host,
/// operation, permission).
type Filter = (
    i8,
    Option<StrBytes>,
    i8,
    Option<StrBytes>,
    Option<StrBytes>,
    i8,
    i8,
);

fn filter_of(filter: &FilterArgs) -> Result<Filter, CliError> {
    let (resource_type, name, pattern) = match filter.resource.pattern(filter.prefixed) {
        Some((kind, name, pattern)) => (kind, Some(text(&name)), pattern),
        None => (ANY, None, ANY),
    };
    let operation = filter
        .operation
        .as_deref()
        .map(operation_code)
        .transpose()?;
    Ok((
        resource_type,
        name,
        pattern,
        filter.principal.as_deref().map(text),
        filter.host.as_deref().map(text),
        operation.unwrap_or(ANY),
        ANY,
    ))
}

async fn list(connection: &mut Connection, filter: &FilterArgs) -> Result<Vec<Binding>, CliError> {
    let (resource_type, name, pattern, principal, host, operation, permission) = filter_of(filter)?;
    let request = DescribeAclsRequest::default()
        .with_resource_type_filter(resource_type)
        .with_resource_name_filter(name)
        .with_pattern_type_filter(pattern)
        .with_principal_filter(principal)
        .with_host_filter(host)
        .with_operation(operation)
        .with_permission_type(permission);
    let response: DescribeAclsResponse = connection.call(request, 3).await?;
    if response.error_code != 0 {
        return Err(CliError::Failed(format!(
            "cannot list ACLs: {}",
            error_name(response.error_code)
        )));
    }
    Ok(response
        .resources
        .iter()
        .flat_map(|resource| {
            resource.acls.iter().map(|acl| {
                Binding::of(
                    (
                        resource.resource_type,
                        &resource.resource_name,
                        resource.pattern_type,
                    ),
                    (
                        &acl.principal,
                        &acl.host,
                        acl.operation,
                        acl.permission_type,
                    ),
                )
            })
        })
        .collect())
}

async fn delete(
    connection: &mut Connection,
    filter: &FilterArgs,
) -> Result<Vec<Binding>, CliError> {
    let (resource_type, name, pattern, principal, host, operation, permission) = filter_of(filter)?;
    let request = DeleteAclsRequest::default().with_filters(vec![
        DeleteAclsFilter::default()
            .with_resource_type_filter(resource_type)
            .with_resource_name_filter(name)
            .with_pattern_type_filter(pattern)
            .with_principal_filter(principal)
            .with_host_filter(host)
            .with_operation(operation)
            .with_permission_type(permission),
    ]);
    let response: DeleteAclsResponse = connection.call(request, 3).await?;
    let mut deleted = Vec::new();
    for result in &response.filter_results {
        if result.error_code != 0 {
            return Err(CliError::Failed(format!(
                "cannot delete ACLs: {}",
                error_name(result.error_code)
            )));
        }
        deleted.extend(result.matching_acls.iter().map(|acl| {
            Binding::of(
                (acl.resource_type, &acl.resource_name, acl.pattern_type),
                (
                    &acl.principal,
                    &acl.host,
                    acl.operation,
                    acl.permission_type,
                ),
            )
        }));
    }
    Ok(deleted)
}

fn pattern_name(code: i8) -> String {
    match code {
        LITERAL => "literal".to_owned(),
        PREFIXED => "prefixed".to_owned(),
        other => other.to_string(),
    }
}

fn permission_name(code: i8) -> String {
    match code {
        ALLOW => "allow".to_owned(),
        DENY => "deny".to_owned(),
        other => other.to_string(),
    }
}

fn print(format: Format, bindings: &[Binding]) {
    match format {
        Format::Json => output::print_json(&bindings),
        Format::Human => {
            let mut table = output::table([
                "RESOURCE",
                "NAME",
                "PATTERN",
                "PRINCIPAL",
                "HOST",
                "OPERATION",
                "PERMISSION",
            ]);
            for b in bindings {
                table.add_row([
                    b.resource_type.clone(),
                    b.name.clone(),
                    b.pattern.clone(),
                    b.principal.clone(),
                    b.host.clone(),
                    b.operation.clone(),
                    b.permission.clone(),
                ]);
            }
            output::print_table(&table, "no ACL bindings");
        }
    }
}
