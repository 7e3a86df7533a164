#!/usr/bin/env bash
# Load test of the example service (`make bench-service` runs it from the repository root).
#
# Builds TagService and the /users/track stand-in in release mode, starts both on 127.0.0.1, runs wrk for
# a bounded time against POST /v1/events (many distinct users, durable acknowledgement on), then against
# GET /health of the same server, then against POST /v1/batch (batches of BENCH_BATCH_SIZE events, 50 by
# default, of distinct users) — BENCH_ROUNDS times, reporting the median round — stops the service with
# SIGTERM (it drains its queue into the stand-in) and checks that every acknowledged record arrived.
#
# Prints: service_events_req_per_s=, service_p99_ms=, service_health_req_per_s=, service_vs_health=, service_rounds=,
# service_cpu_us_per_event=, service_cpu_us_per_health=, service_cpu_health_vs_event=, standin_cpu_us_per_event=,
# service_batch_size=, service_batch_events_per_s=, service_batch_p99_ms=, service_batch_vs_health=,
# service_batch_cpu_us_per_event=, service_batch_cpu_health_vs_event=,
# service_acknowledged_answers=, service_durable_records=, service_delivered_records=, service_arrival_checked_ids=,
# service_arrival_missing_ids=, service_batch_arrival_checked_ids=, service_batch_arrival_missing_ids=,
# service_all_acknowledged_arrived=yes|no.
#
# service_batch_vs_health is the batch round's events per second over the health round's requests per
# second of the same round (the same stretch of the machine's time).
#
# Arrival is checked by id: two last rounds (events-ids.lua, batch.lua with BENCH_ACK_FILE) give every event a
# unique song title and log the title of every acknowledged answer (every acknowledged item of a batch); the
# stand-in logs the title of every event it receives; after the drain each acknowledged id must be among
# them (a count of answers against records would pass with some records lost and others duplicated).
#
# The CPU figures are the service's (and the stand-in's) user + system time per answered request, read from
# /proc around each wrk run: on a shared host whose speed drifts they move far less than the rates do, and
# service_cpu_health_vs_event (health CPU ÷ event CPU) is what service_vs_health would be if the service had
# the machine to itself.
#
# BENCH_DEBUG_SIDE_BY_SIDE=1 measures what the live debug page costs instead, in two ways.
# - CPU per event, side by side: four services over the same stand-in — the page off, off again (the control),
#   the page on with nobody followed, the page on with one user followed whom the load never sends
#   (bench-followed-user) — BENCH_DEBUG_ROUNDS rounds (20) of one BENCH_DEBUG_DURATION-second (2) wrk run of
#   POST /v1/events against each, in an order turned round every round. Each service's CPU time (all threads, ns,
#   /proc/<pid>/task/*/schedstat) per answered event is divided by the off service's of the same round. Prints
#   service_cpu_us_per_event_debug_{off,off_again,on,following_other}= (medians), debug_{off_again,on,
#   following_other}_vs_off_cpu_per_event= (the median of the rounds' ratios) with _quartiles=q1,q3,
#   debug_*_vs_off_events_per_s=, debug_rounds=, debug_round_seconds=. off_again's ratio is what two identical
#   services differ by on this machine: the noise the other ratios must be read against.
# - Instructions per push (callgrind, the same count on every run however busy the machine): debug-cost-probe
#   (DebugCostProbe in TagServiceCore) starts the service in-process in each state and pushes BENCH_PROBE_BASE
#   (200), then BENCH_PROBE_BASE + BENCH_PROBE_EVENTS (1000) new users' events through its events handler; the
#   difference over BENCH_PROBE_EVENTS is one push. Prints instructions_per_event_debug_{off,on,following_other,
#   off_again}= and debug_{off_again,on,following_other}_vs_off_instructions_per_event=, debug_probe_events=.
#   Needs valgrind (skipped without it).
#
# Builds: BENCH_CONFIGURATION (release by default; debug for a quick check of the script). Prebuilt binaries skip
# the builds: BENCH_SERVICE_BIN (TagService) with BENCH_TRACK_BIN (users-track-stand-in), and BENCH_PROBE_BIN
# (debug-cost-probe) with BENCH_DEBUG_SIDE_BY_SIDE=1; BENCH_BIN is a directory holding them.
set -euo pipefail
# Paths given relative to where the script was started from, before it moves to the package.
for variable in BENCH_BIN BENCH_SERVICE_BIN BENCH_TRACK_BIN BENCH_PROBE_BIN; do
    if [ -n "${!variable:-}" ] && [ "${!variable#/}" = "${!variable}" ]; then
        export "$variable=$PWD/${!variable}"
    fi
