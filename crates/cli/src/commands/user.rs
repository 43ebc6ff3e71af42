//! `spool user`: SCRAM credentials (KIP-554's Describe/AlterUserScramCredentials). The
//! password is salted here, as KIP-554 has it: the broker never sees it.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::client::ClientArgs;
use crate::error::CliError;
use crate::kafka_admin::{Connection, connect, error_name};
use crate::output::{self, Format};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum UserCommand {
    /// Give a user SCRAM credentials (or new ones).
    Create {
        name: String,
        /// The password (also `SPOOL_USER_PASSWORD`).
        #[arg(long, env = "SPOOL_USER_PASSWORD", hide_env_values = true)]
        password: String,
        /// SCRAM-SHA-256, SCRAM-SHA-512, or both.
        #[arg(long, default_value = "both")]
        mechanism: String,
        /// PBKDF2 iterations, 4096 to 16384.
        #[arg(long, default_value_t = 8192)]
        iterations: i32,
    },
    /// Remove a user's credentials.
    Delete {
        name: String,
        /// SCRAM-SHA-256, SCRAM-SHA-512, or both.
        #[arg(long, default_value = "both")]
        mechanism: String,
    },
    /// List users with their mechanisms and iterations.
    List,
}

/// The mechanisms named: (code, name).
fn mechanisms(name: &str) -> Result<Vec<(i8, &'static str)>, CliError> {
    match name.to_ascii_uppercase().as_str() {
        "BOTH" => Ok(vec![(1, "SCRAM-SHA-256"), (2, "SCRAM-SHA-512")]),
        "SCRAM-SHA-256" => Ok(vec![(1, "SCRAM-SHA-256")]),
        "SCRAM-SHA-512" => Ok(vec![(2, "SCRAM-SHA-512")]),
        _ => Err(CliError::Usage(format!(
            "--mechanism {name}: SCRAM-SHA-256, SCRAM-SHA-512 or both"
        ))),
    }
}

fn mechanism_name(code: i8) -> String {
    match code {
        1 => "SCRAM-SHA-256".to_owned(),
        2 => "SCRAM-SHA-512".to_owned(),
        other => other.to_string(),
    }
}

#[derive(Debug, Serialize)]
struct UserView {
    user: String,
    /// Mechanism to iterations.
    mechanisms: BTreeMap<String, i32>,
}

pub(crate) async fn run(command: UserCommand, client: &ClientArgs) -> Result<(), CliError> {
    let (mut connection, _) = connect(client, "manage users").await?;
    let name_of = |name: &str| StrBytes::from_string(name.to_owned());
    let request = match command {
        UserCommand::List => return list(&mut connection, client.format).await,
        UserCommand::Create {
            name,
            password,
            mechanism,
            iterations,
        } => {
            let rounds = u32::try_from(iterations)
                .map_err(|_| CliError::Usage("--iterations must be positive".to_owned()))?;
            let mut upsertions = Vec::new();
            for (code, _) in mechanisms(&mechanism)? {
                let (salt, salted) = spool_broker::salt_password(code, password.as_bytes(), rounds)
                    .ok_or_else(|| CliError::Usage("unknown mechanism".to_owned()))?;
                upsertions.push(
                    ScramCredentialUpsertion::default()
                        .with_name(name_of(&name))
                        .with_mechanism(code)
                        .with_iterations(iterations)
                        .with_salt(Bytes::from(salt))
                        .with_salted_password(Bytes::from(salted)),
                );
            }
            AlterUserScramCredentialsRequest::default().with_upsertions(upsertions)
        }
        UserCommand::Delete { name, mechanism } => {
            let deletions = mechanisms(&mechanism)?
                .into_iter()
                .map(|(code, _)| {
                    ScramCredentialDeletion::default()
                        .with_name(name_of(&name))
                        .with_mechanism(code)
                })
                .collect();
            AlterUserScramCredentialsRequest::default().with_deletions(deletions)
        }
    };
    let response: AlterUserScramCredentialsResponse = connection.call(request, 0).await?;
    for result in &response.results {
        if result.error_code == ResponseError::ResourceNotFound.code() {
            return Err(CliError::NotFound(format!(
                "user {} has no such credential",
                result.user.as_str()
            )));
        }
        if result.error_code != 0 {
            let message = result.error_message.as_ref().map(ToString::to_string);
            return Err(CliError::Failed(format!(
                "{}: {}{}",
                result.user.as_str(),
                error_name(result.error_code),
                message.map(|m| format!(": {m}")).unwrap_or_default()
            )));
        }
    }
    println!("done");
    Ok(())
}

async fn list(connection: &mut Connection, format: Format) -> Result<(), CliError> {
    let request = DescribeUserScramCredentialsRequest::default().with_users(None);
    let response: DescribeUserScramCredentialsResponse = connection.call(request, 0).await?;
    if response.error_code != 0 {
        return Err(CliError::Failed(format!(
            "cannot list users: {}",
            error_name(response.error_code)
        )));
    }
    let users: Vec<UserView> = response
        .results
        .iter()
        .map(|result| UserView {
            user: result.user.to_string(),
            mechanisms: result
                .credential_infos
                .iter()
                .map(|info| (mechanism_name(info.mechanism), info.iterations))
                .collect(),
        })
        .collect();
    match format {
        Format::Json => output::print_json(&users),
        Format::Human => {
            let mut table = output::table(["USER", "MECHANISM", "ITERATIONS"]);
            for user in &users {
                for (mechanism, iterations) in &user.mechanisms {
                    table.add_row([user.user.clone(), mechanism.clone(), iterations.to_string()]);
                }
            }
            output::print_table(&table, "no users");
        }
    }
    Ok(())
}
