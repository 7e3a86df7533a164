import ContainerKit

/// A failure of a sink or a file-backed destination (``JSONLinesDestination``, ``DurableQueue``), with the system
/// error number when there is one.
public struct AnalyticsSinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public struct Code: ErrorCode {
        /// The code as text.
        public var rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The directory or file cannot be created or written (permissions, read-only file system, …).
        public static let unwritable = Code(rawValue: "unwritable")
        /// The file system is full (or the user's quota is used up).
        public static let diskFull = Code(rawValue: "disk_full")
        /// Another I/O failure.
        public static let io = Code(rawValue: "io_error")
        /// The queue holds as many bytes as it may; the new records were refused.
        public static let queueFull = Code(rawValue: "queue_full")
        /// Another open queue (in this or another process) holds the directory's lock.
        public static let locked = Code(rawValue: "locked")
        /// The sink was shut down.
        public static let closed = Code(rawValue: "closed")
        /// A queue file holds something no queue writes (an index or offset out of range); the message
        /// names the file.
        public static let corruptFile = Code(rawValue: "corrupt_file")
    }

    /// What kind of error this is.
    public var code: Code
    /// A lowercase message naming the offending path or value in quotes.
    public var message: String
    /// The `errno` behind the error, when a system call failed.
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

extension DurabilityError {
    /// The durability error of a store's failure `error`: the one conversion of a failed commit's error
    /// (a full disk stays `.diskFull`; a shut-down sink is `.stopped`; a full queue `.full`).
    public init(_ error: AnalyticsSinkError) {
        let code: Code
        switch error.code {
        case .diskFull: code = .diskFull
        case .unwritable: code = .unwritable
        case .queueFull: code = .full
        case .closed: code = .stopped
        default: code = .io
        }
        self.init(code, error.message, errorNumber: error.errorNumber)
    }
}
