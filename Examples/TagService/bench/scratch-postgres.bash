# Sourced by the bench scripts: a throw-away PostgreSQL cluster in "$WORK/pg" on 127.0.0.1:"$PG_PORT", as the
# benchmarks run it (fsync on, synchronous commit). Needs PG_BIN, WORK and PG_PORT; defines PG_USER and pg (pg_ctl).
# scratch_postgres_init initialises it; append settings to "$WORK/pg/data/postgresql.auto.conf", then `pg start`.

# PostgreSQL runs as an unprivileged user (it refuses root).
PG_USER=postgres
id "$PG_USER" > /dev/null 2>&1 || PG_USER=nobody
pg() { runuser -u "$PG_USER" -- "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/server.log" -w "$@"; }

scratch_postgres_init() {
    mkdir -p "$WORK/pg"
    chown "$PG_USER" "$WORK/pg"
    runuser -u "$PG_USER" -- "$PG_BIN/initdb" -D "$WORK/pg/data" -U postgres --auth=trust -E UTF8 --no-locale > /dev/null
    cat >> "$WORK/pg/data/postgresql.auto.conf" << CONF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$WORK/pg'
fsync = on
synchronous_commit = on
shared_buffers = 256MB
CONF
}
