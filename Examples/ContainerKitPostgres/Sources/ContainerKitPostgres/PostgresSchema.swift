import Logging
import PostgresNIO

/// The tables the adapters share, created on first use (idempotently, one instance at a time).
///
/// | table | what it holds | how it stays small |
/// |---|---|---|
/// | `ck_records` | committed records, partitioned by `generation` into `ck_records_<n>` | a generation is dropped whole once every row of it is acknowledged: never `DELETE` |
/// | `ck_cursors` | per delivery partition, the last acknowledged `(xid, seq)` | one row per partition, updated per batch (HOT updates: fill factor 10, vacuumed every 200 dead rows) |
/// | `ck_session_changes` | per user, the last session snapshot and the deltas committed after it, a row per version | rows are only inserted; a snapshot row deletes the user's older rows in its transaction (vacuumed at 1% dead rows) |
/// | `ck_sessions` | per user, a snapshot and its version, as versions before session deltas wrote them | read as a snapshot row until the user's next snapshot deletes it; no longer written |
/// | `ck_meta` | the current generation and the partition count | one row |
///
/// A record row carries the id of the transaction that wrote it (`xid`) and a sequence number: delivery
/// reads a partition in `(xid, seq)` order and only below the oldest transaction still running, so a row
/// committed late never lands behind the cursor.
public enum PostgresSchema {
    /// The advisory-lock namespace (the first key of two-key advisory locks) the adapters use by default.
    public static let defaultLockNamespace: Int32 = 0x434B  // "CK"

    /// The second key of the lock that serialises schema creation and rotation.
    static let maintenanceLockKey: Int32 = -1
    /// The second key of the shared lock every delivering instance holds (members are counted by it).
    static let memberLockKey: Int32 = 0

    /// The name of generation `generation`'s table.
    static func generationTable(_ generation: Int64) -> String { "ck_records_\(generation)" }

    /// Creates the tables if they are missing. `partitions` is used only by the first instance that creates
    /// them; later ones read it from `ck_meta`.
    /// - Returns: the partition count in force.
    static func ensure(
        on connection: PostgresConnection,
        partitions: Int,
        lockNamespace: Int32,
        logger: Logger
    ) async throws -> Int {
        try await connection.execute("BEGIN", logger: logger)
        do {
            try await connection.execute(
                "SELECT pg_advisory_xact_lock(\(lockNamespace), \(maintenanceLockKey))",
                logger: logger
            )
            for statement in statements {
                try await connection.execute(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.execute(
                "INSERT INTO ck_meta (id, generation, partitions) VALUES (1, 1, \(Int32(partitions))) ON CONFLICT DO NOTHING",
                logger: logger
            )
            try await connection.execute(
                PostgresQuery(
                    unsafeSQL:
                        "CREATE TABLE IF NOT EXISTS \(generationTable(1)) PARTITION OF ck_records FOR VALUES IN (1)"
                ),
                logger: logger
            )
            let rows = try await connection.rows("SELECT partitions FROM ck_meta WHERE id = 1", logger: logger)
            var count = partitions
            for try await value in rows.decode(Int32.self) { count = Int(value) }
            try await connection.execute(
                "INSERT INTO ck_cursors (part) SELECT generate_series(0, \(Int32(count)) - 1) ON CONFLICT DO NOTHING",
                logger: logger
            )
            try await connection.execute("COMMIT", logger: logger)
            return count
        } catch {
            try? await connection.execute("ROLLBACK", logger: logger)
            throw error
        }
    }

    static let statements = [
        """
        CREATE TABLE IF NOT EXISTS ck_meta (
            id int PRIMARY KEY CHECK (id = 1),
            generation bigint NOT NULL,
            partitions int NOT NULL,
            rotated_at timestamptz NOT NULL DEFAULT now())
        """,
        "CREATE SEQUENCE IF NOT EXISTS ck_records_seq",
        """
        CREATE TABLE IF NOT EXISTS ck_records (
            generation bigint NOT NULL,
            part int NOT NULL,
            xid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
            seq bigint NOT NULL DEFAULT nextval('ck_records_seq'),
            payload text NOT NULL
        ) PARTITION BY LIST (generation)
        """,
        "CREATE INDEX IF NOT EXISTS ck_records_order ON ck_records (part, xid, seq)",
        """
        CREATE TABLE IF NOT EXISTS ck_cursors (
            part int PRIMARY KEY,
            xid bigint NOT NULL DEFAULT 0,
            seq bigint NOT NULL DEFAULT 0,
            acknowledged bigint NOT NULL DEFAULT 0
        ) WITH (fillfactor = 50)
        """,
        """
        CREATE TABLE IF NOT EXISTS ck_sessions (
            user_id text PRIMARY KEY,
            version bigint NOT NULL,
            snapshot text NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now()
        ) WITH (fillfactor = 80)
        """,
        // One row per session commit: a delta (what a push changed) or, every few commits, the whole snapshot.
        """
        CREATE TABLE IF NOT EXISTS ck_session_changes (
            user_id text NOT NULL,
            version bigint NOT NULL,
            snapshot bool NOT NULL,
            body text NOT NULL,
            PRIMARY KEY (user_id, version))
        """,
        // Cursor rows (and legacy session rows) are updated in place all the time. Free room on every page lets an
        // update be HOT (no index entry, the old version pruned by the next visit of the page), and autovacuum
        // visits these tables after a fixed number of dead rows instead of a fraction of the table. Session
        // changes die at the rate of commits (each snapshot deletes the rows before it): vacuumed the same way.
        """
        ALTER TABLE ck_cursors SET (fillfactor = 10, autovacuum_vacuum_scale_factor = 0,
            autovacuum_vacuum_threshold = 200, autovacuum_vacuum_cost_delay = 0)
        """,
        """
        ALTER TABLE ck_sessions SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01,
            autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0,
            toast.autovacuum_vacuum_scale_factor = 0.01, toast.autovacuum_vacuum_threshold = 1000)
        """,
        """
        ALTER TABLE ck_session_changes SET (autovacuum_vacuum_scale_factor = 0.01,
            autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0,
            toast.autovacuum_vacuum_scale_factor = 0.01, toast.autovacuum_vacuum_threshold = 1000)
        """,
    ]
}