done
cd "$(dirname "$0")/.."

DURATION=${BENCH_DURATION:-6}
ROUNDS=${BENCH_ROUNDS:-5}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
THREADS=${BENCH_THREADS:-2}
BATCH_SIZE=${BENCH_BATCH_SIZE:-50}
export BENCH_BATCH_SIZE=$BATCH_SIZE
SERVICE_PORT=${BENCH_SERVICE_PORT:-18480}
TRACK_PORT=${BENCH_TRACK_PORT:-18481}

if ! command -v wrk > /dev/null; then
    echo "installing wrk" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get install -y wrk > /dev/null 2>&1 || { $SUDO apt-get update > /dev/null && $SUDO apt-get install -y wrk > /dev/null; }
fi

CONFIGURATION=${BENCH_CONFIGURATION:-release}
if [ -n "${BENCH_BIN:-}" ]; then
    BENCH_SERVICE_BIN=${BENCH_SERVICE_BIN:-$BENCH_BIN/TagService}
    BENCH_TRACK_BIN=${BENCH_TRACK_BIN:-$BENCH_BIN/users-track-stand-in}
    BENCH_PROBE_BIN=${BENCH_PROBE_BIN:-$BENCH_BIN/debug-cost-probe}
fi
if [ -n "${BENCH_SERVICE_BIN:-}" ] && [ -n "${BENCH_TRACK_BIN:-}" ]; then
    SERVICE_BIN=$BENCH_SERVICE_BIN
    TRACK_BIN=$BENCH_TRACK_BIN
    for binary in "$SERVICE_BIN" "$TRACK_BIN"; do
        [ -x "$binary" ] || { echo "bench-service: $binary is not an executable" >&2; exit 1; }
    done
else
    # The /users/track stand-in is the root package's users-track-stand-in (the one make bench and make soak use).
    if [ -z "${BENCH_TRACK_BIN:-}" ]; then
        swift build --package-path ../.. -c "$CONFIGURATION" ${BENCH_SWIFT_FLAGS:-} --product users-track-stand-in >&2
    fi
    TRACK_BIN=${BENCH_TRACK_BIN:-$(swift build --package-path ../.. -c "$CONFIGURATION" ${BENCH_SWIFT_FLAGS:-} --show-bin-path)/users-track-stand-in}
    if [ -z "${BENCH_SERVICE_BIN:-}" ]; then
        swift build -c "$CONFIGURATION" ${BENCH_SWIFT_FLAGS:-} --product TagService >&2
    fi
    SERVICE_BIN=${BENCH_SERVICE_BIN:-$(swift build -c "$CONFIGURATION" ${BENCH_SWIFT_FLAGS:-} --show-bin-path)/TagService}
fi
PROBE_BIN=${BENCH_PROBE_BIN:-}
if [ "${BENCH_DEBUG_SIDE_BY_SIDE:-0}" = 1 ] && [ -z "$PROBE_BIN" ]; then
    swift build -c "$CONFIGURATION" ${BENCH_SWIFT_FLAGS:-} --product debug-cost-probe >&2
    PROBE_BIN=$(swift build -c "$CONFIGURATION" ${BENCH_SWIFT_FLAGS:-} --show-bin-path)/debug-cost-probe
fi
# BENCH_SERVICE_BIN alone: another build of the service, to compare two versions. BENCH_SWIFT_FLAGS passes flags to
# the builds (for example "--scratch-path .build-release", to keep the release build apart from a debug build
# running at the same time).

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/containers"
cp Tests/TagServiceTests/Fixtures/containers/GTM-TAGSVC1.json "$WORK/containers/"

wait_for() {   # url, seconds, pid of the process that must be the one answering
    for _ in $(seq 1 $(($2 * 10))); do
        if ! kill -0 "$3" 2> /dev/null; then
            echo "bench-service: the process for $1 exited (is its port already in use?)" >&2
            return 1
        fi
        if curl -fs "$1" > /dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    echo "bench-service: $1 did not answer" >&2
    return 1
}

