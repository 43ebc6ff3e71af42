//! The SQL of [`TxnCheckers`](crate::TxnCheckers), shared by both backends. Headers
//! are stored as HTTP writes them, one `name: value` a line (neither holds a line
//! break, and a name no colon).

pub(crate) const UPSERT: &str = "INSERT INTO txn_checkers \
     (prefix, url, headers, timeout_ms, ca_pem) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (prefix) DO UPDATE SET url = excluded.url, headers = excluded.headers, \
     timeout_ms = excluded.timeout_ms, ca_pem = excluded.ca_pem";
pub(crate) const ALL: &str =
    "SELECT prefix, url, headers, timeout_ms, ca_pem FROM txn_checkers ORDER BY prefix";
pub(crate) const DELETE: &str = "DELETE FROM txn_checkers WHERE prefix = $1";

/// A row of `txn_checkers`.
#[derive(sqlx::FromRow)]
pub(crate) struct Row {
    prefix: String,
    url: String,
    headers: String,
    timeout_ms: i32,
    ca_pem: Option<String>,
}

impl Row {
    pub(crate) fn record(self) -> crate::TxnCheckerRecord {
        let headers = self
            .headers
            .lines()
            .filter_map(|line| line.split_once(": "))
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
        crate::TxnCheckerRecord {
            prefix: self.prefix,
            url: self.url,
            headers,
            timeout_ms: self.timeout_ms,
            ca_pem: self.ca_pem,
        }
    }
}

/// The headers as stored.
pub(crate) fn headers_text(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\n"))
        .collect()
}

/// Implements [`TxnCheckers`](crate::TxnCheckers) for a store with a `pool`.
macro_rules! impl_txn_checkers {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::TxnCheckers for $store {
            async fn put_txn_checker(
                &self,
                record: &$crate::TxnCheckerRecord,
            ) -> $crate::Result<()> {
                use $crate::txn_checkers_sql as sql;
                sqlx::query(sql::UPSERT)
                    .bind(&record.prefix)
                    .bind(&record.url)
                    .bind(sql::headers_text(&record.headers))
                    .bind(record.timeout_ms)
                    .bind(&record.ca_pem)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn txn_checkers(&self) -> $crate::Result<Vec<$crate::TxnCheckerRecord>> {
                use $crate::txn_checkers_sql as sql;
                let rows: Vec<sql::Row> = sqlx::query_as(sql::ALL).fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(sql::Row::record).collect())
            }

            async fn remove_txn_checker(&self, prefix: &str) -> $crate::Result<bool> {
                let deleted = sqlx::query($crate::txn_checkers_sql::DELETE)
                    .bind(prefix)
                    .execute(&self.pool)
                    .await?;
                Ok(deleted.rows_affected() > 0)
            }
        }
    };
}

pub(crate) use impl_txn_checkers;
