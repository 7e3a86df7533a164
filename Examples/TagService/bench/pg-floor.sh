#!/usr/bin/env bash
# What PostgreSQL alone costs for the writes a push needs, with no service around it (make bench-pg-floor).
#
# Starts a throw-away PostgreSQL on 127.0.0.1 (fsync on, synchronous commit: as make bench-cluster runs it) and,
# for each shape of table below, commits FLOOR_TRANSACTIONS groups of FLOOR_GROUP events with pgbench (prepared
# statements, one client: a single writer, nothing else on the server). Each event is a 195-byte record and a
# 113-byte session delta of one user (the sizes of make bench-cluster's hot phase); the group's users are the same
# FLOOR_GROUP users in every group (hot, their index pages in memory: a lower bound). For each shape it prints
# <shape>_us_per_event (user + system CPU of every PostgreSQL process, /proc, per event) and
# <shape>_wal_bytes_per_event (pg_current_wal_lsn() before and after):
#
#   records_only       one row per event (the record), one B-tree (part, xid, seq): delivery order alone, no session
#   one_row_pk         one row per event (record and delta), one B-tree (user_id, version): loads, no delivery order
#   one_row            one row per event (record and delta), both B-trees: what delivery and loads both need
#   one_row_fenced     one_row, after the group's advisory locks and each user's head read (two instances may serve
#                      one user: a write must continue the version it read)
#   two_rows_fenced    the shape ContainerKitPostgres stores today: a record row and a session-change row per
#                      event, each with its B-tree, fenced as above
#
# Knobs (environment): FLOOR_GROUP (64), FLOOR_TRANSACTIONS (1000), FLOOR_ROUNDS (2: each shape once per
# round, interleaved: each line is the rounds' mean, the _rounds line each round's figure), FLOOR_PG_PORT (18591),
# POSTGRES_BIN.
set -euo pipefail

GROUP=${FLOOR_GROUP:-64}
TRANSACTIONS=${FLOOR_TRANSACTIONS:-1000}
ROUNDS=${FLOOR_ROUNDS:-2}
PG_PORT=${FLOOR_PG_PORT:-18591}
PG_BIN=${POSTGRES_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)}
[ -x "$PG_BIN/initdb" ] || { echo "pg-floor: no PostgreSQL (set POSTGRES_BIN)" >&2; exit 1; }
command -v "$PG_BIN/pgbench" > /dev/null || { echo "pg-floor: no pgbench in $PG_BIN" >&2; exit 1; }

