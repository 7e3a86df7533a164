import Logging
import PostgresNIO

/// The tables the adapters share, created on first use (idempotently, one instance at a time).
///
/// | table | what it holds | how it stays small |
/// |---|---|---|
/// | `ck_records` | committed records, partitioned by `generation` into `ck_records_<n>` | a generation is dropped whole once every row of it is acknowledged: never `DELETE` |
/// | `ck_cursors` | per delivery partition, the last acknowledged `(xid, seq)` | one row per partition, updated per batch (HOT updates: fill factor 10, vacuumed every 200 dead rows) |
/// | `ck_session_changes` | per user, the last session snapshot and the deltas committed after it, a row per version | a commit only inserts rows; the rows a newer snapshot of their user supersedes are deleted by the next compaction, in bulk (vacuumed at 1% dead rows) |
/// | `ck_sessions` | per user, a snapshot and its version, as versions before session deltas wrote them | moved into `ck_session_changes` as snapshot rows when a store with these definitions first starts; empty after that, and never read or written again |
/// | `ck_meta` | the current generation and the partition count | one row |
///
/// A record row carries the id of the transaction that wrote it (`xid`) and a sequence number: delivery
/// reads a partition in `(xid, seq)` order and only below the oldest transaction still running, so a row
/// committed late never lands behind the cursor.
///
/// Five functions do in one call what would take several statements (``functions``; replaced whenever a store
/// starts, so the newest definition wins; a change of arguments gets a new name):
///
/// | function | what it does |
/// |---|---|
/// | `ck_commit_group(…)` | a whole group commit (``PostgresRecordStore``'s Group commit and Fencing) in one statement: locks the group's users, reads their heads, and writes records and session rows only if no user is fenced; returns the fenced users |
/// | `ck_compact_sessions(namespace, batch)` | deletes the session rows that the snapshots written since the last compaction supersede, one instance at a time |
/// | `ck_probe()` | takes the locks a commit takes on the tables: answers only when commits could run |
/// | `ck_undelivered()` | counts the records no delivery partition has acknowledged, per partition from its cursor on |
/// | `ck_rotate(namespace)` | starts a new generation and drops the acknowledged ones, one instance at a time |
public enum PostgresSchema {
    /// The advisory-lock namespace (the first key of two-key advisory locks) the adapters use by default.
    public static let defaultLockNamespace: Int32 = 0x434B  // "CK"

    /// The second key of the lock that serialises schema creation and rotation.
    static let maintenanceLockKey: Int32 = -1
    /// The second key of the shared lock every delivering instance holds (members are counted by it).
    static let memberLockKey: Int32 = 0

    /// The name of generation `generation`'s table.
    static func generationTable(_ generation: Int64) -> String { "ck_records_\(generation)" }

    /// The schema's mark: a hash of its definitions (``statements``, ``functions``). `ck_meta`'s comment holds
    /// the mark of the definitions that made it, so a store whose definitions are the same runs no DDL at all
    /// (DDL takes locks that wait for, and block, the commits of instances already running); any change to the
    /// definitions changes the mark, and the first store that starts with it runs them once.
    static let mark: String = {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (statements + functions).joined(separator: "\u{0}").utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return "containerkit schema " + String(hash, radix: 16)
    }()

