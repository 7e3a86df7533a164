import ContainerKit
import ContainerKitBraze
import Foundation

/// Everything the service needs to start: read from command-line flags, with environment variables as
/// fallbacks (a flag wins over its variable).
public struct TagServiceConfiguration: Sendable {
    /// The directory of container files (`<ID>.json` or `<ID>.plist`); with ``openIDs``, the bundled defaults.
    public var containersDirectory: String
    /// The durable queue's directory (one per instance).
    public var queueDirectory: String
    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port to listen on; 0 picks a free one.
    public var port = 8080
    /// `--sessions`: the sessions directory of an earlier version (its `FileSessionPersistence` files), imported
    /// into the queue once at start (``LegacySessionImport``); `nil`: nothing to import. Sessions live in the
    /// queue directory, each push's change committed with its records, whether or not this is set.
    public var sessionsDirectory: String?
    /// How often the session store writes what no push commits: snapshots of sessions evicted for capacity and
    /// the removals of ended ones.
    public var sessionSaveInterval: Duration = .seconds(1)
    /// Braze's REST endpoint (`BRAZE_REST_ENDPOINT`); `nil`: records go to ``recordsFile``.
    public var brazeEndpoint: URL?
    /// Braze's REST API key (`BRAZE_REST_API_KEY`).
    public var brazeAPIKey: String?
    /// `--braze-user`: how a new session gets its Braze user.
    public var brazeUser: BrazeUser = .userID
    /// `--braze-alias-label`: with a label, a session without a Braze user sends its Braze records at once for
    /// the user alias `{alias_name: <user_id>, alias_label: <label>}` instead of holding them
    /// (``BrazeTagProvider/WithoutUser/alias(label:)``); the push that names its `external_id` identifies the
    /// alias (`/users/identify`). `nil` (the default): they are held pending.
    public var brazeAliasLabel: String?
    /// `--braze-pending-records`: the most records of Braze tags a session without a Braze user holds
    /// (``BrazeTagProvider/Configuration/maximumPendingRecords``); past it the oldest are dropped.
    public var brazePendingRecords = 100
    /// `--braze-pending-age`: the longest such a record waits (``BrazeTagProvider/Configuration/maximumPendingAge``).
    public var brazePendingAge: Duration = .seconds(24 * 60 * 60)
    /// `--braze-pending-bytes`: the most bytes of records such a session holds
    /// (``BrazeTagProvider/Configuration/maximumPendingBytes``); past it the oldest are dropped.
    public var brazePendingBytes = 64 * 1024
    /// `--event-id-window` and `--event-id-count`: how long and how many `message_id`s each session remembers
    /// (``TagManager/eventIDs``); a retry whose ID is remembered is answered as a duplicate, not pushed again.
    public var eventIDWindow = EventIDWindow()
    /// Whether `POST /v1/events` answers only once the push's records are durable.
    public var waitsForDurability = true
    /// How long the durable queue lets a partial batch of records wait for more before delivering it
    /// (``DeliverySettings/linger``): fewer, fuller requests to Braze.
    public var deliveryLinger: Duration = .milliseconds(200)
    /// How many batches of records may be on their way to Braze at once
    /// (``DeliverySettings/maximumConcurrentDeliveries``). Braze
    /// is tens of milliseconds away: one request at a time would cap delivery at a few thousand records a
    /// second, below what one instance takes in. A crash re-delivers at most this many batches.
    public var concurrentDeliveries = 4
    /// How long the durable queue's writer lets records gather after each commit while requests keep
    /// coming (``SegmentRecordStore/Options/commitDelay``): fewer `fsync`s per request under load, at most
    /// that much more time before an answer.
    public var commitDelay: Duration = .milliseconds(1)
    /// How long ``TagManager/open(id:openType:timeout:callback:)`` waits for each `--open` container at
    /// start before the service starts anyway (`/ready` answers 503 until the container is live).
    public var openTimeout: Duration = .seconds(2)
    /// The largest request body accepted, in bytes.
    public var maximumBodyBytes = 64 * 1024
    /// The most events in one `POST /v1/batch` (Braze's `/users/track` takes 75 of each kind, Segment's
    /// batch about 500 KB).
    public var maximumBatchEvents = 100
    /// The largest `POST /v1/batch` body, in bytes.
    public var maximumBatchBytes = 1024 * 1024
    /// A connection with nothing read for this long is closed: an idle keep-alive connection, and a client
    /// that has not finished sending a request's headers (a slowloris) within this time of connecting or of
    /// its previous request.
    public var idleTimeout: Duration = .seconds(30)
    /// A request must be read whole — headers and body — within this time of its first byte; past it the
    /// request is answered 408 and its connection closed (``BoundedHTTP1Channel``). The idle timeout alone does
    /// not bound a body sent a byte at a time.
    public var requestTimeout: Duration = .seconds(30)
    /// How long a graceful shutdown waits for the requests in flight once the server stopped accepting: after
    /// it they are cut (not acknowledged: 503, or the connection closed) and the shutdown goes on (sessions
    /// saved, records committed and drained). If the whole shutdown still takes 15 s more than this, the
    /// services are cancelled (what is durable stays durable).
    public var shutdownTimeout: Duration = .seconds(15)
    /// The most connections open at once; more wait in the listen backlog until one closes. Keep it well
    /// below the process's descriptor limit (`ulimit -n`): the queue, the sessions and the Braze client
    /// need descriptors too.
    public var maximumConnections = 512
    /// How often the containers directory is checked for changed files, in seconds.
    public var reloadInterval: Duration = .seconds(2)
    /// Container IDs to open with ``TagManager/open(id:openType:timeout:callback:)`` instead of loading every
    /// file of ``containersDirectory``.
    public var openIDs: [String] = []
    /// The base URL containers are fetched from when opening (``HTTPContainerSource``).
    public var containerURL: URL?
    /// Where opened containers are saved (``SavedContainerStore``); by default `<queue>.containers`.
    public var savedContainersDirectory: String?
    /// The level of the service's log.
    public var logLevel = "info"
    /// Sessions idle this long are evicted (and their memory released).
    public var sessionIdleTimeout: Duration = .seconds(30 * 60)
    /// The most sessions kept at once; the least recently used goes first.
    public var maximumSessions = 100_000
    /// The most bytes one user's data layer may hold (``TagManager/maximumDataLayerBytes``): a push past it is
    /// refused with 413 `session_too_large`.
    public var maximumSessionBytes = TagManager.defaultMaximumDataLayerBytes
    /// `--postgres <url>` (`CONTAINERKIT_POSTGRES_URL`): records and sessions in PostgreSQL, shared by every
    /// instance that names the same database (Docs/Scaling.md); `nil`: records and sessions in the local queue.
    public var postgresURL: String?
    /// This instance's name in PostgreSQL's activity view and the delivery log (host:port by default).
    public var instanceName = ProcessInfo.processInfo.hostName
    /// Delivery partitions when this instance creates the PostgreSQL tables.
    public var postgresPartitions = 16
    /// `--postgres-timeout`: the deadline of every PostgreSQL call (a commit, a session load, a health check);
    /// the connections' `statement_timeout` and `lock_timeout` are four fifths of it. A request whose commit
    /// passes it is answered 503 `postgres_timeout` and `/ready` turns false until a call succeeds again
    /// (``PostgresRecordStore/Configuration/callTimeout``, 5 s by default).
    public var postgresCallTimeout: Duration = .seconds(5)
    /// Braze requests per second for the whole cluster (the limit of the API key), shared by the instances
    /// in `--postgres` mode; `nil`: no limit.
    public var brazeRequestsPerSecond: Double?
    /// `--braze-objects-per-request`: the most objects one `/users/track` request carries
    /// (``BrazeUsersTrackDestination/ObjectLimit``; 75 in all by default, `75-each` for Braze's legacy rate limits).
    public var brazeObjectLimit: BrazeUsersTrackDestination.ObjectLimit = .total(75)
    /// The write keys a request that pushes events must present (``WriteKeys``: HTTP Basic with the key as the
    /// user name, or a Bearer token); several for rotation. Empty: anyone who reaches the port may push — the
    /// service warns at start, and the port must stay private.
    public var writeKeys: [String] = []
    /// The token `GET /metrics` must present as `Authorization: Bearer <token>`; `nil`: `/metrics` is open
    /// like `/health` and `/ready`.
    public var metricsToken: String?
    /// `--debug-token` and its companions: the live debug page, off by default.
    public var debug = DebugSettings()

