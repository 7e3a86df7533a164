#!/usr/bin/env bash
# `make bench-cluster`: three TagService instances over one PostgreSQL, behind nginx hashing the user id,
# delivering to the loopback /users/track stand-in — all on 127.0.0.1 — and one local-queue instance as the
# baseline, measured in the same run.
#
# Phases: (1) one instance, local queue, no PostgreSQL: single_local_events_per_s; (2) the cluster through
# nginx: cluster_events_per_s, cluster_p99_ms and the PostgreSQL costs per event (WAL bytes, CPU time of all
# its processes, rows per commit); (3) BENCH_KILLS kill -9 of a random instance under load (each restarted at
# once), then every acknowledged event id must have reached the stand-in: acked_lost, redelivered_per_kill;
# (4) one instance removed from nginx (reload): the next event of users whose owner was killed or removed
# must continue their session: session_continuity; (5) a BENCH_SOAK_SECONDS soak: dead_tuples_after_soak.
#
# Needs postgresql, nginx and wrk (installed with apt-get when missing, as root).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${BENCH_DURATION:-10}
KILLS=${BENCH_KILLS:-20}
SOAK=${BENCH_SOAK_SECONDS:-300}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
THREADS=${BENCH_THREADS:-2}
USERS=${BENCH_USERS:-20000}
NGINX_PORT=18580
PORTS=(18581 18582 18583)
SINGLE_PORT=18588
TRACK_PORT=18589
PG_PORT=${BENCH_PG_PORT:-18590}

need() {   # command, package
    command -v "$1" > /dev/null && return 0
    echo "bench-cluster: installing $2" >&2
    apt-get install -y "$2" > /dev/null 2>&1 || { apt-get update > /dev/null && apt-get install -y "$2" > /dev/null; }
}
need wrk wrk
need nginx nginx
PG_BIN=${POSTGRES_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)}
if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
    apt-get install -y postgresql > /dev/null 2>&1 || { apt-get update > /dev/null && apt-get install -y postgresql > /dev/null; }
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi

# BENCH_CONFIGURATION=debug reuses a debug build (a quick functional run; its figures are not comparable).
# BENCH_BIN=<dir> uses the TagService and users-track-stand-in binaries in that directory as they are
# (TRACK_BIN=<file> names another stand-in binary).
CONFIGURATION=${BENCH_CONFIGURATION:-release}
if [ -n "${BENCH_BIN:-}" ]; then
    BIN=$BENCH_BIN
    TRACK_BIN=${TRACK_BIN:-$BENCH_BIN/users-track-stand-in}
else
    swift build -c "$CONFIGURATION" --product TagService >&2
    # The /users/track stand-in is the root package's users-track-stand-in (the same one make bench and make soak use).
    swift build --package-path ../.. -c "$CONFIGURATION" --product users-track-stand-in >&2
    TRACK_BIN=$(swift build --package-path ../.. -c "$CONFIGURATION" --show-bin-path)/users-track-stand-in
    BIN=$(swift build -c "$CONFIGURATION" --show-bin-path)
fi

