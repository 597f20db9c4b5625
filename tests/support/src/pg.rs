//! The test database (PostgreSQL, or $OEMPUTX_TEST_PG): a scalar query and tables that
//! drop themselves.

use crate::amqp::{fresh_queue, runtime};

/// The database the tests use: $OEMPUTX_TEST_PG, or the local PostgreSQL. (The password is
/// the one the test command sets when it installs PostgreSQL; trust auth ignores it.)
pub fn pg_url() -> String {
    std::env::var("OEMPUTX_TEST_PG")
        .unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into())
}

/// Run one SQL statement returning a single bigint (or none).
pub fn pg_scalar(sql: &str) -> Option<i64> {
    runtime().block_on(async {
        let (client, conn) = tokio_postgres::connect(&pg_url(), tokio_postgres::NoTls)
            .await
            .expect("the test database must be running (the test command starts it)");
        tokio::spawn(conn);
        let row = client.query_opt(sql, &[]).await.expect("query");
        row.map(|r| r.get::<_, i64>(0))
    })
}

/// A table name no other test uses; dropped when the guard goes.
pub struct TableGuard(pub String);

impl TableGuard {
    pub fn fresh(what: &str) -> TableGuard {
        let q = fresh_queue(what);
        TableGuard(q.replace('.', "_"))
    }
}

impl Drop for TableGuard {
    fn drop(&mut self) {
        runtime().block_on(async {
            if let Ok((client, conn)) =
                tokio_postgres::connect(&pg_url(), tokio_postgres::NoTls).await
            {
                tokio::spawn(conn);
                let _ = client
                    .batch_execute(&format!("DROP TABLE IF EXISTS {}", self.0))
                    .await;
            }
        });
    }
}
