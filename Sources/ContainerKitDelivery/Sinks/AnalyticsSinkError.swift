/// A failure of a sink or a file-backed destination (``JSONLinesDestination``, ``DurableQueue``): a
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
    // Shared with destinations: `io` ("io_error", another I/O failure).
}