"$TRACK_BIN" --port "$TRACK_PORT" \
    --max-seconds $((DURATION * (3 * ROUNDS + 3) + 4 * ${BENCH_DEBUG_DURATION:-2} * ${BENCH_DEBUG_ROUNDS:-20} + 120)) \
    --titles "$WORK/arrived-titles" &
TRACK_PID=$!
PIDS+=("$TRACK_PID")
wait_for "http://127.0.0.1:$TRACK_PORT/stats" 10 "$TRACK_PID"

start_service() {   # port, queue directory, extra flags… → sets STARTED_PID
    local port=$1 queue=$2
    shift 2
    BRAZE_REST_ENDPOINT="http://127.0.0.1:$TRACK_PORT" BRAZE_REST_API_KEY=bench \
        "$SERVICE_BIN" --containers "$WORK/containers" --queue "$queue" \
        --host 127.0.0.1 --port "$port" --log-level warning "$@" ${BENCH_SERVICE_FLAGS:-} &
    STARTED_PID=$!
    PIDS+=("$STARTED_PID")
    wait_for "http://127.0.0.1:$port/ready" 30 "$STARTED_PID"
}

run_wrk_on() {   # port, path, lua script, seconds → wrk output
    timeout $(($4 + 30)) wrk -t"$THREADS" -c"$CONNECTIONS" -d"${4}s" --timeout 10s -s "bench/$3" \
        "http://127.0.0.1:$1$2"
}

run_wrk() {   # path, lua script, seconds → wrk output
    run_wrk_on "$SERVICE_PORT" "$@"
}

# CPU time (user + system, in clock ticks) a process has used so far: what one request costs the service
# is read off these, which a busy neighbour on a shared host disturbs far less than it does throughput.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))