    /// How a new session gets its Braze user.
    public enum BrazeUser: String, Sendable, Hashable {
        /// The request's `user_id` is the session's Braze `external_id` from its first push (the default).
        case userID = "user-id"
        /// The `user_id` only keys the session (a device or anonymous ID): the session has no Braze user until
        /// a `changeUser` tag names one, and its Braze tags' records wait pending in the session until then.
        case none
    }

    /// The Braze provider's configuration: what a session without a Braze user holds, and for how long.
    public var brazeProviderConfiguration: BrazeTagProvider.Configuration {
        BrazeTagProvider.Configuration(
            withoutUser: brazeAliasLabel.map { .alias(label: $0) } ?? .hold,
            maximumPendingRecords: brazePendingRecords,
            maximumPendingBytes: brazePendingBytes,
            maximumPendingAge: brazePendingAge,
            // `--braze-user user-id`: the provider names a session's user by its user_id where it reads the user
            // anyway (no `setUser` before each push, which read it once more per event).
            sessionIDIsExternalID: brazeUser == .userID
        )
    }

    /// Creates a configuration with the two required directories.
    public init(containersDirectory: String, queueDirectory: String) {
        self.containersDirectory = containersDirectory
        self.queueDirectory = queueDirectory
    }

    /// The JSON-lines file records go to when no Braze endpoint is configured: beside the queue directory.
    public var recordsFile: String {
        var queue = queueDirectory
        while queue.count > 1 && queue.hasSuffix("/") { queue.removeLast() }
        return queue + ".jsonl"
    }
}

