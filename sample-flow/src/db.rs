//! The flow's database node: one row per message in a PostgreSQL table, created if missing.

use super::nodes::Enriched;
use anyhow::{Context, bail};
use std::time::Duration;
use tokio_postgres::{Client, NoTls, Statement};

/// How long connecting to the database may take before it counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A table name the flow accepts: a plain SQL identifier, so it can go into the statements
/// as it is (PostgreSQL cannot take a table name as a bind parameter).
pub fn check_table(name: &str) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let ok_first = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !ok_first || name.len() > 63 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        bail!(
            "--db-table '{name}' is not a plain table name: use letters, digits and _ (at most 63, not starting with a digit)"
        );
    }
    Ok(())
}

/// A database URL with its password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "the --db URL".into(),
    }
}

/// One thread's database connection with its prepared insert.
pub struct Db {
    client: Client,
    insert: Statement,
}

async fn open(url: &str) -> anyhow::Result<Client> {
    let target = redact(url);
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| anyhow::anyhow!("--db {target} is no PostgreSQL URL: {}", cause(&e)))?;
    // libpq's convention, which oemputx follows when it starts flows: the password travels
    // in the environment, not on the command line.
    if config.get_password().is_none()
        && let Ok(password) = std::env::var("PGPASSWORD")
    {
        config.password(password);
    }
    let (client, connection) = tokio::time::timeout(CONNECT_TIMEOUT, config.connect(NoTls))
        .await
        .map_err(|_| anyhow::anyhow!("cannot reach PostgreSQL at {target}: no answer within {} s; check that it runs and the host and port are right", CONNECT_TIMEOUT.as_secs()))?
        .map_err(|e| anyhow::anyhow!("cannot connect to PostgreSQL at {target}: {}; check that it runs, and the user, password and database in --db", cause(&e)))?;
    // The connection does the socket I/O; it runs on this thread's runtime beside the flow.
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("sample-flow: database connection ended: {e}");
        }
    });
    Ok(client)
}

/// Create the table if it is missing. Several flow processes may start at once; PostgreSQL's
/// `IF NOT EXISTS` can still collide on the catalog, so a collision is checked, not fatal.
pub async fn create_table(url: &str, table: &str) -> anyhow::Result<()> {
    check_table(table)?;
    let client = open(url).await?;
    let ddl = format!(
        "CREATE TABLE IF NOT EXISTS {table} (
            id bigserial PRIMARY KEY,
            correl_id text,
            received_at timestamptz NOT NULL DEFAULT now(),
            root text NOT NULL,
            fields integer NOT NULL,
            total double precision NOT NULL,
            checksum bigint NOT NULL,
            summary text NOT NULL,
            body_bytes integer NOT NULL)"
    );
    if let Err(e) = client.batch_execute(&ddl).await {
        let exists = client
            .query_opt("SELECT 1 FROM pg_tables WHERE tablename = $1", &[&table])
            .await
            .ok()
            .flatten()
            .is_some();
        if !exists {
            return Err(e).with_context(|| format!("creating table {table}"));
        }
    }
    Ok(())
}

impl Db {
    /// Connect and prepare the insert into `table` (which [`create_table`] made). With
    /// `async_commit`, the session does not wait for each commit's WAL flush.
    pub async fn connect(url: &str, table: &str, async_commit: bool) -> anyhow::Result<Db> {
        check_table(table)?;
        let client = open(url).await?;
        if async_commit {
            client
                .batch_execute("SET synchronous_commit = off")
                .await
                .context("setting synchronous_commit = off (--db-async-commit)")?;
        }
        let insert = client
            .prepare(&format!(
                "INSERT INTO {table} (correl_id, root, fields, total, checksum, summary, body_bytes)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)"
            ))
            .await
            .with_context(|| format!("preparing the insert into {table}"))?;
        Ok(Db { client, insert })
    }

    /// Insert the message's row (autocommit: it is durable before the request is acknowledged).
    pub async fn insert(
        &mut self,
        correl: Option<&str>,
        e: &Enriched,
        body_bytes: usize,
    ) -> anyhow::Result<()> {
        let fields = i32::try_from(e.record.fields.len()).unwrap_or(i32::MAX);
        let bytes = i32::try_from(body_bytes).unwrap_or(i32::MAX);
        // The checksum's bits as PostgreSQL's signed bigint.
        let checksum = e.record.checksum as i64;
        self.client
            .execute(
                &self.insert,
                &[
                    &correl,
                    &e.record.root,
                    &fields,
                    &e.record.total,
                    &checksum,
                    &e.summary,
                    &bytes,
                ],
            )
            .await
            .context("inserting the message's row (is the database still up?)")?;
        Ok(())
    }
}

/// A PostgreSQL error with its cause: tokio-postgres prints a server error as "db error"
/// alone, the server's message ("password authentication failed for user …") being its
/// source. Any URL in it is shown without its password.
fn cause(e: &tokio_postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
    };
    oemputx::secret::scrub(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_table_names_are_accepted() {
        assert!(check_table("oemputx_flow").is_ok());
        assert!(check_table("_t9").is_ok());
        for bad in ["", "9t", "t; DROP TABLE x", "a.b", "t-1", &"x".repeat(64)] {
            assert!(check_table(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/test"),
            "postgres://app:***@db:5432/test"
        );
        assert_eq!(redact("postgres://db/test"), "postgres://db/test");
        assert_eq!(redact("not a url"), "the --db URL");
    }
}