if [ "${BENCH_DEBUG_SIDE_BY_SIDE:-0}" = 1 ]; then
    # Four services over the same stand-in: the debug page off, off again (the control: what two identical
    # services differ by on this machine), on with nobody followed, on with one user followed whom the load never
    # sends. Each round runs a short event load against each, in an order that turns round from round to round;
    # the CPU time each spent per answered event (all its threads, in nanoseconds) is divided by the off service's
    # of the same round, and the median of those ratios over the rounds is reported with its quartiles.
    DEBUG_TOKEN=bench-debug-token-0123456789
    FOLLOWED_USER=bench-followed-user
    DEBUG_ROUNDS=${BENCH_DEBUG_ROUNDS:-20}
    DEBUG_DURATION=${BENCH_DEBUG_DURATION:-2}
    names=(off off_again on following_other)
    ports=("$SERVICE_PORT" $((SERVICE_PORT + 2)) $((SERVICE_PORT + 4)) $((SERVICE_PORT + 6)))
    debug_ports=("" "" $((SERVICE_PORT + 5)) $((SERVICE_PORT + 7)))
    pids=()
    for i in 0 1 2 3; do
        if [ -z "${debug_ports[$i]}" ]; then
            start_service "${ports[$i]}" "$WORK/queue-${names[$i]}"
            pids+=("$STARTED_PID")
            continue
        fi
        start_service "${ports[$i]}" "$WORK/queue-${names[$i]}" --debug-token "$DEBUG_TOKEN" \
            --debug-port "${debug_ports[$i]}"
        pids+=("$STARTED_PID")
        wait_for_debug=0
        for _ in $(seq 1 100); do
            if curl -fs -o /dev/null -H "Authorization: Bearer $DEBUG_TOKEN" \
                "http://127.0.0.1:${debug_ports[$i]}/debug"; then wait_for_debug=1; break; fi
            sleep 0.1
        done
        [ "$wait_for_debug" = 1 ] || { echo "bench-service: the debug page on ${debug_ports[$i]} did not answer" >&2; exit 1; }
    done
    # Following starts with a request for the user's page (and lasts its grace period, 10 minutes by default).
    curl -fs -o /dev/null -H "Authorization: Bearer $DEBUG_TOKEN" \
        "http://127.0.0.1:${debug_ports[3]}/debug/users/$FOLLOWED_USER"
    curl -fs -H "Authorization: Bearer $DEBUG_TOKEN" "http://127.0.0.1:${debug_ports[3]}/debug" \
        | grep -q "/debug/users/$FOLLOWED_USER" \
        || { echo "bench-service: $FOLLOWED_USER is not followed" >&2; exit 1; }
    # CPU time of all of a process's threads so far, in nanoseconds (the scheduler's own count: no 10 ms ticks).
    cpu_ns() { cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
    for i in 0 1 2 3; do run_wrk_on "${ports[$i]}" /v1/events events.lua 2 > /dev/null; done   # warm-up
    SIDE_FILE="$WORK/side-by-side"
    for round in $(seq 1 "$DEBUG_ROUNDS"); do
        # Turned round: each service leads, follows and closes equally often (a round's first run meets a machine
        # the previous round's last run left).
        order=()
        for k in 0 1 2 3; do order+=($(((k + round) % 4))); done
        if [ $(((round / 4) % 2)) = 1 ]; then order=("${order[3]}" "${order[2]}" "${order[1]}" "${order[0]}"); fi
        us=() rps=()
        for i in "${order[@]}"; do
            c0=$(cpu_ns "${pids[$i]}")
            OUT=$(run_wrk_on "${ports[$i]}" /v1/events events.lua "$DEBUG_DURATION")
            c1=$(cpu_ns "${pids[$i]}")
            ok=$(echo "$OUT" | awk -F= '/^wrk_ok=/ { print $2 }')
            rps[$i]=$(echo "$OUT" | awk '/^Requests\/sec:/ { print $2 }')
            us[$i]=$(awk -v c=$((c1 - c0)) -v n="$ok" 'BEGIN { printf "%.3f", (n > 0 ? c / 1000 / n : 0) }')
        done
        echo "bench-service: round $round (order ${order[*]}): service CPU us/event off ${us[0]}, off again ${us[1]}," \
            "on ${us[2]}, following another ${us[3]}; events/s ${rps[0]} ${rps[1]} ${rps[2]} ${rps[3]}" >&2
        echo "${us[0]} ${us[1]} ${us[2]} ${us[3]} ${rps[0]} ${rps[1]} ${rps[2]} ${rps[3]}" >> "$SIDE_FILE"
    done
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
    quantile() {   # awk expression over a round's columns, quantile (0.25, 0.5, 0.75) → that quantile over the rounds
        awk "{ print $1 }" "$SIDE_FILE" | sort -g | awk -v q="$2" '{ v[NR] = $1 } END {
            p = 1 + q * (NR - 1); i = int(p); f = p - i; printf "%.3f", (i < NR ? v[i] + f * (v[i + 1] - v[i]) : v[i]) }'
    }
    for i in 0 1 2 3; do
        echo "service_cpu_us_per_event_debug_${names[$i]}=$(quantile "\$$((i + 1))" 0.5)"
    done
    # Ratios per round (the same stretch of the machine's time), then their median and quartiles.
    for i in 1 2 3; do
        ratio="(\$1 > 0 ? \$$((i + 1)) / \$1 : 0)"
        echo "debug_${names[$i]}_vs_off_cpu_per_event=$(quantile "$ratio" 0.5)"
        echo "debug_${names[$i]}_vs_off_cpu_per_event_quartiles=$(quantile "$ratio" 0.25),$(quantile "$ratio" 0.75)"
    done
    for i in 1 2 3; do
        ratio="(\$5 > 0 ? \$$((i + 5)) / \$5 : 0)"
        echo "debug_${names[$i]}_vs_off_events_per_s=$(quantile "$ratio" 0.5)"
    done
    echo "debug_rounds=$DEBUG_ROUNDS"
    echo "debug_round_seconds=$DEBUG_DURATION"

    # The same three states counted in instructions (callgrind: the same count on every run, however busy the
    # machine): debug-cost-probe pushes PROBE_BASE, then PROBE_BASE + PROBE_EVENTS new users' events through the
    # service's events handler in-process (DebugCostProbe); the difference over PROBE_EVENTS is one push's count.
    if ! command -v valgrind > /dev/null; then
        echo "bench-service: valgrind is not installed: no instruction counts" >&2
        exit 0
    fi
    PROBE_BASE=${BENCH_PROBE_BASE:-200}
    PROBE_EVENTS=${BENCH_PROBE_EVENTS:-1000}
    cc -shared -fPIC -O2 -o "$WORK/shim.so" ../../Scripts/valgrind-sigsuspend-shim.c
    # valgrind 3.19 cannot read the DWARF 5 debug information of a release build: a copy without it (the symbols
    # stay, for callgrind_annotate).
    strip -g -o "$WORK/debug-cost-probe" "$PROBE_BIN"
    probe_count() {   # mode, events → instructions collected
        rm -rf "$WORK/probe"
        mkdir -p "$WORK/probe"
        env LD_PRELOAD="$WORK/shim.so" SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind \
            --callgrind-out-file="$WORK/probe.$1.$2.out" "$WORK/debug-cost-probe" "$1" "$2" "$WORK/containers" "$WORK/probe" \
            2> "$WORK/probe.log" > "$WORK/probe.stdout" \
            || { cat "$WORK/probe.log" "$WORK/probe.stdout" >&2; echo "bench-service: debug-cost-probe $1 $2 failed" >&2; exit 1; }
        sed -n 's/.*Collected : //p' "$WORK/probe.log"
    }
    # The debug page's own code in a profile: the inclusive instructions of what a push calls into it (the tracing
    # question, the overview's count of each runtime event, the delivery note, a trace's record, and the copies of
    # the observer that carries the overview), none of which calls another.
    debug_instructions() {   # callgrind file → instructions
        callgrind_annotate --inclusive=yes --threshold=100 "$1" 2> /dev/null | awk '/\?\?\?:/ &&
            /\$s14TagServiceCore(8DebugHubC7tracing6userID7headers|13DebugOverviewC5countyy|8DebugHubC12noteDelivery|8DebugHubC6record|20DebugRuntimeObserverVw)/ {
            gsub(",", "", $1); s += $1 } END { printf "%.0f", s }'
    }
    # off_again: the off count once more, to show how far the whole process's count repeats.
    for mode in off on following_other off_again; do
        base=$(probe_count "${mode%_again}" "$PROBE_BASE")
        total=$(probe_count "${mode%_again}" $((PROBE_BASE + PROBE_EVENTS)))
        per_event=$(((total - base) / PROBE_EVENTS))
        declare "instructions_$mode=$per_event"
        echo "bench-service: debug-cost-probe $mode: $base, $total instructions: $per_event per push" >&2
        echo "instructions_per_event_debug_$mode=$per_event"
        if [ "$mode" = on ] || [ "$mode" = following_other ]; then
            d0=$(debug_instructions "$WORK/probe.$mode.$PROBE_BASE.out")
            d1=$(debug_instructions "$WORK/probe.$mode.$((PROBE_BASE + PROBE_EVENTS)).out")
            declare "debug_$mode=$(((d1 - d0) / PROBE_EVENTS))"
        fi
    done
    # The whole process's count: its timing-dependent part (waits for durability, delivery batches) moves it by a
    # few per cent between identical runs (off_again).
    for mode in off_again on following_other; do
        value="instructions_$mode"
        awk -v a="${!value}" -v b="$instructions_off" -v m="$mode" \
            'BEGIN { printf "debug_%s_vs_off_instructions_per_event=%.4f\n", m, a / b }'
    done
    # The debug code's own instructions per push (exact), over a push's instructions with the page off.
    for mode in on following_other; do
        value="debug_$mode"
        echo "debug_${mode}_instructions_per_push=${!value}"
        awk -v d="${!value}" -v b="$instructions_off" -v m="$mode" \
            'BEGIN { printf "debug_%s_vs_off_instructions_attributed=%.4f\n", m, (b + d) / b }'
    done
    echo "debug_probe_events=$PROBE_EVENTS"
    exit 0
