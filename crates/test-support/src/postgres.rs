//! A private PostgreSQL schema per test, so runs never see each other's rows.

use tokio_postgres::{Client, NoTls};

/// A schema created for one test; [`PostgresSchema::url`] connects into it.
///
/// Dropping it does not remove the schema (that needs a round trip); call
/// [`PostgresSchema::remove`] at the end of the test.
pub struct PostgresSchema {
    /// The server URL with `search_path` set to the schema.
    pub url: String,
    name: String,
    admin: Client,
}

impl PostgresSchema {
    /// Creates a fresh schema on the server at `url`.
    ///
    /// # Panics
    /// When the server cannot be reached or refuses: a set
    /// `RECOURSE_TEST_POSTGRES_URL` naming an unreachable server is a failure.
    pub async fn create(url: &str) -> Self {
        let (admin, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL at {url} is unreachable: {e}"));
        tokio::spawn(connection);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("recourse_test_{}_{nanos}", std::process::id());
        admin
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .unwrap_or_else(|e| panic!("creating schema {name}: {e}"));
        let sep = if url.contains('?') { '&' } else { '?' };
        Self {
            url: format!("{url}{sep}options=-csearch_path%3D{name}"),
            name,
            admin,
        }
    }

    /// [`url`](Self::url) with the connections it opens named `app`
    /// (`application_name`), so that [`cut`](Self::cut) can find them.
    pub fn url_as(&self, app: &str) -> String {
        format!("{}&application_name={app}", self.url)
    }

    /// Terminates every connection of application `app`, as a failover
    /// would: how many there were.
    ///
    /// # Panics
    /// When the server refuses.
    pub async fn cut(&self, app: &str) -> i64 {
        self.admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
                &[&app],
            )
            .await
            .unwrap_or_else(|e| panic!("terminating {app}'s connections: {e}"))
            .get(0)
    }

    /// Locks the schema's `table` (`ACCESS EXCLUSIVE`) in a transaction of
    /// the admin connection; [`unlock`](Self::unlock) ends it.
    ///
    /// # Panics
    /// When the server refuses.
    pub async fn lock(&self, table: &str) {
        let name = &self.name;
        self.admin
            .batch_execute(&format!(
                "BEGIN; LOCK TABLE {name}.{table} IN ACCESS EXCLUSIVE MODE"
            ))
            .await
            .unwrap_or_else(|e| panic!("locking {name}.{table}: {e}"));
    }

    /// Ends the transaction [`lock`](Self::lock) began.
    ///
    /// # Panics
    /// When the server refuses.
    pub async fn unlock(&self) {
        self.admin
            .batch_execute("ROLLBACK")
            .await
            .unwrap_or_else(|e| panic!("unlocking: {e}"));
    }

    /// Drops the schema and everything in it.
    ///
    /// # Panics
    /// When the server refuses.
    pub async fn remove(self) {
        self.admin
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name))
            .await
            .unwrap_or_else(|e| panic!("dropping schema {}: {e}", self.name));
    }
}
