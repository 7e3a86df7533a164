#!/usr/bin/env bash
# `make bench-cluster`: three TagService instances over one PostgreSQL, behind nginx hashing the user id,
# delivering to the loopback /users/track stand-in — all on 127.0.0.1 — and one local-queue instance as the
# baseline, measured in the same run.
#
# Phases: (1) one instance, local queue, no PostgreSQL: single_local_events_per_s and
# single_local_service_cpu_us_per_event; (2) the cluster through nginx. A warm-up sends one event to each of
# the BENCH_USERS users (user-0 …), then two measured runs of BENCH_DURATION seconds each:
#   hot   users seen before (the warm-up's, walked with a stride): their sessions are in the owners' memory;
#   cold  the first event of users never seen (user-<BENCH_COLD_BASE> onwards, each id once): a session load
#         that finds nothing, and a first commit (a delta from the empty state).
# For each, with the suffix _hot or _cold: cluster_events_per_s, cluster_p99_ms, and per acknowledged event
#   pg_cpu_us_per_event        user + system CPU of PostgreSQL (the postmaster and its live children from
#                              /proc/<pid>/stat, plus the postmaster's cutime + cstime: children that ended)
#   pg_backend_cpu_us_per_event  the part of it spent by the instances' connections (live backends of the
#                              database); the rest is PostgreSQL's own processes: WAL writer, checkpointer,
#                              autovacuum, and whatever ended during the run
#   pg_events_per_core_s       10^6 / pg_cpu_us_per_event
#   pg_wal_bytes_per_event     pg_current_wal_lsn() after minus before
#   service_cpu_us_per_event   user + system CPU of the three TagService processes
#   events_per_commit          Δ containerkit_postgres_committed_rows_total / Δ …_commits_total (all instances'
#                              /metrics)
#   pg_round_trips_per_commit  Δ containerkit_postgres_round_trips_total / Δ commits; "unknown" when an
#                              instance does not expose the counter (an older build)
# and over both runs pg_connections_opened_per_1000_events (Δ pg_stat_database.sessions of the database; this
# script's own queries go to another database). (3) BENCH_KILLS kill -9 of a random instance under load (each
# restarted at once), then every acknowledged event id — warm-up, hot, cold and kill runs — must have reached
# the stand-in: acked_lost, redelivered_per_kill; (4) one instance removed from nginx (reload): the next event
# of 300 users (the newest ck_session_changes row of each, sampled) must continue their session:
# session_continuity; (5) a BENCH_SOAK_SECONDS soak: dead_tuples_after_soak (every store table), and the dead
# tuples of ck_session_changes and ck_cursors sampled every 30 s.
#
# Knobs (environment): BENCH_DURATION seconds of each measured run (10); BENCH_KILLS (20); BENCH_SOAK_SECONDS
# (300, 0 skips the soak); BENCH_CONNECTIONS (64) and BENCH_THREADS (2) of wrk; BENCH_USERS the hot user set
# (20000); BENCH_WARM_SECONDS the longest the warm-up may take (120); BENCH_COLD_BASE the first cold user id
# (1000000000); BENCH_PG_PORT (18590); POSTGRES_BIN; BENCH_CONFIGURATION, BENCH_BIN, TRACK_BIN (below);
# BENCH_PG_STATEMENTS=1 loads pg_stat_statements (track = all: statements inside functions too) and prints, per
# measured phase, the statements that took the most time, in µs per acknowledged event (a function's time
# includes its statements').
#
# Needs postgresql (14 or later: pg_stat_database.sessions), nginx and wrk (installed with apt-get when
# missing, as root).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${BENCH_DURATION:-10}
KILLS=${BENCH_KILLS:-20}
SOAK=${BENCH_SOAK_SECONDS:-300}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
THREADS=${BENCH_THREADS:-2}
USERS=${BENCH_USERS:-20000}
WARM_MAX=${BENCH_WARM_SECONDS:-120}
COLD_BASE=${BENCH_COLD_BASE:-1000000000}
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
kill_tree() {   # pid: its descendants first (wrk under timeout under a subshell), then itself
    local child
    for child in $(pgrep -P "$1" 2> /dev/null || true); do kill_tree "$child"; done
    kill -9 "$1" 2> /dev/null || true
}
cleanup() {
    for pid in "${PID[@]}"; do kill_tree "$pid"; done
    [ -f "$WORK/nginx/nginx.pid" ] && kill "$(cat "$WORK/nginx/nginx.pid")" 2> /dev/null || true
    pg stop -m immediate > /dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=scratch-postgres.bash
. bench/scratch-postgres.bash   # (the working directory is Examples/TagService, see above)
psql_() { "$PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U postgres -d tags -c "$1"; }
# The measurements' own queries go to the database postgres, so that they do not count as sessions of tags.
psql_stats() { "$PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "$1"; }
scratch_postgres_init
echo "max_connections = 100" >> "$WORK/pg/data/postgresql.auto.conf"
if [ -n "${BENCH_PG_STATEMENTS:-}" ]; then
    printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\n" \
        >> "$WORK/pg/data/postgresql.auto.conf"
fi
pg start > /dev/null
if [ -n "${BENCH_PG_STATEMENTS:-}" ]; then
    "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
        -c "CREATE EXTENSION pg_stat_statements" > /dev/null
fi
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

run_wrk() {   # url, seconds, run name[, first user, users, order (stride|once)] → wrk output
    CLUSTER_RUN=$3 CLUSTER_USER_BASE=${4:-0} CLUSTER_USERS=${5:-$USERS} CLUSTER_USER_ORDER=${6:-stride} \
        CLUSTER_ACK_LOG="$WORK/acked" \
        timeout $(($2 + 30)) wrk -t"$THREADS" -c"$CONNECTIONS" -d"${2}s" --timeout 10s -s bench/cluster-events.lua "$1"
}
field() { awk -F= -v k="$1" '$1 == k { print $2 }'; }
rate() { awk '/^Requests\/sec:/ { print $2 }'; }

# CPU time in clock ticks from /proc/<pid>/stat: utime + stime (fields 14, 15), with children also cutime +
# cstime (16, 17: children that ended and were waited for). Fields are counted after the ")" that ends the
# command name. A process that is gone counts 0.
proc_ticks() {   # pid[, children]
    local line fields
    line=$(cat "/proc/$1/stat" 2> /dev/null) || { echo 0; return 0; }
    read -r -a fields <<< "${line##*) }"
    if [ -n "${2:-}" ]; then
        echo $((fields[11] + fields[12] + fields[13] + fields[14]))
    else
        echo $((fields[11] + fields[12]))
    fi
}
# PostgreSQL: the postmaster with what it reaped from children that ended, plus its live children (backends,
# background and autovacuum workers). Only this run's server: other clusters of the same user are not counted.
pg_ticks() {
    local master total child
    master=$(head -1 "$WORK/pg/data/postmaster.pid")
    total=$(proc_ticks "$master" children)
    for child in $(pgrep -P "$master" || true); do total=$((total + $(proc_ticks "$child"))); done
    echo "$total"
}
# The share of the instances' connections: live backends of the database tags (their command line reads
# "postgres: <user> tags …"). The rest of pg_ticks is PostgreSQL's own processes (WAL writer, checkpointer,
# autovacuum, and children that ended, an autovacuum worker among them).
pg_backend_ticks() {
    local master total=0 child
    master=$(head -1 "$WORK/pg/data/postmaster.pid")
    for child in $(pgrep -P "$master" || true); do
        tr '\0' ' ' < "/proc/$child/cmdline" 2> /dev/null | grep -q "^postgres: [^ ]* tags " \
            && total=$((total + $(proc_ticks "$child")))
    done
    echo "$total"
}
service_ticks() {   # the cluster's three TagService processes
    echo $(($(proc_ticks "${PID[i0]}") + $(proc_ticks "${PID[i1]}") + $(proc_ticks "${PID[i2]}")))
}
TICK_US=$(awk -v t="$(getconf CLK_TCK)" 'BEGIN { print 1000000 / t }')

# (1) The baseline: one instance, local queue, no PostgreSQL, same load, same run.
"$BIN/TagService" --containers "$WORK/containers" --queue "$WORK/single-queue" --host 127.0.0.1 \
    --port "$SINGLE_PORT" --log-level error &
PID[single]=$!
wait_ready "$SINGLE_PORT" "${PID[single]}"
run_wrk "http://127.0.0.1:$SINGLE_PORT/v1/events" 2 single-warm > /dev/null
single_cpu0=$(proc_ticks "${PID[single]}")
SINGLE=$(run_wrk "http://127.0.0.1:$SINGLE_PORT/v1/events" "$DURATION" single)
single_cpu=$(($(proc_ticks "${PID[single]}") - single_cpu0))
echo "$SINGLE" >&2
single_rps=$(echo "$SINGLE" | rate)
single_ok=$(echo "$SINGLE" | field wrk_ok)
kill -TERM "${PID[single]}"
wait "${PID[single]}" || true
unset 'PID[single]'
rm -f "$WORK"/acked-*   # the baseline's acknowledgements are not the cluster's

# (2) The cluster through nginx.
for i in 0 1 2; do start_instance $i; done
for i in 0 1 2; do wait_ready "${PORTS[$i]}" "${PID[i$i]}"; done
mkdir -p "$WORK/nginx"
sed -e 's/^worker_processes auto;/worker_processes 1;/' -e "s/@LISTEN@/127.0.0.1:$NGINX_PORT/" \
    -e "s/@INSTANCE_1@/127.0.0.1:${PORTS[0]}/" -e "s/@INSTANCE_2@/127.0.0.1:${PORTS[1]}/" \
    -e "s/@INSTANCE_3@/127.0.0.1:${PORTS[2]}/" deploy/nginx-consistent-hash.conf > "$WORK/nginx/nginx.conf"
nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx"
NGINX="http://127.0.0.1:$NGINX_PORT"

# The warm-up: one event to each of the USERS users (each id once over the threads), stopped once all are
# acknowledged (wrk ends early on SIGINT), or after WARM_MAX seconds. wrk runs as the background job itself,
# so that $! is its pid.
CLUSTER_RUN=warm CLUSTER_USER_BASE=0 CLUSTER_USERS=$USERS CLUSTER_USER_ORDER=once CLUSTER_ACK_LOG="$WORK/acked" \
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${WARM_MAX}s" --timeout 10s -s bench/cluster-events.lua \
    "$NGINX/v1/events" > "$WORK/warm.out" 2>&1 &
PID[warm]=$!
warm_started=$SECONDS
while kill -0 "${PID[warm]}" 2> /dev/null; do
    [ "$(cat "$WORK"/acked-warm-* 2> /dev/null | sort -u | wc -l)" -ge "$USERS" ] && break
    sleep 0.5
done
kill -INT "${PID[warm]}" 2> /dev/null || true
wait "${PID[warm]}" || true
unset 'PID[warm]'
echo "bench-cluster: warm-up: $(cat "$WORK"/acked-warm-* 2> /dev/null | sort -u | wc -l) events acknowledged" \
    "for $USERS users in $((SECONDS - warm_started)) s" >&2

metric_sum() {   # metric name → its sum over the instances' /metrics; empty when an instance lacks it
    local port text value total=0
    for port in "${PORTS[@]}"; do
        text=$(curl -fs --max-time 5 "http://127.0.0.1:$port/metrics") || return 0
        value=$(awk -v k="$1" '$1 == k || index($1, k "{") == 1 { s += $2; found = 1 }
            END { if (found) printf "%.0f\n", s }' <<< "$text")
        [ -n "$value" ] || return 0
        total=$((total + value))
    done
    echo "$total"
}
# Sessions opened to tags so far. The statistics of a backend are flushed when it goes idle (within a
# second), so this is read 2 s after the load stops.
pg_sessions() { psql_stats "SELECT sessions FROM pg_stat_database WHERE datname = 'tags'"; }

declare -A FIGURE   # name_phase → value, printed at the end
per() {   # a, b, format → a / b, or "unknown" when either is missing or b is 0
    awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "unknown"; else printf f "\n", a / b }'
}
measure() {   # phase (hot|cold), first user, users, order
    local phase=$1 wal0 cpu0 backends0 service0 commits0 rows0 trips0 out ok commits rows trips
    wal0=$(psql_stats "SELECT pg_current_wal_lsn()")
    commits0=$(metric_sum containerkit_postgres_commits_total)
    rows0=$(metric_sum containerkit_postgres_committed_rows_total)
    trips0=$(metric_sum containerkit_postgres_round_trips_total)
    [ -z "${BENCH_PG_STATEMENTS:-}" ] || psql_stats "SELECT pg_stat_statements_reset()" > /dev/null
    cpu0=$(pg_ticks)
    backends0=$(pg_backend_ticks)
    service0=$(service_ticks)
    out=$(run_wrk "$NGINX/v1/events" "$DURATION" "$phase" "$2" "$3" "$4")
    local cpu=$(($(pg_ticks) - cpu0)) service=$(($(service_ticks) - service0))
    local backends=$(($(pg_backend_ticks) - backends0))
    local wal
    wal=$(psql_stats "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal0')")
    commits=$(metric_sum containerkit_postgres_commits_total)
    rows=$(metric_sum containerkit_postgres_committed_rows_total)
    trips=$(metric_sum containerkit_postgres_round_trips_total)
    echo "$out" >&2
    ok=$(echo "$out" | field wrk_ok)
    if [ -n "${BENCH_PG_STATEMENTS:-}" ] && [ "${ok:-0}" -gt 0 ]; then
        echo "bench-cluster: $phase: statements by time (µs per event, calls per event, rows per call, statement)" >&2
        psql_stats "SELECT round((total_exec_time * 1000 / $ok)::numeric, 2) || ' ' || round(calls::numeric / $ok, 3)
            || ' ' || round(rows::numeric / greatest(calls, 1), 1) || ' '
            || left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
            FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25" >&2
    fi
    FIGURE[events_$phase]=$ok
    FIGURE[cluster_events_per_s_$phase]=$(echo "$out" | rate)
    FIGURE[cluster_p99_ms_$phase]=$(awk -v us="$(echo "$out" | field wrk_p99_us)" 'BEGIN { printf "%.2f", us / 1000 }')
    FIGURE[pg_cpu_us_per_event_$phase]=$(per "$(awk -v t="$cpu" -v u="$TICK_US" 'BEGIN { print t * u }')" "$ok" %.1f)
    FIGURE[pg_backend_cpu_us_per_event_$phase]=$(per "$(awk -v t="$backends" -v u="$TICK_US" 'BEGIN { print t * u }')" "$ok" %.1f)
    FIGURE[pg_events_per_core_s_$phase]=$(per 1000000 "${FIGURE[pg_cpu_us_per_event_$phase]/unknown/}" %.0f)
    FIGURE[pg_wal_bytes_per_event_$phase]=$(per "$wal" "$ok" %.0f)
    FIGURE[service_cpu_us_per_event_$phase]=$(per "$(awk -v t="$service" -v u="$TICK_US" 'BEGIN { print t * u }')" "$ok" %.1f)
    local dcommits="" drows="" dtrips=""
    [ -n "$commits0" ] && [ -n "$commits" ] && dcommits=$((commits - commits0))
    [ -n "$rows0" ] && [ -n "$rows" ] && drows=$((rows - rows0))
    [ -n "$trips0" ] && [ -n "$trips" ] && dtrips=$((trips - trips0))
    FIGURE[events_per_commit_$phase]=$(per "$drows" "$dcommits" %.2f)
    FIGURE[pg_round_trips_per_commit_$phase]=$(per "$dtrips" "$dcommits" %.2f)
    # Each wrk thread numbers its own titles and logs its acknowledgements in its own file: fewer files than
    # threads means the threads sent the same titles, and every event would count as re-sent below.
    local logs
    logs=$(find "$WORK" -maxdepth 1 -name "acked-$phase-*" | wc -l)
    if [ "$logs" != "$THREADS" ]; then
        echo "bench-cluster: $logs acknowledgement logs for $THREADS wrk threads: the event titles are not unique" >&2
        exit 1
    fi
}
sleep 2
sessions0=$(pg_sessions)
measure hot 0 "$USERS" stride
measure cold "$COLD_BASE" 1000000000 once
sleep 2
sessions=$(($(pg_sessions) - sessions0))

# (3) kill -9 of a random instance under load, each restarted at once (a new process, its local disk kept
# or not: nothing of it is needed).
run_wrk "$NGINX/v1/events" $((KILLS * 3 + 5)) kills > "$WORK/kills.out" 2>&1 &
LOAD=$!
PID[load]=$LOAD
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
unset 'PID[load]'
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
    "SELECT user_id, n FROM (SELECT DISTINCT ON (user_id) user_id, body::json->>'event_number' AS n"
    " FROM ck_session_changes ORDER BY user_id, version DESC) newest ORDER BY md5(user_id) LIMIT 300"],
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
        "SELECT body::json->>'event_number' FROM ck_session_changes WHERE user_id = '%s'"
        " ORDER BY version DESC LIMIT 1" % user],
        capture_output=True, text=True, check=True).stdout.strip()
    if not again and int(after) == int(number) + 1:
        ok += 1
