/// Why records a push handed to a ``DurabilitySource`` are not durable: what
/// ``PushResult/waitUntilDurable()`` and ``DurabilityToken/wait()`` throw. A ``ContainerError`` (the module's
/// one error type) with one of the codes below (or `io`, "io_error": another I/O failure — a failing device,
/// a deleted segment, a lost connection to a database) and, when a system call failed, its
/// ``ContainerError/errorNumber``.
///
/// A service answers the client by the ``ContainerError/code`` — every durability code means "not stored, try
/// again later" (503) — and logs the ``ContainerError/message``, which may name server paths.
///
/// ```swift
/// do {
///     try await result.waitUntilDurable()
/// } catch {                                   // error is a DurabilityError (a ContainerError)
///     switch error.code {
///     case .diskFull, .io, .unwritable, .full, .unavailable, .timeout: readiness.commitFailed()
///     default: break                          // .notRunning, .stopped: the queue, not the disk
///     }
///     return .serviceUnavailable
/// }
/// ```
public typealias DurabilityError = ContainerError

extension ContainerError.Code {
    /// The commit failed because the file system is full (or a quota is used up).
    public static let diskFull = ContainerError.Code(rawValue: "disk_full")
    /// The store's files cannot be written (permissions, a read-only file system).
    public static let unwritable = ContainerError.Code(rawValue: "unwritable")
    /// The store holds as much as it may.
    public static let full = ContainerError.Code(rawValue: "full")
    /// The store stopped (cancelled, or drained) before it committed the records.
    public static let stopped = ContainerError.Code(rawValue: "stopped")
    /// Nothing commits the records: the source's `run()` is not running (never started, or not yet).
    public static let notRunning = ContainerError.Code(rawValue: "not_running")
    /// A store shared by several instances refused the session written with the records: another instance
    /// holds a newer version of it (the user moved). Nothing of the push was stored.
    public static let superseded = ContainerError.Code(rawValue: "superseded")
    /// The store's server (a database) cannot be reached now. Nothing of the push was stored.
    public static let unavailable = ContainerError.Code(rawValue: "unavailable")
    /// The store's server (a database) did not answer within its deadline: a table locked by someone else, a
    /// server too busy. Nothing of the push was acknowledged.
    public static let timeout = ContainerError.Code(rawValue: "timeout")
    // Shared with loading: `io` ("io_error", the commit failed with another I/O error).
}