fi

start_service "$SERVICE_PORT" "$WORK/queue"
SERVICE_PID=$STARTED_PID

WARMUP=$(run_wrk /v1/events events.lua 2)    # warm-up: code paths, sessions, allocator
BATCH_WARMUP=$(run_wrk /v1/batch batch.lua 2)

# BENCH_ROUNDS rounds of events then health, back to back: the ratio of each round is taken over the same
# stretch of the machine's (shared, noisy) time, and the median round is reported.
acknowledged=$(echo "$WARMUP" | awk -F= '/^wrk_ok=/ { print $2 }')
acknowledged=$((acknowledged + BATCH_SIZE * $(echo "$BATCH_WARMUP" | awk -F= '/^wrk_ok=/ { print $2 }')))
event_errors=0
ROUNDS_FILE="$WORK/rounds"
CPU_FILE="$WORK/cpu"
BATCH_FILE="$WORK/batch-rounds"
for round in $(seq 1 "$ROUNDS"); do
    s0=$(cpu_ticks "$SERVICE_PID"); t0=$(cpu_ticks "$TRACK_PID")
    EVENTS=$(run_wrk /v1/events events.lua "$DURATION")
    s1=$(cpu_ticks "$SERVICE_PID"); t1=$(cpu_ticks "$TRACK_PID")
    HEALTH=$(run_wrk /health health.lua "$DURATION")
    s2=$(cpu_ticks "$SERVICE_PID")
    BATCH=$(run_wrk /v1/batch batch.lua "$DURATION")
    s3=$(cpu_ticks "$SERVICE_PID")
    echo "$EVENTS" >&2
    echo "$HEALTH" >&2
    echo "$BATCH" >&2
    e=$(echo "$EVENTS" | awk '/^Requests\/sec:/ { print $2 }')
    h=$(echo "$HEALTH" | awk '/^Requests\/sec:/ { print $2 }')
    p=$(echo "$EVENTS" | awk -F= '/^wrk_p99_us=/ { print $2 }')
    ok=$(echo "$EVENTS" | awk -F= '/^wrk_ok=/ { print $2 }')
    acknowledged=$((acknowledged + ok))
    event_errors=$((event_errors + $(echo "$EVENTS" | awk -F= '/^wrk_errors=/ { print $2 }')))
    awk -v e="$e" -v h="$h" -v p="$p" -v r="$round" \
        'BEGIN { printf "%.4f %s %s %s\n", e / h, e, h, p; printf "bench-service: round %d: events %s/s, health %s/s, ratio %.3f\n", r, e, h, e / h > "/dev/stderr" }' \
        >> "$ROUNDS_FILE"
    # Service CPU per answered request (events, health) and stand-in CPU per event, in microseconds.
    awk -v se=$((s1 - s0)) -v sh=$((s2 - s1)) -v te=$((t1 - t0)) -v ne="$ok" -v e="$e" -v h="$h" -v d="$DURATION" \
        -v us="$TICK_US" -v r="$round" \
        'BEGIN { ce = se * us / ne; ch = sh * us / (h * d); printf "%.4f %.1f %.1f %.1f\n", ch / ce, ce, ch, te * us / ne;
                 printf "bench-service: round %d: service CPU %.1f us/event, %.1f us/health, ratio %.3f\n", r, ce, ch, ch / ce > "/dev/stderr" }' \
        >> "$CPU_FILE"
    # The batch round: events per second (batches × size) over this round's health rate; CPU per event.
    b=$(echo "$BATCH" | awk '/^Requests\/sec:/ { print $2 }')
    bok=$(echo "$BATCH" | awk -F= '/^wrk_ok=/ { print $2 }')
    bp=$(echo "$BATCH" | awk -F= '/^wrk_p99_us=/ { print $2 }')
    acknowledged=$((acknowledged + BATCH_SIZE * bok))
    event_errors=$((event_errors + $(echo "$BATCH" | awk -F= '/^wrk_errors=/ { print $2 }')))
    awk -v b="$b" -v n="$BATCH_SIZE" -v h="$h" -v p="$bp" -v sb=$((s3 - s2)) -v sh=$((s2 - s1)) -v bok="$bok" \
        -v d="$DURATION" -v us="$TICK_US" -v r="$round" \
        'BEGIN { be = b * n; cb = sb * us / (bok * n); ch = sh * us / (h * d);
                 printf "%.4f %.1f %s %.1f %.4f\n", be / h, be, p, cb, ch / cb;
                 printf "bench-service: round %d: batch events %.0f/s, health %s/s, ratio %.3f, CPU %.1f us/event\n", r, be, h, be / h, cb > "/dev/stderr" }' \
        >> "$BATCH_FILE"