print("%.4f %d" % (ok / max(total, 1), total))
PYEOF
)

# Everything acknowledged must reach the stand-in: wait until no row is undelivered.
for _ in $(seq 1 600); do
    [ "$(psql_ "SELECT ck_undelivered()")" = 0 ] && break
    sleep 0.5
done
sleep 1
sort -u "$WORK"/acked-warm-* "$WORK"/acked-hot-* "$WORK"/acked-cold-* "$WORK"/acked-kills-* > "$WORK/acked.sorted"
sort "$WORK/delivered.log" > "$WORK/delivered.all"
sort -u "$WORK/delivered.all" > "$WORK/delivered.sorted"
acked_count=$(wc -l < "$WORK/acked.sorted")
acked_lost=$(comm -23 "$WORK/acked.sorted" "$WORK/delivered.sorted" | wc -l)
# Re-sent: a title of the cluster's runs that reached the stand-in more than once (every title is sent once).
cluster_titles='^ev-\(warm\|hot\|cold\|kills\)-'
duplicates=$(($(grep -c "$cluster_titles" "$WORK/delivered.all" || true) \
    - $(grep -c "$cluster_titles" "$WORK/delivered.sorted" || true)))

# (5) The soak: dead tuples of the tables whose rows die all the time (session changes: a snapshot deletes the
# user's older rows; cursors: updated in place), with their TOAST tables, sampled every 30 seconds, and of
# every store table before and after.
dead() { psql_ "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relname LIKE 'ck_%'"; }
dead_updated() {
    psql_ "SELECT coalesce(sum(s.n_dead_tup), 0) FROM pg_stat_all_tables s WHERE s.relid IN (
        SELECT oid FROM pg_class WHERE relname IN ('ck_session_changes', 'ck_cursors')
        UNION ALL SELECT reltoastrelid FROM pg_class WHERE relname IN ('ck_session_changes', 'ck_cursors'))"
}
live_rows() { psql_ "SELECT count(*) FROM ck_records"; }
dead_before=$(dead)
: > "$WORK/dead.samples"
( while sleep 30; do dead_updated >> "$WORK/dead.samples"; done ) &
SAMPLER=$!
PID[sampler]=$SAMPLER
if [ "$SOAK" -gt 0 ]; then run_wrk "$NGINX/v1/events" "$SOAK" soak > "$WORK/soak.out" 2>&1 || true; fi
kill "$SAMPLER" 2> /dev/null || true
wait "$SAMPLER" 2> /dev/null || true
unset 'PID[sampler]'
sleep 3
soak_events=$(field wrk_ok < "$WORK/soak.out" || echo 0)
dead_after=$(dead)
dead_updated_after=$(dead_updated)
session_rows=$(psql_ "SELECT count(*) FROM ck_session_changes")
session_users=$(psql_ "SELECT count(DISTINCT user_id) FROM ck_session_changes")
generations=$(psql_ "SELECT count(*) FROM pg_inherits WHERE inhparent = 'ck_records'::regclass")

