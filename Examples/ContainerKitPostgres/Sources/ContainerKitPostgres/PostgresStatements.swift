import PostgresNIO

/// The statements the store sends, each prepared once per connection (postgres-nio names it and keeps it):
/// PostgreSQL parses and plans each once per connection instead of once per call. The commit, the probe and
/// the rotation are functions ``PostgresSchema`` creates, whose statements PL/pgSQL also plans once per
/// connection.
enum PostgresStatements {
    /// A group commit in one call: `ck_commit_group` (see ``PostgresSchema``). Returns the fenced users
    /// (nothing was written then), or none (all of it was).
    struct CommitGroup: PostgresPreparedStatement {
        static let sql = "SELECT ck_commit_group($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        static let bindingDataTypes: [PostgresDataType] = [
            .int8Array, .int4Array, .textArray, .textArray, .int8Array, .boolArray, .int8Array, .boolArray,
            .textArray, .int8Array, .boolArray, .textArray, .int8Array, .textArray, .int8Array,
        ]
        typealias Row = [String]

        /// The advisory-lock keys of the group's session users, ascending.
        var lockKeys: [Int64]
        var partitions: [Int32]
        var payloads: [String]
        /// Per user with checkpoints: the id, the version its chain continues, whether the chain starts with a
        /// delta.
        var chainUsers: [String]
        var chainExpected: [Int64]
        var chainDeltas: [Bool]
        /// The identity of the change each chain continues (a signed pattern of ``SessionCheckpoint/parent``),
        /// and whether it is checked (a change fenced by version alone is not).
        var chainParents: [Int64] = []
        var chainChecks: [Bool] = []
        /// The session rows to insert.
        var rowUsers: [String]
        var rowVersions: [Int64]
        var rowSnapshots: [Bool]
        var rowBodies: [String]
        /// Each row's ``SessionCheckpoint/id`` as a signed pattern.
        var rowIDs: [Int64] = []
        var removalUsers: [String]
        var removalVersions: [Int64]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 15)
            bindings.append(lockKeys)
            bindings.append(partitions)
            bindings.append(payloads)
            bindings.append(chainUsers)
            bindings.append(chainExpected)
            bindings.append(chainDeltas)
            bindings.append(chainParents)
            bindings.append(chainChecks)
            bindings.append(rowUsers)
            bindings.append(rowVersions)
            bindings.append(rowSnapshots)
            bindings.append(rowBodies)
            bindings.append(rowIDs)
            bindings.append(removalUsers)
            bindings.append(removalVersions)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> [String] { try row.decode([String].self) }
    }

    /// The session rows of many users at once: per user, the newest snapshot row and the rows after it. Rows come as `(user, version, snapshot, body, id)`,
    /// unordered.
    struct LoadSessions: PostgresPreparedStatement {
        static let sql = "SELECT user_id, version, snapshot, body, id FROM ck_load_sessions($1)"
        static let bindingDataTypes: [PostgresDataType] = [.textArray]
        typealias Row = (String, Int64, Bool, String, Int64)

        var users: [String]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(users)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Whether ``ReadRecords`` (`read`, with its bindings) would have found rows without the horizon: any row
    /// committed after the partitions' cursors. Asked only when the read found none: then such a row lies behind a
    /// transaction still running, which may yet commit rows that sort before it.
    struct RowsAfterCursors: PostgresPreparedStatement {
        static let sql = """
            SELECT EXISTS (
                SELECT 1 FROM unnest($1::int[], $2::bigint[], $3::bigint[]) AS c(part, xid, seq)
                CROSS JOIN LATERAL (
                    SELECT 1 FROM ck_records WHERE part = c.part AND (xid, seq) > (c.xid, c.seq) LIMIT $4) r)
            """
        static let bindingDataTypes = ReadRecords.bindingDataTypes
        typealias Row = Bool

        var read: ReadRecords

        func makeBindings() throws -> PostgresBindings { try read.makeBindings() }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// A statement that does nothing, sent after a commit on the same connection: PostgreSQL answers it only after
    /// it committed the statement before (see ``PostgresRecordStore``'s commit).
    struct AfterCommit: PostgresPreparedStatement {
        static let sql = "SELECT 1"
        typealias Row = Int32

        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Int32 { try row.decode(Int32.self) }
    }

    /// `ck_probe()`: takes, and at once gives back, the locks a commit takes on the tables; answers only when
    /// commits could run.
    struct Probe: PostgresPreparedStatement {
        static let sql = "SELECT ck_probe()"
        typealias Row = Int32

        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Int32 { try row.decode(Int32.self) }
    }

    /// `ck_compact_sessions(namespace, batch)`: the session rows deleted because a newer snapshot supersedes them,
    /// and whether snapshots are left for another call.
    struct CompactSessions: PostgresPreparedStatement {
        static let sql = "SELECT deleted, more FROM ck_compact_sessions($1, $2)"
        static let bindingDataTypes: [PostgresDataType] = [.int4, .int4]
        typealias Row = (Int64, Bool)

        var namespace: Int32
        var batch: Int32

        func makeBindings() throws -> PostgresBindings {
            PostgresBindings(namespace, batch)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// `ck_rotate(namespace)`: whether a generation was started, and how many were dropped.
    struct Rotate: PostgresPreparedStatement {
        static let sql = "SELECT rotated, dropped FROM ck_rotate($1)"
        static let bindingDataTypes: [PostgresDataType] = [.int4]
        typealias Row = (Bool, Int32)

        var namespace: Int32

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(namespace)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Committed records no delivery partition has acknowledged yet.
    struct UndeliveredRows: PostgresPreparedStatement {
        static let sql = "SELECT ck_undelivered()"
        typealias Row = Int64

        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    // MARK: The lease connection's

    /// Up to `limit` rows of each partition after its cursor, only below the oldest transaction still running
    /// (so a row committed late never lands behind a cursor), partitions in the order given, `limit` in all.
    struct ReadRecords: PostgresPreparedStatement {
        static let sql = """
            SELECT c.part, r.xid, r.seq, r.payload
            FROM unnest($1::int[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS c(part, xid, seq, o)
            CROSS JOIN LATERAL (
                SELECT xid, seq, payload FROM ck_records
                WHERE part = c.part AND (xid, seq) > (c.xid, c.seq)
                  AND xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                ORDER BY xid, seq LIMIT $4) r
            ORDER BY c.o, r.xid, r.seq
            LIMIT $4
            """
        static let bindingDataTypes: [PostgresDataType] = [.int4Array, .int8Array, .int8Array, .int4]
        typealias Row = (Int32, Int64, Int64, String)

        var partitions: [Int32]
        var xids: [Int64]
        var seqs: [Int64]
        var limit: Int32

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(partitions)
            bindings.append(xids)
            bindings.append(seqs)
            bindings.append(limit)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Moves the partitions' cursors forward (never back) and counts the rows acknowledged.
    struct Acknowledge: PostgresPreparedStatement {
        static let sql = """
            UPDATE ck_cursors c SET xid = a.xid, seq = a.seq, acknowledged = c.acknowledged + a.n
            FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::bigint[]) AS a(part, xid, seq, n)
            WHERE c.part = a.part AND (c.xid, c.seq) < (a.xid, a.seq)
            """
        static let bindingDataTypes: [PostgresDataType] = [.int4Array, .int8Array, .int8Array, .int8Array]
        typealias Row = ()

        var partitions: [Int32]
        var xids: [Int64]
        var seqs: [Int64]
        var counts: [Int64]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(partitions)
            bindings.append(xids)
            bindings.append(seqs)
            bindings.append(counts)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }

    /// The granted advisory locks of the namespace on partitions and membership: `(key, mode)`.
    struct LeaseLocks: PostgresPreparedStatement {
        static let sql = """
            SELECT objid::text::bigint, mode FROM pg_locks
            WHERE locktype = 'advisory' AND granted AND classid::text::bigint = $1 AND objsubid = 2
              AND objid::text::bigint <= $2
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """
        static let bindingDataTypes: [PostgresDataType] = [.int8, .int8]
        typealias Row = (Int64, String)

        var namespace: Int64
        var partitions: Int64

        func makeBindings() throws -> PostgresBindings {
            PostgresBindings(namespace, partitions)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Takes a partition's lease (`pg_try_advisory_lock`) without waiting: whether it was free.
    struct TryLease: PostgresPreparedStatement {
        static let sql = "SELECT pg_try_advisory_lock($1, $2)"
        static let bindingDataTypes: [PostgresDataType] = [.int4, .int4]
        typealias Row = Bool

        var namespace: Int32
        var key: Int32

        func makeBindings() throws -> PostgresBindings {
            PostgresBindings(namespace, key)
        }

        func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
    }

    /// Gives a partition's lease back (`pg_advisory_unlock`).
    struct ReleaseLease: PostgresPreparedStatement {
        static let sql = "SELECT pg_advisory_unlock($1, $2)"
        static let bindingDataTypes: [PostgresDataType] = [.int4, .int4]
        typealias Row = Bool

        var namespace: Int32
        var key: Int32

        func makeBindings() throws -> PostgresBindings {
            PostgresBindings(namespace, key)
        }

        func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
    }

    /// Joins the delivering instances: the shared membership lock, held by the lease connection.
    struct JoinMembers: PostgresPreparedStatement {
        static let sql = "SELECT 1 FROM (SELECT pg_advisory_lock_shared($1, $2)) AS joined"
        static let bindingDataTypes: [PostgresDataType] = [.int4, .int4]
        typealias Row = Int32

        var namespace: Int32
        var key: Int32

        func makeBindings() throws -> PostgresBindings {
            PostgresBindings(namespace, key)
        }

        func decodeRow(_ row: PostgresRow) throws -> Int32 { try row.decode(Int32.self) }
    }

    /// A partition's cursor.
    struct ReadCursor: PostgresPreparedStatement {
        static let sql = "SELECT xid, seq FROM ck_cursors WHERE part = $1"
        static let bindingDataTypes: [PostgresDataType] = [.int4]
        typealias Row = (Int64, Int64)

        var partition: Int32

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(partition)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

extension PostgresBindings {
    /// The bindings of a statement with two parameters, `first` as `$1` and `second` as `$2`.
    init(_ first: some PostgresNonThrowingEncodable, _ second: some PostgresNonThrowingEncodable) {
        self.init(capacity: 2)
        append(first)
        append(second)
    }
}

extension PostgresConnection {
    /// Runs `statement` and collects its rows.
    func all<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws
        -> [Statement.Row]
    {
        var rows: [Statement.Row] = []
        for try await row in try await execute(statement, logger: logger) { rows.append(row) }
        return rows
    }
}