WORK=$(mktemp -d /tmp/bench-cluster-XXXXXX)
chmod 755 "$WORK"
declare -A PID
cleanup() {
    for pid in "${PID[@]}"; do kill -9 "$pid" 2> /dev/null || true; done
    [ -f "$WORK/nginx/nginx.pid" ] && kill "$(cat "$WORK/nginx/nginx.pid")" 2> /dev/null || true
    pg stop -m immediate > /dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# PostgreSQL runs as an unprivileged user (it refuses root).
PG_USER=postgres
id "$PG_USER" > /dev/null 2>&1 || PG_USER=nobody
mkdir -p "$WORK/pg"
chown "$PG_USER" "$WORK/pg"
pg() { runuser -u "$PG_USER" -- "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/server.log" -w "$@"; }
psql_() { "$PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U postgres -d tags -c "$1"; }
runuser -u "$PG_USER" -- "$PG_BIN/initdb" -D "$WORK/pg/data" -U postgres --auth=trust -E UTF8 --no-locale > /dev/null
cat >> "$WORK/pg/data/postgresql.auto.conf" << EOF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$WORK/pg'
fsync = on
synchronous_commit = on
max_connections = 100
shared_buffers = 256MB
EOF
pg start > /dev/null
"$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "CREATE DATABASE tags" > /dev/null
PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/tags"

mkdir -p "$WORK/containers"
cp Tests/TagServiceTests/Fixtures/containers/GTM-TAGSVC1.json "$WORK/containers/"

wait_ready() {   # port, pid
    for _ in $(seq 1 300); do
        kill -0 "$2" 2> /dev/null || { echo "bench-cluster: the process on port $1 exited" >&2; return 1; }
        curl -fs "http://127.0.0.1:$1/ready" > /dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "bench-cluster: port $1 is not ready" >&2
    return 1
}

"$TRACK_BIN" --port "$TRACK_PORT" --max-seconds 7200 --titles "$WORK/delivered.log" &
PID[track]=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$TRACK_PORT/stats" > /dev/null 2>&1 && break; sleep 0.1; done
export BRAZE_REST_ENDPOINT="http://127.0.0.1:$TRACK_PORT" BRAZE_REST_API_KEY=bench

start_instance() {   # index 0..2
    local port=${PORTS[$1]}
    "$BIN/TagService" --containers "$WORK/containers" --queue "$WORK/queue-$1" --host 127.0.0.1 --port "$port" \
        --postgres "$PG_URL" --instance-name "instance-$1" --log-level error >> "$WORK/instance-$1.log" 2>&1 &
    PID[i$1]=$!
}

run_wrk() {   # url, seconds, run name → wrk output
    CLUSTER_RUN=$3 CLUSTER_USERS=$USERS CLUSTER_ACK_LOG="$WORK/acked" \
        timeout $(($2 + 30)) wrk -t"$THREADS" -c"$CONNECTIONS" -d"${2}s" --timeout 10s -s bench/cluster-events.lua "$1"
}
field() { awk -F= -v k="$1" '$1 == k { print $2 }'; }
rate() { awk '/^Requests\/sec:/ { print $2 }'; }

# (1) The baseline: one instance, local queue, no PostgreSQL, same load, same run.
"$BIN/TagService" --containers "$WORK/containers" --queue "$WORK/single-queue" --host 127.0.0.1 \
    --port "$SINGLE_PORT" --log-level error &
PID[single]=$!
wait_ready "$SINGLE_PORT" "${PID[single]}"
run_wrk "http://127.0.0.1:$SINGLE_PORT/v1/events" 2 warm-single > /dev/null
SINGLE=$(run_wrk "http://127.0.0.1:$SINGLE_PORT/v1/events" "$DURATION" single)
echo "$SINGLE" >&2
single_rps=$(echo "$SINGLE" | rate)
kill -TERM "${PID[single]}"
wait "${PID[single]}" || true
unset 'PID[single]'
rm -f "$WORK"/acked-*   # the baseline's acknowledgements are not the cluster's

# (2) The cluster through nginx.
for i in 0 1 2; do start_instance $i; done
for i in 0 1 2; do wait_ready "${PORTS[$i]}" "${PID[i$i]}"; done
mkdir -p "$WORK/nginx"
sed -e 's/^worker_processes auto;/worker_processes 1;/' deploy/nginx-consistent-hash.conf > "$WORK/nginx/nginx.conf"
nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx"
NGINX="http://127.0.0.1:$NGINX_PORT"
run_wrk "$NGINX/v1/events" 2 warm > /dev/null

# PostgreSQL's CPU time: every process of its user, plus what its postmaster reaped from exited children.
pg_ticks() {
    local master
    master=$(head -1 "$WORK/pg/data/postmaster.pid")
    { for p in $(pgrep -u "$PG_USER"); do awk '{ print $14 + $15 }' "/proc/$p/stat" 2> /dev/null; done
      awk '{ print $16 + $17 }' "/proc/$master/stat"; } | awk '{ s += $1 } END { print s }'
}
metric_sum() {   # metric name → sum over the instances
    for port in "${PORTS[@]}"; do curl -fs "http://127.0.0.1:$port/metrics" || true; done \
        | awk -v k="$1" '$1 == k { s += $2 } END { printf "%.0f\n", s }'
}
TICK_MS=$(awk -v t="$(getconf CLK_TCK)" 'BEGIN { print 1000 / t }')
wal0=$(psql_ "SELECT pg_current_wal_lsn()")
cpu0=$(pg_ticks)
commits0=$(metric_sum containerkit_postgres_commits_total)
rows0=$(metric_sum containerkit_postgres_committed_rows_total)
CLUSTER=$(run_wrk "$NGINX/v1/events" "$DURATION" cluster)
echo "$CLUSTER" >&2
cpu1=$(pg_ticks)
wal=$(psql_ "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal0')")
commits=$(($(metric_sum containerkit_postgres_commits_total) - commits0))
rows=$(($(metric_sum containerkit_postgres_committed_rows_total) - rows0))
cluster_rps=$(echo "$CLUSTER" | rate)
cluster_p99=$(echo "$CLUSTER" | field wrk_p99_us)
cluster_ok=$(echo "$CLUSTER" | field wrk_ok)
# Each wrk thread numbers its own titles and logs its acknowledgements in its own file: fewer files than
# threads means the threads sent the same titles, and every event would count as re-sent below.
ack_logs=$(find "$WORK" -maxdepth 1 -name 'acked-cluster-*' | wc -l)
if [ "$ack_logs" != "$THREADS" ]; then
    echo "bench-cluster: $ack_logs acknowledgement logs for $THREADS wrk threads: the event titles are not unique" >&2
    exit 1
fi

# (3) kill -9 of a random instance under load, each restarted at once (a new process, its local disk kept
# or not: nothing of it is needed).
run_wrk "$NGINX/v1/events" $((KILLS * 3 + 5)) kills > "$WORK/kills.out" 2>&1 &
LOAD=$!
killed_ports=""
for k in $(seq 1 "$KILLS"); do
    sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 1 + (r % 150) / 100 }')"
    victim=$((RANDOM % 3))
    kill -9 "${PID[i$victim]}" 2> /dev/null || true
    wait "${PID[i$victim]}" 2> /dev/null || true
    rm -rf "$WORK/queue-$victim"   # a rescheduled container loses its disk
    start_instance "$victim"
    wait_ready "${PORTS[$victim]}" "${PID[i$victim]}"
    echo "bench-cluster: kill $k of instance $victim" >&2
done
wait "$LOAD" || true
cat "$WORK/kills.out" >&2

# (4) Session continuity: remove instance 2 from nginx; the users it owned, and users of killed instances,
# send one more event each.
sed -i -e "/127.0.0.1:${PORTS[2]}/d" "$WORK/nginx/nginx.conf"
nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" -s reload
sleep 1
continuity=$(python3 - "$NGINX" "$WORK" "$PG_URL" "$PG_BIN" << 'PYEOF'
import glob, json, subprocess, sys, urllib.request
nginx, work, url, pgbin = sys.argv[1:5]
acked = {}
for path in glob.glob(work + "/acked-kills-*") + glob.glob(work + "/acked-cluster-*"):
    for line in open(path):
        acked.setdefault(line.strip(), 0)
users = set()
# which users had acknowledged events: the body holds the user; the title encodes run-thread-counter only,
# so ask PostgreSQL for the sessions instead (every acknowledged event committed its user's session).
rows = subprocess.run([pgbin + "/psql", "-X", "-A", "-t", url, "-c",
    "SELECT user_id, (snapshot::json->>'event_number') FROM ck_sessions ORDER BY md5(user_id) LIMIT 300"],
    capture_output=True, text=True, check=True).stdout.split()
ok = total = 0
for row in rows:
    user, number = row.split("|")
    body = json.dumps({"user_id": user, "event": "played song", "parameters": {"title": "continuity"}}).encode()
    request = urllib.request.Request(nginx + "/v1/events", data=body, method="POST",
        headers={"Content-Type": "application/json", "X-User-ID": user})
    try:
        answer = json.loads(urllib.request.urlopen(request, timeout=10).read())
    except Exception as error:
        total += 1
        continue
    total += 1
    again = "first play" in json.dumps(answer.get("fired", []))
    after = subprocess.run([pgbin + "/psql", "-X", "-A", "-t", url, "-c",
        "SELECT snapshot::json->>'event_number' FROM ck_sessions WHERE user_id = '%s'" % user],
        capture_output=True, text=True, check=True).stdout.strip()
    if not again and int(after) == int(number) + 1:
        ok += 1
print("%.4f %d" % (ok / max(total, 1), total))
PYEOF
)

# Everything acknowledged must reach the stand-in: wait until no row is undelivered.
for _ in $(seq 1 600); do
    [ "$(psql_ "SELECT count(*) FROM ck_records r JOIN ck_cursors c ON c.part = r.part WHERE (r.xid, r.seq) > (c.xid, c.seq)")" = 0 ] && break
    sleep 0.5
done
sleep 1
sort -u "$WORK"/acked-cluster-* "$WORK"/acked-kills-* > "$WORK/acked.sorted"
sort "$WORK/delivered.log" > "$WORK/delivered.all"
sort -u "$WORK/delivered.all" > "$WORK/delivered.sorted"
acked_count=$(wc -l < "$WORK/acked.sorted")
acked_lost=$(comm -23 "$WORK/acked.sorted" "$WORK/delivered.sorted" | wc -l)
# Re-sent: a title of the cluster's runs that reached the stand-in more than once (every title is sent once).
duplicates=$(($(grep -c '^ev-\(cluster\|kills\)-' "$WORK/delivered.all" || true) \
    - $(grep -c '^ev-\(cluster\|kills\)-' "$WORK/delivered.sorted" || true)))

# (5) The soak: dead tuples of the tables updated in place (sessions and cursors, with their TOAST tables),
# sampled every 30 seconds, and of every store table before and after.
dead() { psql_ "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relname LIKE 'ck_%'"; }
dead_updated() {
    psql_ "SELECT coalesce(sum(s.n_dead_tup), 0) FROM pg_stat_all_tables s WHERE s.relid IN (
        SELECT oid FROM pg_class WHERE relname IN ('ck_sessions', 'ck_cursors')
        UNION ALL SELECT reltoastrelid FROM pg_class WHERE relname IN ('ck_sessions', 'ck_cursors'))"
}
live_rows() { psql_ "SELECT count(*) FROM ck_records"; }
dead_before=$(dead)
: > "$WORK/dead.samples"
( while sleep 30; do dead_updated >> "$WORK/dead.samples"; done ) &
SAMPLER=$!
if [ "$SOAK" -gt 0 ]; then run_wrk "$NGINX/v1/events" "$SOAK" soak > "$WORK/soak.out" 2>&1 || true; fi
kill "$SAMPLER" 2> /dev/null || true
sleep 3
soak_events=$(field wrk_ok < "$WORK/soak.out" || echo 0)
dead_after=$(dead)
dead_updated_after=$(dead_updated)
session_rows=$(psql_ "SELECT count(*) FROM ck_sessions")
generations=$(psql_ "SELECT count(*) FROM pg_inherits WHERE inhparent = 'ck_records'::regclass")

