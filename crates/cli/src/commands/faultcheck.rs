//! `spool faultcheck`: kill the broker over and over under load and check that nothing
//! it acknowledged was lost, duplicated or reordered (`crates/faultcheck`). See
//! docs/reliability.md.

use spool_faultcheck::{CheckError, FaultCheck};

use crate::error::CliError;
use crate::output::{self, Format};

/// Runs the check; violations exit 1 after the report is printed.
pub(crate) fn run(check: &FaultCheck, format: Format) -> Result<(), CliError> {
    let report = spool_faultcheck::run(check).map_err(|error| match error {
        CheckError::Invalid(message) => CliError::Usage(message),
        other => CliError::Failed(format!("the fault check could not run: {other}")),
    })?;
    match format {
        Format::Json => output::print_json(&serde_json::json!(report)),
        Format::Human => print!("{}", report.to_text()),
    }
    if report.is_clean() {
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} kinds of violation found (seed {})",
            report.findings.violations.len(),
            report.seed
        )))
    }
}