done
# The median round (by ratio): its events and health rates and its p99; the same for the CPU figures.
read -r ratio events_rps health_rps p99_us < <(sort -n "$ROUNDS_FILE" | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)')
read -r cpu_ratio cpu_event_us cpu_health_us standin_event_us < <(sort -n "$CPU_FILE" | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)')
read -r batch_ratio batch_eps batch_p99_us batch_cpu_us batch_cpu_ratio < <(sort -n "$BATCH_FILE" | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)')

# The arrival round: unique ids, each acknowledged one logged.
BENCH_ACK_FILE="$WORK/acknowledged" run_wrk /v1/events events-ids.lua "$DURATION" > /dev/null
BENCH_ACK_FILE="$WORK/batch-acknowledged" run_wrk /v1/batch batch.lua "$DURATION" > /dev/null

sleep 1   # requests wrk gave up on at its deadline finish
durable=$(curl -fs "http://127.0.0.1:$SERVICE_PORT/metrics" | awk '/^tagservice_records_durable_total / { print $2 }')

kill -TERM "$SERVICE_PID"
service_exit=0
wait "$SERVICE_PID" || service_exit=$?
delivered=$(curl -fs "http://127.0.0.1:$TRACK_PORT/stats" | sed -E 's/.*"objects":([0-9]+).*/\1/')