for phase in hot cold; do
    for name in cluster_events_per_s cluster_p99_ms pg_cpu_us_per_event pg_events_per_core_s pg_wal_bytes_per_event \
        service_cpu_us_per_event events_per_commit pg_round_trips_per_commit pg_backend_cpu_us_per_event; do
        echo "${name}_$phase=${FIGURE[${name}_$phase]}"
    done
done
awk -v s="$sessions" -v n=$((FIGURE[events_hot] + FIGURE[events_cold])) \
    'BEGIN { printf "pg_connections_opened_per_1000_events=%.3f\n", (n > 0 ? s * 1000 / n : 0) }'
echo "single_local_events_per_s=$single_rps"
awk -v t="$single_cpu" -v u="$TICK_US" -v n="$single_ok" \
    'BEGIN { printf "single_local_service_cpu_us_per_event=%.1f\n", (n > 0 ? t * u / n : 0) }'
awk -v c="${FIGURE[cluster_events_per_s_hot]}" -v s="$single_rps" \
    'BEGIN { printf "cluster_vs_single_local=%.3f\n", c / s }'
echo "kills=$KILLS"
echo "acked_events=$acked_count"
echo "acked_lost=$acked_lost"
echo "redelivered_events=$duplicates"
awk -v d="$duplicates" -v k="$KILLS" 'BEGIN { printf "redelivered_per_kill=%.1f\n", d / k }'
echo "session_continuity=${continuity% *}"
echo "session_continuity_users=${continuity#* }"
echo "dead_tuples_before_soak=$dead_before"
echo "dead_tuples_after_soak=$dead_after"
echo "dead_tuples_session_changes_cursors_after_soak=$dead_updated_after"
echo "dead_tuples_session_changes_cursors_every_30s=$(paste -sd, "$WORK/dead.samples")"
echo "session_change_rows_after_soak=$session_rows"
echo "session_users_after_soak=$session_users"
echo "soak_seconds=$SOAK"
echo "soak_events=$soak_events"
echo "record_generations_after_soak=$generations"
echo "record_rows_after_soak=$(live_rows)"
