/// The live debug page (`--debug-token`): off by default. When on, it is served on a listener of its own
/// (``host``:``port``, 127.0.0.1 by default), every route behind the token (``DebugAccess``).
public struct DebugSettings: Sendable, Hashable {
    /// The token the page needs (`--debug-token`, `TAGSERVICE_DEBUG_TOKEN`); `nil`: the page is off and nothing
    /// of it runs.
    public var token: String?
    /// The debug listener's address (`--debug-host`); keep it private: 127.0.0.1 by default.
    public var host = "127.0.0.1"
    /// The debug listener's port (`--debug-port`); 0 picks a free one.
    public var port = 8081
    /// How long a user stays followed after the last page that follows them closed (`--debug-follow-grace`).
    public var followGrace: Duration = .seconds(10 * 60)
    /// The most users followed at once (`--debug-max-users`).
    public var maximumFollowedUsers = 16
    /// The most live streams (open pages) at once (`--debug-max-streams`).
    public var maximumStreams = 8
    /// The pushes kept per followed user, the newest (`--debug-pushes-per-user`).
    public var pushesPerUser = 200

    /// Whether the page is on.
    public var isEnabled: Bool { token != nil }

    /// The page off.
    public init() {}
}

extension TagServiceConfiguration {
    /// The debug page's flags and their environment variables.
    static let debugFlags: [String: String] = [
        "--debug-token": "TAGSERVICE_DEBUG_TOKEN", "--debug-host": "TAGSERVICE_DEBUG_HOST",
        "--debug-port": "TAGSERVICE_DEBUG_PORT", "--debug-follow-grace": "TAGSERVICE_DEBUG_FOLLOW_GRACE",
        "--debug-max-users": "TAGSERVICE_DEBUG_MAX_USERS", "--debug-max-streams": "TAGSERVICE_DEBUG_MAX_STREAMS",
        "--debug-pushes-per-user": "TAGSERVICE_DEBUG_PUSHES_PER_USER",
    ]

    /// The debug page's part of `--help`.
    static let debugHelp = """
          --debug-token <token>     turn on the live debug page (off by default): at least 16 characters of
                                    printable ASCII without spaces, ':' or ','; a browser opens
                                    http://<debug host>:<debug port>/debug?token=<token> once (TAGSERVICE_DEBUG_TOKEN)
          --debug-host <address>    the debug page's listen address, default 127.0.0.1 (TAGSERVICE_DEBUG_HOST)
          --debug-port <n>          the debug page's port, default 8081; 0 picks one (TAGSERVICE_DEBUG_PORT)
          --debug-follow-grace <s>  a followed user stays followed this long after their last page closed,
                                    default 600 (TAGSERVICE_DEBUG_FOLLOW_GRACE)
          --debug-max-users <n>     most users followed at once, default 16 (TAGSERVICE_DEBUG_MAX_USERS)
          --debug-max-streams <n>   most open live pages at once, default 8 (TAGSERVICE_DEBUG_MAX_STREAMS)
          --debug-pushes-per-user <n>
                                    pushes kept per followed user, default 200 (TAGSERVICE_DEBUG_PUSHES_PER_USER)
        """

    /// Reads the debug page's flags (see ``DebugSettings``).
    static func parseDebug(_ values: [String: String], into configuration: inout TagServiceConfiguration)
        throws(UsageError)
    {
        var debug = DebugSettings()
        if let token = values["--debug-token"] {
            guard WriteKeys.isUsableKey(token) else {
                throw UsageError(
                    "--debug-token is not usable: at least 16 characters of printable ASCII without spaces, ':' or ','"
                )
            }
            debug.token = token
        }
        if let host = values["--debug-host"] { debug.host = host }
        if let port = values["--debug-port"] {
            guard let number = Int(port), (0...65535).contains(number) else {
                throw UsageError("--debug-port must be 0–65535, not '\(port)'")
            }
            debug.port = number
        }
        if let seconds = values["--debug-follow-grace"] {
            guard let number = Double(seconds), number >= 0, number <= 86_400 else {
                throw UsageError("--debug-follow-grace must be a number of seconds from 0 to 86400, not '\(seconds)'")
            }
            debug.followGrace = .milliseconds(Int64((number * 1000).rounded()))
        }
        debug.maximumFollowedUsers = try count(values["--debug-max-users"], flag: "--debug-max-users", 1...256) ?? 16
        debug.maximumStreams = try count(values["--debug-max-streams"], flag: "--debug-max-streams", 1...256) ?? 8
        debug.pushesPerUser =
            try count(values["--debug-pushes-per-user"], flag: "--debug-pushes-per-user", 1...10_000) ?? 200
        if debug.token == nil, values.keys.contains(where: { $0.hasPrefix("--debug-") }) {
            throw UsageError("the --debug-… flags need --debug-token (or TAGSERVICE_DEBUG_TOKEN)")
        }
        if debug.isEnabled, debug.port != 0, debug.port == configuration.port, debug.host == configuration.host {
            throw UsageError("--debug-port must differ from --port: the debug page has a listener of its own")
        }
        configuration.debug = debug
    }

    private static func count(_ text: String?, flag: String, _ range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(
                "\(flag) must be an integer from \(range.lowerBound) to \(range.upperBound), not '\(text)'"
            )
        }
        return number
    }
}