extension Duration {
    /// The duration in whole nanoseconds.
    var nanosecondCount: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// A command line the service cannot start with (exit code 64).
public struct UsageError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, in words.
    public var description: String
    init(_ description: String) { self.description = description }
}

extension TagServiceConfiguration {
    /// The text of `--help`.
    public static let help = """
        usage: TagService --containers <dir> --queue <dir> [options]

        Runs ContainerKit containers for many users behind an HTTP API and delivers the Braze records their
        tags make through a durable queue.

        options (each with its environment variable; a flag wins):
          --containers <dir>        container files, <ID>.json or <ID>.plist; reloaded when a file changes
                                    (TAGSERVICE_CONTAINERS)
          --queue <dir>             durable queue directory, one per instance (TAGSERVICE_QUEUE)
          --host <address>          listen address, default 127.0.0.1 (TAGSERVICE_HOST)
          --port <n>                listen port, default 8080; 0 picks one (TAGSERVICE_PORT)
          --sessions <dir>          the sessions directory of an earlier version: its files are imported into
                                    the queue once, at the first start (a marker file then says so); sessions
                                    live in the queue directory either way (TAGSERVICE_SESSIONS)
          --session-save-interval <s>
                                    seconds between writes of snapshots of sessions evicted for capacity and
                                    removals of ended ones, default 1; each event's session change is
                                    committed with its records (TAGSERVICE_SESSION_SAVE_INTERVAL)
          --no-durable-wait         answer POST /v1/events and /v1/batch without waiting until their records
                                    are durable (TAGSERVICE_NO_DURABLE_WAIT=1)
          --delivery-linger <s>     seconds a partial batch of records waits for more before it is sent to
                                    Braze, default 0.2; 0 sends at once (TAGSERVICE_DELIVERY_LINGER)
          --commit-delay <s>        seconds the queue lets records gather after each commit while requests
                                    keep coming, default 0.001 (0.02 with --postgres); 0 commits at once
                                    (TAGSERVICE_COMMIT_DELAY)
          --concurrent-deliveries <n>
                                    batches of records on their way to Braze at once, default 4; a crash
                                    re-delivers at most this many (TAGSERVICE_CONCURRENT_DELIVERIES)
          --max-body-bytes <n>      largest request body, default 65536 (TAGSERVICE_MAX_BODY_BYTES)
          --max-batch-events <n>    most events in one POST /v1/batch, default 100
                                    (TAGSERVICE_MAX_BATCH_EVENTS)
          --max-batch-bytes <n>     largest POST /v1/batch body, default 1048576 (TAGSERVICE_MAX_BATCH_BYTES)
          --idle-timeout <s>        close a connection that sent nothing for this long, also one that has
                                    not finished its request headers, default 30 (TAGSERVICE_IDLE_TIMEOUT)
          --request-timeout <s>     a request must arrive whole (headers and body) within this time of its
                                    first byte, else 408 and the connection is closed; default 30
                                    (TAGSERVICE_REQUEST_TIMEOUT)
          --shutdown-timeout <s>    on SIGTERM, wait this long for requests in flight, then cut them (not
                                    acknowledged) and finish the shutdown; default 15
                                    (TAGSERVICE_SHUTDOWN_TIMEOUT)
          --max-connections <n>     most connections at once, default 512; keep it well below ulimit -n
                                    (TAGSERVICE_MAX_CONNECTIONS)
          --reload-interval <s>     seconds between checks of the containers directory, default 2
                                    (TAGSERVICE_RELOAD_INTERVAL); SIGHUP checks it at once
          --open <GTM-ID>           open this container (repeatable; comma-separated in the variable) instead
                                    of loading every file: bundled default from --containers, saved copy,
                                    then the network, refreshed every 12 hours and on SIGHUP (TAGSERVICE_OPEN)
          --open-timeout <s>        seconds to wait for each --open container at start, default 2
                                    (TAGSERVICE_OPEN_TIMEOUT)
          --container-url <url>     base URL containers are fetched from with --open, {base}/r?id=<ID>
                                    (TAGSERVICE_CONTAINER_URL)
          --saved-containers <dir>  where opened containers are saved, default <queue>.containers
                                    (TAGSERVICE_SAVED_CONTAINERS)
          --session-idle <s>        evict sessions idle this long, default 1800 (TAGSERVICE_SESSION_IDLE)
          --max-sessions <n>        most sessions kept, least recently used evicted first, default 100000
                                    (TAGSERVICE_MAX_SESSIONS)
          --max-session-bytes <n>   most bytes one user's data layer may hold; a push past it gets 413
                                    session_too_large; default 4194304 (TAGSERVICE_MAX_SESSION_BYTES)
          --log-level <level>       trace, debug, info, notice, warning, error, critical; default info
                                    (TAGSERVICE_LOG_LEVEL)
          --postgres <url>          records and sessions in PostgreSQL, postgres://user@host:port/db, shared
                                    by every instance (CONTAINERKIT_POSTGRES_URL); TLS as libpq's ?sslmode=
                                    (prefer by default; verify-full&sslrootcert=<ca.pem> across networks;
                                    sslcert=<crt.pem>&sslkey=<key.pem> where the server asks for a client
                                    certificate); see Docs/Scaling.md
          --instance-name <name>    this instance's name in PostgreSQL and the logs, default the host name
                                    (TAGSERVICE_INSTANCE_NAME)
          --postgres-partitions <n> delivery partitions when the tables are created, default 16
                                    (TAGSERVICE_POSTGRES_PARTITIONS)
          --postgres-timeout <s>    deadline of every PostgreSQL call, default 5; statement_timeout and
                                    lock_timeout are four fifths of it; past it a request gets 503
                                    postgres_timeout (TAGSERVICE_POSTGRES_TIMEOUT)
          --braze-requests-per-second <n>
                                    Braze requests a second for the whole cluster, shared by the instances
                                    (TAGSERVICE_BRAZE_REQUESTS_PER_SECOND)
          --braze-objects-per-request <limit>
                                    most objects in one /users/track request: <n> in all (default 75) or
                                    <n>-each of attributes, events and purchases (75-each: Braze's legacy
                                    rate limits), n from 1 to 75 (TAGSERVICE_BRAZE_OBJECTS_PER_REQUEST)
          --write-key <key>         a key POST /v1/... requests must present, as HTTP Basic (the key as the
                                    user name, empty password) or Authorization: Bearer <key>; repeatable,
                                    for rotation (TAGSERVICE_WRITE_KEYS, comma-separated). Without any key,
                                    anyone who reaches the port can push events: keep it private
          --write-key-file <path>   more write keys, one a line (# comments) (TAGSERVICE_WRITE_KEY_FILE)
          --metrics-token <token>   GET /metrics then needs Authorization: Bearer <token>
                                    (TAGSERVICE_METRICS_TOKEN); /health and /ready stay open
          --braze-user <mode>       user-id (default): a session's Braze external_id is its user_id; none:
                                    the user_id only keys the session, which has no Braze user until a
                                    changeUser tag names one (its Braze tags are pending until then)
                                    (TAGSERVICE_BRAZE_USER)
          --braze-alias-label <label>
                                    send the Braze tags of a session without a Braze user at once, for the
                                    user alias {alias_name: user_id, alias_label: label}, instead of holding
                                    them; the push that names the user's external_id tells Braze to merge
                                    the alias (/users/identify) (TAGSERVICE_BRAZE_ALIAS_LABEL)
          --braze-pending-records <n>
                                    most records a session without a Braze user holds, default 100; the
                                    oldest are dropped past it; 0 drops such tags (TAGSERVICE_BRAZE_PENDING_RECORDS)
          --braze-pending-age <s>   longest such a record waits, default 86400 (TAGSERVICE_BRAZE_PENDING_AGE)
          --braze-pending-bytes <n> most bytes of records such a session holds, default 65536; the oldest are
                                    dropped past it (TAGSERVICE_BRAZE_PENDING_BYTES)
          --event-id-window <s>     how long a session remembers a message_id, default 86400; a retry within
                                    it is answered as a duplicate (TAGSERVICE_EVENT_ID_WINDOW)
          --event-id-count <n>      most message_ids a session remembers, default 1000, the oldest forgotten
                                    first (TAGSERVICE_EVENT_ID_COUNT)
        \(debugHelp)
          --help                    show this text

        Braze:
          BRAZE_REST_ENDPOINT       REST endpoint, e.g. https://rest.iad-01.braze.com; records are sent to
                                    <endpoint>/users/track. Without it records are appended to <queue>.jsonl.
          BRAZE_REST_API_KEY        REST API key with the users.track permission (required with an endpoint)

        endpoints:
          POST /v1/events   {"user_id", "event", "parameters"?, "context"?} → fired tags and records
                            (the user id may come in an X-User-ID header instead, or in the path:
                            POST /v1/users/<user_id>/events, percent-decoded; a disagreeing body is
                            refused); Content-Type: application/json; the write key if any
          POST /v1/batch    {"events": [event, …]} → {"results": [one answer per event, in order],
                            "accepted", "refused"}; one durable wait for the whole batch (X-User-ID or
                            POST /v1/users/<user_id>/batch as for a single event)
          GET  /health      alive
          GET  /ready       a container is live and the queue is writable
          GET  /metrics     Prometheus text format
        """

