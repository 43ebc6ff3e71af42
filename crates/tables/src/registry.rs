//! The `registry` table: a record's partition, offset, timestamp, key and headers
//! in a `kafka` struct, and the value's fields, decoded with the subject's schema,
//! as columns of their own. A newer compatible schema adds its new fields as
//! columns. Records that do not decode go to the dead-letter table, the
//! `key_value` columns and the reason.

use iceberg::spec::{NestedField, NestedFieldRef, PrimitiveType, Schema, StructType, Type};
use iceberg::table::Table;
use iceberg::transaction::{AddColumn, ApplyTransactionAction, Transaction};

use crate::catalog::TableCatalog;
use crate::columns::{Ids, ValueSchema, missing, value_columns};
use crate::error::TableError;
use crate::key_value::record_fields;

/// The column of a `registry` table with the record's partition, offset,
/// timestamp, key and headers.
pub const KAFKA_COLUMN: &str = "kafka";
/// The dead-letter table's column saying why a record is there.
pub const REASON_COLUMN: &str = "reason";

/// The columns of a `registry` table for values of `value`.
pub fn registry_schema(value: ValueSchema<'_>) -> Result<Schema, TableError> {
    let kafka = NestedField::required(
        10,
        KAFKA_COLUMN,
        Type::Struct(StructType::new(record_fields(false))),
    );
    let columns = value_columns(value, &mut Ids(10))?;
    if columns.iter().any(|column| column.name == KAFKA_COLUMN) {
        return Err(TableError::Schema(format!(
            "the value has a field named {KAFKA_COLUMN}, the column of the record's partition, offset and key"
        )));
    }
    let mut fields: Vec<NestedFieldRef> = vec![kafka.into()];
    fields.extend(columns);
    Ok(Schema::builder().with_fields(fields).build()?)
}

/// The dead-letter table's columns: a `key_value` table's and the reason.
pub fn dead_letter_schema() -> Result<Schema, TableError> {
    let mut fields = record_fields(true);
    fields.push(
        NestedField::required(10, REASON_COLUMN, Type::Primitive(PrimitiveType::String)).into(),
    );
    Ok(Schema::builder().with_fields(fields).build()?)
}

impl TableCatalog {
    /// `table` with the columns of `wanted` it lacks added (a compatible change of
    /// the subject's schema); the table as it was when it lacks none. Another
    /// broker adding them at the same moment is no failure: the next look finds
    /// them.
    pub async fn evolve(&self, table: &Table, wanted: &Schema) -> Result<Table, TableError> {
        let lacking = missing(
            table.metadata().current_schema().as_struct(),
            wanted.as_struct(),
            None,
        );
        if lacking.is_empty() {
            return Ok(table.clone());
        }
        let transaction = Transaction::new(table);
        let mut update = transaction.update_schema();
        // (A missing struct comes whole: its own fields are not listed apart.)
        for lack in lacking {
            let field_type = lack.field.field_type.as_ref().clone();
            let column = match lack.parent {
                Some(parent) => AddColumn::builder()
                    .parent(parent)
                    .name(lack.field.name.clone())
                    .field_type(field_type)
                    .build(),
                None => AddColumn::optional(&lack.field.name, field_type),
            };
            update = update.add_column(column);
        }
        let transaction = update.apply(transaction)?;
        match transaction.commit(self.catalog.as_ref()).await {
            Ok(evolved) => Ok(evolved),
            Err(error) => {
                // Another broker's leader of the topic may have added them first
                // (the retried update then finds them there): then nothing lacks.
                let current = self.catalog.load_table(table.identifier()).await?;
                let still = missing(
                    current.metadata().current_schema().as_struct(),
                    wanted.as_struct(),
                    None,
                );
                if still.is_empty() {
                    Ok(current)
                } else {
                    Err(error.into())
                }
            }
        }
    }
}