    /// Creates the tables and functions if they are missing or older than these definitions (``mark``).
    /// `partitions` is used only by the first instance that creates them; later ones read it from `ck_meta`.
    /// - Parameter force: runs the definitions whatever the mark says (a table or function was dropped).
    /// - Returns: the partition count in force.
    static func ensure(
        on connection: PostgresConnection,
        partitions: Int,
        lockNamespace: Int32,
        force: Bool = false,
        logger: Logger
    ) async throws -> Int {
        if !force {
            var current = ""
            let marks = try await connection.query(
                "SELECT coalesce(obj_description(to_regclass('ck_meta'), 'pg_class'), '')",
                logger: logger
            )
            for try await value in marks.decode(String.self) { current = value }
            if current == mark {
                var count = partitions
                let rows = try await connection.query("SELECT partitions FROM ck_meta WHERE id = 1", logger: logger)
                for try await value in rows.decode(Int32.self) { count = Int(value) }
                return count
            }
        }
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query(
                "SELECT pg_advisory_xact_lock(\(lockNamespace), \(maintenanceLockKey))",
                logger: logger
            )
            for statement in statements + functions {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.query(
                "INSERT INTO ck_meta (id, generation, partitions) VALUES (1, 1, \(Int32(partitions))) ON CONFLICT DO NOTHING",
                logger: logger
            )
            try await connection.query(
                PostgresQuery(
                    unsafeSQL:
                        "CREATE TABLE IF NOT EXISTS \(generationTable(1)) PARTITION OF ck_records FOR VALUES IN (1)"
                ),
                logger: logger
            )
            let rows = try await connection.query("SELECT partitions FROM ck_meta WHERE id = 1", logger: logger)
            var count = partitions
            for try await value in rows.decode(Int32.self) { count = Int(value) }
            try await connection.query(
                "INSERT INTO ck_cursors (part) SELECT generate_series(0, \(Int32(count)) - 1) ON CONFLICT DO NOTHING",
                logger: logger
            )
            try await connection.query(
                PostgresQuery(unsafeSQL: "COMMENT ON TABLE ck_meta IS '\(mark)'"),
                logger: logger
            )
            try await connection.query("COMMIT", logger: logger)
            return count
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
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
            id bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (user_id, version))
        """,
        // Cursor rows (and legacy session rows) are updated in place all the time. Free room on every page lets an
        // update be HOT (no index entry, the old version pruned by the next visit of the page), and autovacuum
        // visits these tables after a fixed number of dead rows instead of a fraction of the table. Session
        // changes die at the rate of commits (compactions delete the rows each snapshot supersedes): vacuumed the
        // same way.
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
        // Each change's identity (SessionCheckpoint.id, as a signed 64-bit pattern; 0 for rows written before
        // lineage): a commit that names the change it continues is kept only on that very change.
        // (Checked first: ALTER TABLE takes the table's strongest lock even when the column is there.)
        """
        DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = 'ck_session_changes'::regclass AND attname = 'id' AND NOT attisdropped) THEN
                ALTER TABLE ck_session_changes ADD COLUMN id bigint NOT NULL DEFAULT 0;
            END IF;
        END $$
        """,
        // The transaction that wrote a snapshot row (deltas leave it null: no bytes in the row), and how far the
        // compaction (`ck_compact_sessions`) has read: the rows a snapshot supersedes are deleted by the next
        // compaction in bulk, not by the commit that wrote it. An index of snapshot rows only, by the transaction,
        // is how a compaction finds the snapshots written since the last one.
        """
        DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = 'ck_session_changes'::regclass AND attname = 'written' AND NOT attisdropped) THEN
                ALTER TABLE ck_session_changes ADD COLUMN written bigint;
            END IF;
            IF NOT EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = 'ck_meta'::regclass AND attname = 'compacted' AND NOT attisdropped) THEN
                ALTER TABLE ck_meta ADD COLUMN compacted bigint NOT NULL DEFAULT 0;
            END IF;
        END $$
        """,
        """
        CREATE INDEX IF NOT EXISTS ck_session_changes_snapshots ON ck_session_changes (written)
        WHERE snapshot AND written IS NOT NULL
        """,
        // The sessions stored before deltas, moved once into `ck_session_changes` as snapshot rows (a row is the
        // base of any deltas stored after it, unless a snapshot at or above its version replaced it), so that a
        // commit's head and a load read one table: the second table's lookup was about a third of the head's
        // cost. Runs with the other definitions, under the maintenance lock; with the table empty it does nothing.
        """
        WITH moved AS (DELETE FROM ck_sessions s RETURNING s.user_id, s.version, s.snapshot)
        INSERT INTO ck_session_changes (user_id, version, snapshot, body, id)
        SELECT m.user_id, m.version, true, m.snapshot, 0 FROM moved m
        WHERE NOT EXISTS (SELECT 1 FROM ck_session_changes x
            WHERE x.user_id = m.user_id AND x.snapshot AND x.version >= m.version)
        ON CONFLICT DO NOTHING
        """,
    ]

    /// The functions (see the table above). Each PL/pgSQL statement runs with a snapshot of its own (READ
    /// COMMITTED), so what a statement reads includes every commit that finished before it started: the head a
    /// commit reads after taking its users' locks includes the other instances' commits of those users.
    static let functions = [
        """
        CREATE OR REPLACE FUNCTION ck_commit_group(
            lock_keys bigint[], parts int[], payloads text[],
            chain_users text[], chain_expected bigint[], chain_deltas bool[], chain_parents bigint[],
            chain_checks bool[],
            row_users text[], row_versions bigint[], row_snapshots bool[], row_bodies text[], row_ids bigint[],
            removal_users text[], removal_versions bigint[])
        RETURNS text[] LANGUAGE plpgsql
        -- The statements' plans are made once per connection (a custom plan per call cost a third of a small
        -- group's time in planning), and made of index lookups driven by the group's users whatever the
        -- statistics say: a plan made while a table was small (a seq scan and a hash join, 50 ms a call on 200,000
        -- session rows) would otherwise stay cached as the table grows.
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off
        SET enable_mergejoin = off
        AS $function$
        DECLARE
            fenced text[];
            writer bigint;
        BEGIN
            -- The group's users, in the order given (ascending: no deadlock between two writers), until the end of
            -- the statement's transaction: what follows reads every other commit of these users.
            PERFORM pg_advisory_xact_lock(k) FROM unnest(lock_keys) AS t(k);
            -- A user's head is their newest version. A chain starting with a delta goes on only
            -- from exactly that version, one starting with a snapshot from no higher: a version another writer
            -- stored meanwhile is a conflict, not a second state. (A version above the head cannot exist, so no
            -- row of an accepted chain is there already.)
            -- A chain that names the change it continues (checks) goes on only from that very change (its id):
            -- a copy whose earlier commit was refused never continues another writer's version of the same number.
            SELECT coalesce(array_agg(c.user_id), '{}') INTO fenced
            FROM unnest(chain_users, chain_expected, chain_deltas, chain_parents, chain_checks)
                AS c(user_id, expected, delta, parent, checks)
            -- The newest change row (its version and id) in one descent of the primary key.
            LEFT JOIN LATERAL (SELECT x.version, x.id FROM ck_session_changes x WHERE x.user_id = c.user_id
                ORDER BY x.version DESC LIMIT 1) n ON true
            CROSS JOIN LATERAL (SELECT coalesce(n.version, 0) AS head, coalesce(n.id, 0) AS head_id) h
            WHERE CASE WHEN c.delta THEN h.head <> c.expected OR (c.checks AND h.head_id <> c.parent)
                ELSE h.head > c.expected OR (c.checks AND c.parent <> 0 AND h.head_id <> c.parent AND h.head_id <> 0) END;
            IF cardinality(fenced) > 0 THEN
                RETURN fenced;
            END IF;
            -- The transaction's id once: the records' xid, and the mark of the snapshot rows it writes.
            writer := pg_current_xact_id()::text::bigint;
            IF cardinality(payloads) > 0 THEN
                -- The rows' order in the transaction as their sequence: (xid, seq) orders a partition's rows as the
                -- column defaults did, without a function call and a sequence access per row (each group is one
                -- transaction, so no two rows share both).
                INSERT INTO ck_records (generation, part, xid, seq, payload)
                SELECT (SELECT generation FROM ck_meta WHERE id = 1), t.p, writer, t.o, t.j
                FROM unnest(parts, payloads) WITH ORDINALITY AS t(p, j, o);
            END IF;
            IF cardinality(row_users) > 0 THEN
                -- A snapshot's chain starts at it: the user's older rows are read by nothing from now on, and the
                -- next compaction deletes them (in bulk, a fifth of what deleting them here cost).
                INSERT INTO ck_session_changes (user_id, version, snapshot, body, id, written)
                SELECT r.user_id, r.version, r.snapshot, r.body, r.id, CASE WHEN r.snapshot THEN writer END
                FROM unnest(row_users, row_versions, row_snapshots, row_bodies, row_ids)
                    AS r(user_id, version, snapshot, body, id);
            END IF;
            IF cardinality(removal_users) > 0 THEN
                -- An ended session is removed only if no newer version was stored meanwhile — then all of it: a
                -- part would leave deltas without the snapshot they apply to.
                WITH ended AS (
                    SELECT DISTINCT r.user_id
                    FROM unnest(removal_users, removal_versions) AS r(user_id, version)
                    WHERE coalesce(
                        (SELECT max(x.version) FROM ck_session_changes x WHERE x.user_id = r.user_id), 0) <= r.version)
                DELETE FROM ck_session_changes x USING ended e WHERE x.user_id = e.user_id;
            END IF;
            RETURN fenced;
        END
        $function$
        """,
        // The session rows of many users at once (PostgresStatements.LoadSessions): per user, the newest snapshot row
        // and the rows after it. A function for the same reason
        // as ck_commit_group's settings: index lookups per user, whatever plan the statistics of a young table
        // would have chosen and kept.
        """
        CREATE OR REPLACE FUNCTION ck_load_sessions(users text[])
        RETURNS TABLE (user_id text, version bigint, snapshot bool, body text, id bigint) LANGUAGE plpgsql
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off
        SET enable_mergejoin = off
        AS $function$
        BEGIN
            RETURN QUERY
            WITH wanted AS (SELECT DISTINCT u AS user_id FROM unnest(users) AS t(u)),
            latest AS (
                SELECT w.user_id,
                    (SELECT max(c.version) FROM ck_session_changes c WHERE c.user_id = w.user_id AND c.snapshot)
                        AS snapshot
                FROM wanted w)
            SELECT c.user_id, c.version, c.snapshot, c.body, c.id
            FROM latest l JOIN ck_session_changes c ON c.user_id = l.user_id
                AND c.version >= coalesce(l.snapshot, 0);
        END
        $function$
        """,
        // The rows superseded by the snapshots written since the last compaction (by transactions below
        // `compacted`, at most `batch` snapshots' transactions a call), deleted; one instance at a time (a lock
        // wait: after another instance's pass this one finds little or nothing left). Only transactions that have
        // ended are read (below the oldest one running), so a snapshot committed late is never passed over, and a
        // call covers every commit that ended before it started. Returns how many rows it deleted and whether
        // snapshots are left for another call.
        """
        CREATE OR REPLACE FUNCTION ck_compact_sessions(namespace int, batch int, OUT deleted bigint, OUT more bool)
        LANGUAGE plpgsql
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off
        SET enable_mergejoin = off
        AS $function$
        DECLARE
            low bigint;
            high bigint;
            upto bigint;
            found int;
        BEGIN
            deleted := 0;
            more := false;
            PERFORM pg_advisory_xact_lock(namespace, -2);
            SELECT m.compacted INTO low FROM ck_meta m WHERE m.id = 1;
            high := pg_snapshot_xmin(pg_current_snapshot())::text::bigint;
            -- The first `batch` snapshot rows' transactions, each whole (a transaction's rows share its id).
            SELECT max(t.written) + 1, count(*) INTO upto, found FROM (
                SELECT x.written FROM ck_session_changes x
                WHERE x.snapshot AND x.written IS NOT NULL AND x.written >= low AND x.written < high
                ORDER BY x.written LIMIT batch) t;
            IF found < batch THEN
                upto := high;
            END IF;
            more := upto < high;
            IF upto <= low THEN
                RETURN;
            END IF;
            -- A row another transaction holds (a commit removing its user, a rotation holding `ck_meta`) is waited
            -- for briefly, never long enough for a deadlock check: the compaction gives up first, undoes what it
            -- did, and the next one tries again. (A lock timeout outside this block would fail the call, and a
            -- failed call marks the store unavailable.)
            PERFORM set_config('lock_timeout', '200ms', true);
            BEGIN
                WITH snapshots AS (
                    SELECT x.user_id, max(x.version) AS version FROM ck_session_changes x
                    WHERE x.snapshot AND x.written IS NOT NULL AND x.written >= low AND x.written < upto
                    GROUP BY x.user_id)
                DELETE FROM ck_session_changes c USING snapshots n
                WHERE c.user_id = n.user_id AND c.version < n.version;
                GET DIAGNOSTICS deleted = ROW_COUNT;
                UPDATE ck_meta SET compacted = upto WHERE id = 1;
            EXCEPTION WHEN lock_not_available THEN
                deleted := 0;
                more := false;
                RETURN;
            END;
        END
        $function$
        """,
        // The records no delivery partition has acknowledged yet (the `/metrics` backlog): per partition, a count of
        // the index entries after its cursor. A join of the records and the cursors, planned at each call, read
        // every row of every generation (parallel sequential scans: 114–130 ms for 200,000 delivered rows; 0.5–2.7
        // ms counted per partition).
        """
        CREATE OR REPLACE FUNCTION ck_undelivered() RETURNS bigint LANGUAGE plpgsql
        SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off
        SET enable_mergejoin = off SET jit = off
        AS $function$
        BEGIN
            RETURN (SELECT coalesce(sum(x.n), 0) FROM ck_cursors c CROSS JOIN LATERAL (
                SELECT count(*) AS n FROM ck_records r WHERE r.part = c.part AND (r.xid, r.seq) > (c.xid, c.seq)) x);
        END
        $function$
        """,
        """
        CREATE OR REPLACE FUNCTION ck_probe() RETURNS int LANGUAGE plpgsql AS $function$
        BEGIN
            LOCK TABLE ck_records, ck_session_changes IN ROW EXCLUSIVE MODE;
            RETURN 1;
        END
        $function$
        """,
        // One instance at a time (the maintenance lock; a wait longer than a second means another instance
        // rotates: give up until the next interval). Old generations are dropped when every delivery partition
        // acknowledged their rows; a new one starts when the current one holds rows.
        """
        CREATE OR REPLACE FUNCTION ck_rotate(namespace int, OUT rotated bool, OUT dropped int)
        LANGUAGE plpgsql AS $function$
        DECLARE
            current_generation bigint;
            old bigint[];
            old_generation bigint;
            unacknowledged bool;
        BEGIN
            rotated := false;
            dropped := 0;
            PERFORM set_config('lock_timeout', '1s', true);
            BEGIN
                PERFORM pg_advisory_xact_lock(namespace, -1);
            EXCEPTION WHEN lock_not_available THEN
                RETURN;
            END;
            SELECT m.generation INTO current_generation FROM ck_meta m WHERE m.id = 1 FOR UPDATE;
            SELECT coalesce(array_agg(t.g ORDER BY t.g), '{}') INTO old
            FROM (SELECT CASE WHEN c.relname ~ '^ck_records_[0-9]+$' THEN substr(c.relname, 12)::bigint END AS g
                FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'ck_records'::regclass) t
            WHERE t.g < current_generation;
            IF cardinality(old) > 0 THEN
                LOCK TABLE ck_records IN ACCESS EXCLUSIVE MODE;
                -- Every commit waits while the lock is held, so a generation is checked with one index probe per
                -- partition (the first row after its cursor), never by reading it whole: planned at each call
                -- (EXECUTE), a join of the generation and the cursors read every row of a drained generation
                -- (220 ms for 200,000 rows; 0.6 ms probed), and with the sequential scan off its cost would cross
                -- the JIT threshold (570 ms of compilation).
                PERFORM set_config('enable_seqscan', 'off', true);
                PERFORM set_config('jit', 'off', true);
                FOREACH old_generation IN ARRAY old LOOP
                    EXECUTE format('SELECT EXISTS (SELECT 1 FROM ck_cursors c CROSS JOIN LATERAL (SELECT 1 FROM %I r '
                        'WHERE r.part = c.part AND (r.xid, r.seq) > (c.xid, c.seq) LIMIT 1) x)',
                        'ck_records_' || old_generation)
                        INTO unacknowledged;
                    IF NOT unacknowledged THEN
                        EXECUTE format('DROP TABLE %I', 'ck_records_' || old_generation);
                        dropped := dropped + 1;
                    END IF;
                END LOOP;
            END IF;
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', 'ck_records_' || current_generation) INTO rotated;
            IF rotated THEN
                EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF ck_records FOR VALUES IN (%s)',
                    'ck_records_' || (current_generation + 1), current_generation + 1);
                UPDATE ck_meta SET generation = current_generation + 1, rotated_at = now() WHERE id = 1;
            END IF;
        END
        $function$
        """,
    ]
}