    /// The result of reading a command line: a configuration to run, or a request for help.
    public enum Parsed: Sendable {
        /// Run with this configuration.
        case run(TagServiceConfiguration)
        /// Print ``TagServiceConfiguration/help`` and exit 0.
        case help
    }

    /// Reads `arguments` (without the program name) and `environment`.
    public static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> Parsed {
        var values: [String: String] = [:]
        var opens: [String] = []
        var writeKeys: [String] = []
        var noDurableWait =
            try environment["TAGSERVICE_NO_DURABLE_WAIT"].map { value throws(UsageError) in
                try boolean(value, variable: "TAGSERVICE_NO_DURABLE_WAIT")
            } ?? false
        let valued: [String: String] = debugFlags.merging([
            "--containers": "TAGSERVICE_CONTAINERS", "--queue": "TAGSERVICE_QUEUE", "--host": "TAGSERVICE_HOST",
            "--port": "TAGSERVICE_PORT", "--sessions": "TAGSERVICE_SESSIONS",
            "--max-body-bytes": "TAGSERVICE_MAX_BODY_BYTES", "--max-batch-events": "TAGSERVICE_MAX_BATCH_EVENTS",
            "--max-batch-bytes": "TAGSERVICE_MAX_BATCH_BYTES", "--reload-interval": "TAGSERVICE_RELOAD_INTERVAL",
            "--container-url": "TAGSERVICE_CONTAINER_URL", "--saved-containers": "TAGSERVICE_SAVED_CONTAINERS",
            "--session-idle": "TAGSERVICE_SESSION_IDLE", "--max-sessions": "TAGSERVICE_MAX_SESSIONS",
            "--max-session-bytes": "TAGSERVICE_MAX_SESSION_BYTES",
            "--log-level": "TAGSERVICE_LOG_LEVEL", "--delivery-linger": "TAGSERVICE_DELIVERY_LINGER",
            "--open-timeout": "TAGSERVICE_OPEN_TIMEOUT", "--concurrent-deliveries": "TAGSERVICE_CONCURRENT_DELIVERIES",
            "--commit-delay": "TAGSERVICE_COMMIT_DELAY", "--idle-timeout": "TAGSERVICE_IDLE_TIMEOUT",
            "--max-connections": "TAGSERVICE_MAX_CONNECTIONS", "--request-timeout": "TAGSERVICE_REQUEST_TIMEOUT",
            "--shutdown-timeout": "TAGSERVICE_SHUTDOWN_TIMEOUT",
            "--session-save-interval": "TAGSERVICE_SESSION_SAVE_INTERVAL",
            "--postgres": "CONTAINERKIT_POSTGRES_URL", "--instance-name": "TAGSERVICE_INSTANCE_NAME",
            "--postgres-partitions": "TAGSERVICE_POSTGRES_PARTITIONS",
            "--postgres-timeout": "TAGSERVICE_POSTGRES_TIMEOUT",
            "--braze-requests-per-second": "TAGSERVICE_BRAZE_REQUESTS_PER_SECOND",
            "--braze-objects-per-request": "TAGSERVICE_BRAZE_OBJECTS_PER_REQUEST",
            "--write-key-file": "TAGSERVICE_WRITE_KEY_FILE", "--metrics-token": "TAGSERVICE_METRICS_TOKEN",
            "--braze-user": "TAGSERVICE_BRAZE_USER", "--braze-pending-records": "TAGSERVICE_BRAZE_PENDING_RECORDS",
            "--braze-pending-age": "TAGSERVICE_BRAZE_PENDING_AGE",
            "--braze-alias-label": "TAGSERVICE_BRAZE_ALIAS_LABEL",
            "--braze-pending-bytes": "TAGSERVICE_BRAZE_PENDING_BYTES",
            "--event-id-window": "TAGSERVICE_EVENT_ID_WINDOW", "--event-id-count": "TAGSERVICE_EVENT_ID_COUNT",
        ]) { $1 }
        // A variable's value without the spaces and line break around it: a secret or a config map made from a file
        // ends with a line break, which no value here means.
        for (flag, variable) in valued {
            if let value = environment[variable]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty {
                values[flag] = value
            }
        }
        if let list = environment["TAGSERVICE_OPEN"] {
            opens = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter {
                !$0.isEmpty
            }
        }
        if let list = environment["TAGSERVICE_WRITE_KEYS"] {
            writeKeys = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter {
                !$0.isEmpty
            }
        }
        var flagOpens: [String] = []
        var flagWriteKeys: [String] = []
        var index = 0
        while index < arguments.count {
            var argument = arguments[index]
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                inlineValue = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            switch argument {
            case "--help", "-h":
                return .help
            case "--no-durable-wait":
                noDurableWait = true
            case "--open":
                flagOpens.append(try value(of: argument, inline: inlineValue, arguments, &index))
            case "--write-key":
                flagWriteKeys.append(try value(of: argument, inline: inlineValue, arguments, &index))
            case _ where valued[argument] != nil:
                values[argument] = try value(of: argument, inline: inlineValue, arguments, &index)
            default:
                throw UsageError("unknown option '\(argument)' (see --help)")
            }
            index += 1
        }
        if !flagOpens.isEmpty { opens = flagOpens }
        if !flagWriteKeys.isEmpty { writeKeys = flagWriteKeys }

        guard let containers = values["--containers"] else {
            throw UsageError("--containers <dir> is required (or TAGSERVICE_CONTAINERS)")
        }
        guard let queue = values["--queue"] else {
            throw UsageError("--queue <dir> is required (or TAGSERVICE_QUEUE)")
        }
        var configuration = TagServiceConfiguration(containersDirectory: containers, queueDirectory: queue)
        configuration.waitsForDurability = !noDurableWait
        if let host = values["--host"] { configuration.host = host }
        if let port = values["--port"] {
            guard let number = Int(port), (0...65535).contains(number) else {
                throw UsageError("--port must be 0–65535, not '\(port)'")
            }
            configuration.port = number
        }
        configuration.sessionsDirectory = values["--sessions"]
        if let seconds = values["--session-save-interval"] {
            configuration.sessionSaveInterval = try duration(seconds, flag: "--session-save-interval")
        }
        if let bytes = values["--max-body-bytes"] {
            let number = try integer(bytes, flag: "--max-body-bytes", in: 1...Int.max)
            configuration.maximumBodyBytes = number
        }
        if let count = values["--max-batch-events"] {
            let number = try integer(count, flag: "--max-batch-events", in: 1...10_000)
            configuration.maximumBatchEvents = number
        }
        if let bytes = values["--max-batch-bytes"] {
            let number = try integer(bytes, flag: "--max-batch-bytes", in: 1...Int.max)
            configuration.maximumBatchBytes = number
        }
        if let seconds = values["--idle-timeout"] {
            configuration.idleTimeout = try duration(seconds, flag: "--idle-timeout")
        }
        if let seconds = values["--request-timeout"] {
            configuration.requestTimeout = try duration(seconds, flag: "--request-timeout")
        }
        if let seconds = values["--shutdown-timeout"] {
            configuration.shutdownTimeout = try duration(seconds, flag: "--shutdown-timeout")
        }
        if let count = values["--max-connections"] {
            let number = try integer(count, flag: "--max-connections", in: 1...1_000_000)
            configuration.maximumConnections = number
        }
        if let seconds = values["--reload-interval"] {
            configuration.reloadInterval = try duration(seconds, flag: "--reload-interval")
        }
        if let seconds = values["--delivery-linger"] {
            configuration.deliveryLinger = try duration(seconds, flag: "--delivery-linger", allowsZero: true)
        }
        if let seconds = values["--commit-delay"] {
            configuration.commitDelay = try duration(seconds, flag: "--commit-delay", allowsZero: true)
        }
        if let count = values["--concurrent-deliveries"] {
            let number = try integer(count, flag: "--concurrent-deliveries", in: 1...64)
            configuration.concurrentDeliveries = number
        }
        if let seconds = values["--open-timeout"] {
            guard let number = Double(seconds), number >= 0, number <= maximumSeconds else {
                throw UsageError("--open-timeout must be a number of seconds up to 10^9, not '\(seconds)'")
            }
            configuration.openTimeout = .seconds(number)
        }
        if let seconds = values["--session-idle"] {
            configuration.sessionIdleTimeout = try duration(seconds, flag: "--session-idle")
        }
        if let count = values["--max-sessions"] {
            let number = try integer(count, flag: "--max-sessions", in: 1...Int.max)
            configuration.maximumSessions = number
        }
        if let count = values["--max-session-bytes"] {
            let number = try integer(count, flag: "--max-session-bytes", in: 1024...(12 << 20))
            configuration.maximumSessionBytes = number
        }
        for id in opens where !ContainerLoader.isContainerID(id) {
            throw UsageError("--open needs a container id (GTM-XXXX), not '\(id)'")
        }
        configuration.openIDs = opens
        if let url = values["--container-url"] {
            guard let parsed = httpURL(url) else {
                throw UsageError("--container-url needs an http(s) URL, not '\(url)'")
            }
            configuration.containerURL = parsed
        }
        configuration.savedContainersDirectory = values["--saved-containers"]
        if let level = values["--log-level"] {
            // Any case: `TAGSERVICE_LOG_LEVEL=INFO` is how many deployments write it.
            let name = level.lowercased()
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(name) else {
                throw UsageError(
                    "--log-level must be trace, debug, info, notice, warning, error or critical, not '\(level)'"
                )
            }
            configuration.logLevel = name
        }
        if let mode = values["--braze-user"] {
            guard let parsed = BrazeUser(rawValue: mode) else {
                throw UsageError("--braze-user must be user-id or none, not '\(mode)'")
            }
            configuration.brazeUser = parsed
        }
        if let label = values["--braze-alias-label"] {
            guard !label.isEmpty, label.utf8.count <= 255 else {
                throw UsageError("--braze-alias-label needs a label of 1 to 255 bytes")
            }
            configuration.brazeAliasLabel = label
        }
        if let count = values["--braze-pending-records"] {
            let number = try integer(count, flag: "--braze-pending-records", in: 0...10_000)
            configuration.brazePendingRecords = number
        }
        if let limit = values["--braze-objects-per-request"] {
            do throws(ContainerError) {
                configuration.brazeObjectLimit = try BrazeUsersTrackDestination.ObjectLimit(parsing: limit)
            } catch {
                throw UsageError("--braze-objects-per-request: \(error.message)")
            }
        }
        if let seconds = values["--braze-pending-age"] {
            configuration.brazePendingAge = try duration(seconds, flag: "--braze-pending-age")
        }
        if let bytes = values["--braze-pending-bytes"] {
            let number = try integer(bytes, flag: "--braze-pending-bytes", in: 0...(16 << 20))
            configuration.brazePendingBytes = number
        }
        if let seconds = values["--event-id-window"] {
            configuration.eventIDWindow.duration = try duration(seconds, flag: "--event-id-window")
        }
        if let count = values["--event-id-count"] {
            let number = try integer(count, flag: "--event-id-count", in: 1...100_000)
            configuration.eventIDWindow.maximumCount = number
        }
        try parseScaleOut(values, into: &configuration)
        try parseDebug(values, into: &configuration)
        try parseKeys(
            writeKeys,
            file: values["--write-key-file"],
            metricsToken: values["--metrics-token"],
            into: &configuration
        )
        if let endpoint = environment["BRAZE_REST_ENDPOINT"], !endpoint.isEmpty {
            let url: URL
            do throws(ContainerError) {
                url = try BrazeUsersTrackDestination.restEndpoint(parsing: endpoint)
            } catch {
                throw UsageError("BRAZE_REST_ENDPOINT: \(error.message)")
            }
            guard let text = environment["BRAZE_REST_API_KEY"], !text.isEmpty else {
                throw UsageError("BRAZE_REST_ENDPOINT is set but BRAZE_REST_API_KEY is not")
            }
            do throws(ContainerError) {
                configuration.brazeAPIKey = try BrazeUsersTrackDestination.restAPIKey(parsing: text)
            } catch {
                throw UsageError("BRAZE_REST_API_KEY: \(error.message)")
            }
            configuration.brazeEndpoint = url
        }
        return .run(configuration)
    }