WORK=$(mktemp -d /tmp/pg-floor-XXXXXX)
chmod 755 "$WORK"
# shellcheck source=scratch-postgres.bash
. "$(dirname "$0")/scratch-postgres.bash"
cleanup() { pg stop -m immediate > /dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
scratch_postgres_init
echo "jit = off" >> "$WORK/pg/data/postgresql.auto.conf"
pg start > /dev/null
psql_() { "$PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d floor "$@"; }
"$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "CREATE DATABASE floor" > /dev/null

psql_ > /dev/null << 'EOF'
CREATE TABLE records_only (part int NOT NULL, xid bigint NOT NULL, seq int NOT NULL, payload text NOT NULL);
CREATE INDEX ON records_only (part, xid, seq);
CREATE TABLE one_row_pk (user_id text NOT NULL, version bigint NOT NULL, part int NOT NULL, xid bigint NOT NULL,
    seq int NOT NULL, record text, delta text NOT NULL, PRIMARY KEY (user_id, version));
CREATE TABLE one_row (LIKE one_row_pk INCLUDING ALL);
CREATE INDEX ON one_row (part, xid, seq);
CREATE TABLE one_row_fenced (LIKE one_row INCLUDING ALL);
CREATE TABLE two_rows_records (LIKE records_only INCLUDING ALL);
CREATE TABLE two_rows_changes (user_id text NOT NULL, version bigint NOT NULL, body text NOT NULL,
    PRIMARY KEY (user_id, version));

-- Every call: the group's events as arrays; xid is the transaction's, seq the event's place in the group.
CREATE FUNCTION records_only(users text[], versions bigint[], parts int[], records text[], deltas text[])
RETURNS void LANGUAGE sql AS $$
    INSERT INTO records_only SELECT t.p, pg_current_xact_id()::text::bigint, t.o, t.r
    FROM unnest(parts, records) WITH ORDINALITY AS t(p, r, o) $$;
CREATE FUNCTION one_row_pk(users text[], versions bigint[], parts int[], records text[], deltas text[])
RETURNS void LANGUAGE sql AS $$
    INSERT INTO one_row_pk SELECT t.u, t.v, t.p, pg_current_xact_id()::text::bigint, t.o, t.r, t.d
    FROM unnest(users, versions, parts, records, deltas) WITH ORDINALITY AS t(u, v, p, r, d, o) $$;
CREATE FUNCTION one_row(users text[], versions bigint[], parts int[], records text[], deltas text[])
RETURNS void LANGUAGE sql AS $$
    INSERT INTO one_row SELECT t.u, t.v, t.p, pg_current_xact_id()::text::bigint, t.o, t.r, t.d
    FROM unnest(users, versions, parts, records, deltas) WITH ORDINALITY AS t(u, v, p, r, d, o) $$;
EOF

# Fenced as ck_commit_group fences, the same in both fenced shapes: the users' advisory locks in order, then each
# user's head by one descent of (user_id, version) in table $1; nothing is written if a head is not the version the
# group continues.
fence() {
    cat << SQL
    PERFORM pg_advisory_xact_lock(k) FROM (SELECT hashtext(u) AS k FROM unnest(users) AS t(u) ORDER BY 1) l;
    SELECT count(*) INTO fenced FROM unnest(users, versions) AS c(u, v)
    LEFT JOIN LATERAL (SELECT x.version FROM $1 x WHERE x.user_id = c.u ORDER BY x.version DESC LIMIT 1) n ON true
    WHERE coalesce(n.version, 0) <> c.v - 1;
    IF fenced > 0 THEN RETURN fenced; END IF;
SQL
}
psql_ > /dev/null << EOF
CREATE FUNCTION one_row_fenced(users text[], versions bigint[], parts int[], records text[], deltas text[])
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS \$\$
DECLARE fenced int;
BEGIN
$(fence one_row_fenced)
    INSERT INTO one_row_fenced SELECT t.u, t.v, t.p, pg_current_xact_id()::text::bigint, t.o, t.r, t.d
    FROM unnest(users, versions, parts, records, deltas) WITH ORDINALITY AS t(u, v, p, r, d, o);
    RETURN 0;
END \$\$;
CREATE FUNCTION two_rows_fenced(users text[], versions bigint[], parts int[], records text[], deltas text[])
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS \$\$
DECLARE fenced int; writer bigint;
BEGIN
$(fence two_rows_changes)
    writer := pg_current_xact_id()::text::bigint;
    INSERT INTO two_rows_records SELECT t.p, writer, t.o, t.r FROM unnest(parts, records) WITH ORDINALITY AS t(p, r, o);
    INSERT INTO two_rows_changes SELECT t.u, t.v, t.d FROM unnest(users, versions, deltas) AS t(u, v, d);
    RETURN 0;
END \$\$;
EOF

# The group's arrays (pgbench variables); the versions are the transaction's number, so each group continues the
# one before it for every user.
array() { local out="" g; for g in $(seq 1 "$GROUP"); do out+="$("$@" "$g"),"; done; echo "{${out%,}}"; }
user() { printf 'user-%d' "$1"; }
part() { echo $(($1 % 16)); }
record() { printf '%0195d' "$1"; }
delta() { printf '%0113d' "$1"; }
USERS=$(array user)
PARTS=$(array part)
RECORDS=$(array record)
DELTAS=$(array delta)

master_ticks() {   # CPU ticks of the postmaster (with its ended children) and every running child
    local master total=0 pid line
    master=$(head -1 "$WORK/pg/data/postmaster.pid")
    for pid in "$master" $(pgrep -P "$master" || true); do
        line=$(sed 's/.*) //' "/proc/$pid/stat" 2> /dev/null) || continue
        read -r -a f <<< "$line"
        total=$((total + f[11] + f[12]))
        [ "$pid" = "$master" ] && total=$((total + f[13] + f[14]))
    done
    echo "$total"
}
HZ=$(getconf CLK_TCK)

measure() {   # shape: prints "<us per event> <wal bytes per event>"
    local shape=$1 w0 t0 t1 wal
    printf '\\set v :v + 1\nSELECT %s(:users::text[], array_fill(:v::bigint, ARRAY[%d]), :parts::int[], :records::text[], :deltas::text[]);\n' \
        "$shape" "$GROUP" > "$WORK/$shape.sql"
    psql_ -c "CHECKPOINT" > /dev/null
    w0=$(psql_ -c "SELECT pg_current_wal_lsn()")
    t0=$(master_ticks)
    "$PG_BIN/pgbench" -n -M prepared -h 127.0.0.1 -p "$PG_PORT" -U postgres -c 1 -t "$TRANSACTIONS" \
        -D v="$VERSION_BASE" -D users="$USERS" -D parts="$PARTS" -D records="$RECORDS" -D deltas="$DELTAS" \
        -f "$WORK/$shape.sql" floor > "$WORK/$shape.out" 2>&1 || { cat "$WORK/$shape.out" >&2; exit 1; }
    grep -q "actually processed: $TRANSACTIONS/$TRANSACTIONS" "$WORK/$shape.out" || { cat "$WORK/$shape.out" >&2; exit 1; }
    t1=$(master_ticks)
    wal=$(psql_ -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$w0')")
    awk -v t=$((t1 - t0)) -v hz="$HZ" -v e=$((GROUP * TRANSACTIONS)) -v w="$wal" \
        'BEGIN { printf "%.2f %.0f\n", t * 1e6 / hz / e, w / e }'
}

SHAPES="records_only one_row_pk one_row one_row_fenced two_rows_fenced"
declare -A CPU WAL
VERSION_BASE=0
for round in $(seq 1 "$ROUNDS"); do
    for shape in $SHAPES; do
        result=$(measure "$shape") || exit 1
        read -r cpu wal <<< "$result"
        CPU[$shape]="${CPU[$shape]:-} $cpu"
        WAL[$shape]="${WAL[$shape]:-} $wal"
    done
    VERSION_BASE=$((VERSION_BASE + TRANSACTIONS))
done
echo "group=$GROUP"
echo "transactions_per_shape_and_round=$TRANSACTIONS"
for shape in $SHAPES; do
    echo "${shape}_us_per_event=$(echo "${CPU[$shape]}" | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.1f", s / NF }')"
    echo "${shape}_us_per_event_rounds=$(echo "${CPU[$shape]}" | sed 's/^ //; s/ /,/g')"
    echo "${shape}_wal_bytes_per_event=$(echo "${WAL[$shape]}" | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.0f", s / NF }')"
done