echo "cluster_events_per_s=$cluster_rps"
awk -v us="$cluster_p99" 'BEGIN { printf "cluster_p99_ms=%.2f\n", us / 1000 }'
echo "single_local_events_per_s=$single_rps"
awk -v c="$cluster_rps" -v s="$single_rps" 'BEGIN { printf "cluster_vs_single_local=%.3f\n", c / s }'
awk -v w="$wal" -v n="$cluster_ok" 'BEGIN { printf "pg_wal_bytes_per_event=%.0f\n", w / n }'
awk -v t=$((cpu1 - cpu0)) -v ms="$TICK_MS" -v n="$cluster_ok" 'BEGIN { printf "pg_cpu_ms_per_1000_events=%.1f\n", t * ms * 1000 / n }'
awk -v r="$rows" -v c="$commits" 'BEGIN { printf "rows_per_commit=%.1f\n", r / (c > 0 ? c : 1) }'
echo "kills=$KILLS"
echo "acked_events=$acked_count"
echo "acked_lost=$acked_lost"
echo "redelivered_events=$duplicates"
awk -v d="$duplicates" -v k="$KILLS" 'BEGIN { printf "redelivered_per_kill=%.1f\n", d / k }'
echo "session_continuity=${continuity% *}"
echo "session_continuity_users=${continuity#* }"
echo "dead_tuples_before_soak=$dead_before"
echo "dead_tuples_after_soak=$dead_after"
echo "dead_tuples_sessions_cursors_after_soak=$dead_updated_after"
echo "dead_tuples_sessions_cursors_every_30s=$(paste -sd, "$WORK/dead.samples")"
echo "session_rows_after_soak=$session_rows"
echo "soak_seconds=$SOAK"
echo "soak_events=$soak_events"
echo "record_generations_after_soak=$generations"
echo "record_rows_after_soak=$(live_rows)"