# Every record made durable — which includes every acknowledged one — must have reached the stand-in
# after the service drained its queue at SIGTERM.
durable=${durable%.*}
cat "$WORK"/acknowledged-* 2> /dev/null | sort -u > "$WORK/acknowledged-ids"
sort -u "$WORK/arrived-titles" > "$WORK/arrived-ids"
checked=$(wc -l < "$WORK/acknowledged-ids")
missing=$(comm -23 "$WORK/acknowledged-ids" "$WORK/arrived-ids" | wc -l)
cat "$WORK"/batch-acknowledged-* 2> /dev/null | sort -u > "$WORK/batch-acknowledged-ids"
batch_checked=$(wc -l < "$WORK/batch-acknowledged-ids")
batch_missing=$(comm -23 "$WORK/batch-acknowledged-ids" "$WORK/arrived-ids" | wc -l)
arrived=no
if [ "$service_exit" = 0 ] && [ "${durable:-0}" -ge "$acknowledged" ] && [ "$acknowledged" -gt 0 ] \
    && [ "${delivered:-0}" -ge "${durable:-0}" ] && [ "$checked" -gt 0 ] && [ "$missing" = 0 ] \
    && [ "$batch_checked" -gt 0 ] && [ "$batch_missing" = 0 ]; then arrived=yes; fi

echo "service_events_req_per_s=$events_rps"
awk -v us="$p99_us" 'BEGIN { printf "service_p99_ms=%.2f\n", us / 1000 }'
echo "service_health_req_per_s=$health_rps"
printf "service_vs_health=%.3f\n" "$ratio"
echo "service_cpu_us_per_event=$cpu_event_us"
echo "service_cpu_us_per_health=$cpu_health_us"
printf "service_cpu_health_vs_event=%.3f\n" "$cpu_ratio"
echo "standin_cpu_us_per_event=$standin_event_us"
echo "service_batch_size=$BATCH_SIZE"
echo "service_batch_events_per_s=$batch_eps"
awk -v us="$batch_p99_us" 'BEGIN { printf "service_batch_p99_ms=%.2f\n", us / 1000 }'
printf "service_batch_vs_health=%.3f\n" "$batch_ratio"
echo "service_batch_cpu_us_per_event=$batch_cpu_us"
printf "service_batch_cpu_health_vs_event=%.3f\n" "$batch_cpu_ratio"
echo "service_rounds=$ROUNDS"
echo "service_event_errors=$event_errors"
echo "service_acknowledged_answers=$acknowledged"
echo "service_durable_records=$durable"
echo "service_delivered_records=$delivered"
echo "service_exit_code=$service_exit"
echo "service_arrival_checked_ids=$checked"
echo "service_arrival_missing_ids=$missing"
echo "service_batch_arrival_checked_ids=$batch_checked"
echo "service_batch_arrival_missing_ids=$batch_missing"
echo "service_all_acknowledged_arrived=$arrived"
