public import ContainerKit

/// A failure of a sink or a file-backed destination (``JSONLinesDestination``, ``SegmentRecordStore``): a
/// ``DeliveryError`` (the module's one error type) with one of the codes below and, when a system call
/// failed, its ``DeliveryError/errorNumber``.
public typealias AnalyticsSinkError = DeliveryError

extension DeliveryError.Code {
    /// The directory or file cannot be created or written (permissions, read-only file system, …).
    public static let unwritable = DeliveryError.Code(rawValue: "unwritable")
    /// The file system is full (or the user's quota is used up).
    public static let diskFull = DeliveryError.Code(rawValue: "disk_full")
    /// The queue holds as many bytes as it may; the new records were refused.
    public static let queueFull = DeliveryError.Code(rawValue: "queue_full")
    /// Another open queue (in this or another process) holds the directory's lock.
    public static let locked = DeliveryError.Code(rawValue: "locked")
    /// The sink was shut down.
    public static let closed = DeliveryError.Code(rawValue: "closed")
    /// A queue file holds something no queue writes (an index or offset out of range); the message names
    /// the file.
    public static let corruptFile = DeliveryError.Code(rawValue: "corrupt_file")
    /// A store shared by several instances refused a session written with the records (another instance
    /// holds a newer version of it): nothing of the append was stored.
    public static let superseded = DeliveryError.Code(rawValue: "superseded")
    /// The store's server cannot be reached now (a database): nothing of the append was stored.
    public static let unavailable = DeliveryError.Code(rawValue: "unavailable")
    // Shared with destinations: `io` ("io_error", another I/O failure) and `timeout` (a store's server did not
    // answer within its deadline — a table locked, a server too busy —: nothing of the append was stored).
}

extension DurabilityError {
    /// The durability error of a store's failure `error`: the one conversion of a failed commit's error
    /// (a full disk stays `.diskFull`; a shut-down sink is `.stopped`; a full queue `.full`; a fenced
    /// session `.superseded`; an unreachable database `.unavailable`; a database past its deadline `.timeout`;
    /// anything else `.io`).
    public init(_ error: AnalyticsSinkError) {
        let code: Code
        switch error.code {
        case .diskFull: code = .diskFull
        case .unwritable: code = .unwritable
        case .queueFull: code = .full
        case .closed, .shutDown: code = .stopped
        case .superseded: code = .superseded
        case .unavailable: code = .unavailable
        case .timeout: code = .timeout
        default: code = .io
        }
        self.init(code, error.message, errorNumber: error.errorNumber)
    }
}