    /// Reads the write keys (those of `--write-key`, else of `TAGSERVICE_WRITE_KEYS`, plus those of
    /// `--write-key-file`) and the metrics token. A refused key is named by its position, never by its text.
    private static func parseKeys(
        _ keys: [String],
        file: String?,
        metricsToken: String?,
        into configuration: inout TagServiceConfiguration
    ) throws(UsageError) {
        let rule = "a key is at least 16 characters of printable ASCII without spaces, ':' or ','"
        for (index, key) in keys.enumerated() where !WriteKeys.isUsableKey(key) {
            throw UsageError("write key \(index + 1) of \(keys.count) (flags or variable) is not usable: \(rule)")
        }
        var allKeys = keys
        if let file {
            guard var text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw UsageError("--write-key-file: cannot read '\(file)' as UTF-8 text")
            }
            // An editor's byte order mark (Notepad writes one) is not part of the first key.
            if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
            // Lines as an editor numbers them: "\r\n" is one line end, and so is a lone "\n" or "\r".
            let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
            for (index, line) in lines.enumerated() {
                let key = line.trimmingCharacters(in: .whitespaces)
                guard !key.isEmpty, !key.hasPrefix("#") else { continue }
                guard WriteKeys.isUsableKey(key) else {
                    throw UsageError("--write-key-file '\(file)' line \(index + 1): the key is not usable: \(rule)")
                }
                allKeys.append(key)
            }
        }
        configuration.writeKeys = allKeys
        if let metricsToken {
            guard WriteKeys.isUsableKey(metricsToken) else {
                throw UsageError(
                    "--metrics-token is not usable: at least 16 characters of printable ASCII without spaces, ':' or ','"
                )
            }
            configuration.metricsToken = metricsToken
        }
    }

    private static func value(
        of flag: String,
        inline: String?,
        _ arguments: [String],
        _ index: inout Int
    ) throws(UsageError) -> String {
        if let inline { return inline }
        guard index + 1 < arguments.count else { throw UsageError("\(flag) needs a value") }
        index += 1
        return arguments[index]
    }

    /// The longest duration a flag takes (about 31 years): beyond it, microseconds no longer fit an `Int64`
    /// comfortably and no setting means anything.
    private static let maximumSeconds = 1e9

    /// A flag's whole number within `range`; the error names the flag and the range ("a positive integer" when
    /// the range is 1 and up).
    static func integer(_ text: String, flag: String, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let number = Int(text), range.contains(number) else {
            let expected =
                range == 1...Int.max
                ? "a positive integer" : "an integer from \(range.lowerBound) to \(range.upperBound)"
            throw UsageError("\(flag) must be \(expected), not '\(text)'")
        }
        return number
    }

    /// An environment variable's yes or no: `1`, `true`, `yes`, `on` or `0`, `false`, `no`, `off` (any case), or
    /// empty for no; anything else is refused rather than read as no.
    static func boolean(_ text: String, variable: String) throws(UsageError) -> Bool {
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "", "0", "false", "no", "off": return false
        default: throw UsageError("\(variable) must be 1, true, yes or on (or 0, false, no, off), not '\(text)'")
        }
    }

    /// A flag's number of seconds, above 0 (or with `allowsZero`, 0 too: `0`, `0.0`) and up to 10^9.
    static func duration(_ text: String, flag: String, allowsZero: Bool = false) throws(UsageError) -> Duration {
        guard let seconds = Double(text), seconds > 0 || (allowsZero && seconds == 0), seconds <= maximumSeconds
        else {
            let expected = allowsZero ? "0 or a positive number" : "a positive number"
            throw UsageError("\(flag) must be \(expected) of seconds up to 10^9, not '\(text)'")
        }
        return .microseconds(Int64((seconds * 1_000_000).rounded()))
    }

    private static func httpURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host?.isEmpty == false
        else { return nil }
        return url
    }
}
