#!/usr/bin/env bash
# Restart measurement with many saved sessions (Examples/TagService README, "Operating it").
#
# Builds TagService in release mode, starts it, gives BENCH_SESSIONS users (default 1,000,000) one event each
# through POST /v1/batch (each event's session change is committed with its records, in the queue's log), stops
# it with SIGTERM, then starts it again over the same queue directory and measures, from the exec:
#   restart_port_open_ms=          until GET /health answers
#   restart_first_restored_ms=     until POST /v1/events of a saved user is answered (the answer must show
#                                  the session restored: the once-per-load tag does not fire again)
#   restart_second_restored_ms=    the same for another saved user, right after
#   restart_new_user_ms=           until a new user's event is answered, right after
# and prints queue_bytes= (the queue directory after the first run: records delivered, the segments kept for
# their session lines), shutdown_ms= (SIGTERM to exit of the first run, with its drain).
#
# Run it on a quiet machine if you can; the figures move with the disk and its cache (the second start
# reads the files the first one just wrote, so they are usually in the page cache).
set -euo pipefail
cd "$(dirname "$0")/.."

SESSIONS=${BENCH_SESSIONS:-1000000}
PORT=${BENCH_SERVICE_PORT:-18490}

CONFIGURATION=${BENCH_CONFIGURATION:-release}   # debug: a quick look only; the figures are release figures
swift build -c "$CONFIGURATION" ${BENCH_SWIFT_FLAGS:-} --product TagService >&2
BIN=$(swift build -c "$CONFIGURATION" ${BENCH_SWIFT_FLAGS:-} --show-bin-path)

WORK=$(mktemp -d)
SERVICE_PID=""
cleanup() {
    if [ -n "$SERVICE_PID" ]; then kill "$SERVICE_PID" 2> /dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/containers"
cp Tests/TagServiceTests/Fixtures/containers/GTM-TAGSVC1.json "$WORK/containers/"

start() {
    "$BIN/TagService" --containers "$WORK/containers" --queue "$WORK/queue" \
        --host 127.0.0.1 --port "$PORT" --log-level warning --max-sessions "$SESSIONS" \
        --max-batch-events 100 &
    SERVICE_PID=$!
}

start
until curl -fs "http://127.0.0.1:$PORT/health" > /dev/null 2>&1; do sleep 0.05; done
echo "restart-sessions: creating $SESSIONS sessions" >&2
python3 - "$PORT" "$SESSIONS" << 'PY'
import http.client, json, sys
port, total = int(sys.argv[1]), int(sys.argv[2])
connection = http.client.HTTPConnection("127.0.0.1", port)
for start in range(0, total, 100):
    events = ",".join('{"user_id":"user-%d","event":"played song","parameters":{"title":"t%d"}}' % (u, u)
                      for u in range(start, min(start + 100, total)))
    connection.request("POST", "/v1/batch", '{"events":[%s]}' % events, {"Content-Type": "application/json"})
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != 200 or json.loads(body)["refused"] != 0:
        sys.exit("batch at %d refused: %s %s" % (start, answer.status, body[:300]))
PY
t0=$(date +%s%N)
kill -TERM "$SERVICE_PID"
wait "$SERVICE_PID"
SERVICE_PID=""
t1=$(date +%s%N)
echo "queue_bytes=$(du -sb "$WORK/queue" | cut -f1)"
echo "shutdown_ms=$(((t1 - t0) / 1000000))"

# The second start: the port, then a saved user's first answer, measured from the exec.
python3 - "$BIN/TagService" "$WORK" "$PORT" "$SESSIONS" << 'PY'
import http.client, json, socket, subprocess, sys, time
binary, work, port, total = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def post(user):
    connection = http.client.HTTPConnection("127.0.0.1", port)
    connection.request("POST", "/v1/events",
                       '{"user_id":"%s","event":"played song","parameters":{"title":"again"}}' % user,
                       {"Content-Type": "application/json"})
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read())
t0 = time.monotonic()
process = subprocess.Popen([binary, "--containers", work + "/containers", "--queue", work + "/queue",
                            "--host", "127.0.0.1", "--port", str(port),
                            "--log-level", "warning", "--max-sessions", str(total)])
try:
    while True:   # the port: a connection is accepted
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.002)
    print("restart_port_open_ms=%.0f" % ((time.monotonic() - t0) * 1000))
    for name, user in (("first_restored", "user-%d" % (total // 2)), ("second_restored", "user-%d" % (total // 3)),
                       ("new_user", "someone-new")):
        status, answer = post(user)
        fired = [tag["name"] for tag in answer.get("fired", [])]
        restored = fired == ["Braze - played song"]
        if status != 200 or restored != (name != "new_user"):
            sys.exit("%s: %d %s" % (user, status, fired))
        print("restart_%s_ms=%.0f" % (name, (time.monotonic() - t0) * 1000))
finally:
    process.terminate()
    process.wait()
PY
