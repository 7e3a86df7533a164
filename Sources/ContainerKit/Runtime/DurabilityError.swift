/// Why records a push handed to a ``DurabilitySource`` are not durable: what
/// ``PushResult/waitUntilDurable()`` and ``DurabilityToken/wait()`` throw.
///
/// A service answers the client by the ``code`` — every code means "not stored, try again later" (503) —
/// and logs the ``message``, which may name server paths.
///
/// ```swift
/// do {
///     try await result.waitUntilDurable()
/// } catch {                                   // error is a DurabilityError
///     switch error.code {
///     case .diskFull, .io, .unwritable, .full: readiness.commitFailed()
///     default: break                          // .notRunning, .stopped: the queue, not the disk
///     }
///     return .serviceUnavailable
/// }
/// ```
public struct DurabilityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public struct Code: ErrorCode {
        /// The code as text.
        public var rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The commit failed because the file system is full (or a quota is used up).
        public static let diskFull = Code(rawValue: "disk_full")
        /// The commit failed with another I/O error (a failing device, a deleted segment, a lost
        /// connection to a database).
        public static let io = Code(rawValue: "io_error")
        /// The store's files cannot be written (permissions, a read-only file system).
        public static let unwritable = Code(rawValue: "unwritable")
        /// The store holds as much as it may.
        public static let full = Code(rawValue: "full")
        /// The store stopped (cancelled, or drained) before it committed the records.
        public static let stopped = Code(rawValue: "stopped")
        /// Nothing commits the records: the source's `run()` is not running (never started, or not yet).
        public static let notRunning = Code(rawValue: "not_running")
        /// A store shared by several instances refused the session written with the records: another
        /// instance holds a newer version of it (the user moved). Nothing of the push was stored.
        public static let superseded = Code(rawValue: "superseded")
        /// The store's server (a database) cannot be reached now. Nothing of the push was stored.
        public static let unavailable = Code(rawValue: "unavailable")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A lowercase message naming the offending file or value in quotes (for logs, not for clients).
    public var message: String
    /// The `errno` behind the failure, when a system call failed.
    public var errorNumber: Int32?

    /// Creates an error.
    public init(_ code: Code, _ message: String, errorNumber: Int32? = nil) {
        self.code = code
        self.message = message
        self.errorNumber = errorNumber
    }

    /// `message (code)`.
    public var description: String { "\(message) (\(code.rawValue))" }
}
