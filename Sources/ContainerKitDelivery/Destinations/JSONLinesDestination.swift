import ContainerKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A destination that writes every record as one line of JSON (``AnalyticsRecord/jsonLine``) to standard
/// output or a file.
///
/// Each delivery is written with one `write(2)`, so lines of concurrent batches never interleave. With
/// `synchronizes`, a file is `fsync`ed before a batch counts as accepted, so a durable ``DeliveryPipeline`` in front
/// deletes only records that are on disk here too. A failed write makes the batch retryable
/// (``DeliveryError/Code/io``).
///
/// ```swift
/// let lines = try JSONLinesDestination(destination: .file(path: "/var/log/braze.jsonl"))
/// let pipeline = DeliveryPipeline.inMemory(destination: lines)
/// ```
public final class JSONLinesDestination: AnalyticsDestination {
    /// Where lines go.
    public enum Destination: Sendable, Hashable {
        /// The process's standard output (file descriptor 1), which the destination never closes.
        case standardOutput
        /// A file, created if missing and appended to.
        case file(path: String)
    }

    private struct State: Sendable {
        var fd: Int32
        var closed = false
    }

    /// Where this destination writes.
    public let destination: Destination
    private let path: String
    private let synchronizes: Bool
    private let state: Mutex<State>

    /// Opens the destination.
    /// - Parameters:
    ///   - destination: standard output, or a file (appended to, or emptied first when `truncate`).
    ///   - truncate: empty an existing file first.
    ///   - synchronizes: `fsync` the file after each batch, before accepting it.
    /// - Throws: ``AnalyticsSinkError`` when the file cannot be opened.
    public init(
        destination: Destination = .standardOutput,
        truncate: Bool = false,
        synchronizes: Bool = false
    ) throws(AnalyticsSinkError) {
        self.destination = destination
        self.synchronizes = synchronizes
        switch destination {
        case .standardOutput:
            path = "<stdout>"
            state = Mutex(State(fd: 1))
        case .file(let filePath):
            path = filePath
            let flags = O_WRONLY | O_CREAT | O_APPEND | (truncate ? O_TRUNC : 0)
            state = Mutex(State(fd: try FileIO.openFile(filePath, flags)))
        }
    }

    /// Writes `records`, one line each (and syncs a file when asked to); a failure makes them retryable.
    public func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        do {
            try write(records)
            return .accepted(records)
        } catch {
            let code: DeliveryError.Code = error.code == .closed ? .shutDown : .io
            return .retry(records, DeliveryError(code, "json lines destination: \(error.message)"))
        }
    }

    private func write(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) {
        guard !records.isEmpty else { return }
        var json = JSONByteWriter(capacity: records.count * 200)
        for record in records {
            record.write(to: &json)
            json.raw(0x0A)
        }
        var bytes = json.bytes
        let path = self.path
        let sync = synchronizes && destination != .standardOutput
        try state.withLock { (state: inout State) throws(AnalyticsSinkError) -> Void in
            guard !state.closed else { throw AnalyticsSinkError(.closed, "'\(path)' is closed") }
            let fd = state.fd
            var failure: AnalyticsSinkError?
            bytes.withUnsafeMutableBytes { buffer in
                do throws(AnalyticsSinkError) {
                    try FileIO.writeAll(fd, UnsafeRawBufferPointer(buffer), path: path)
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            if sync { try FileIO.sync(fd, path: path) }
        }
    }

    /// Closes a file (standard output stays open); later deliveries are retryable failures.
    public func close() {
        let destination = self.destination
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            if case .file = destination { _ = systemClose(state.fd) }
        }
    }

    deinit { close() }
}

private func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.close(fd)
    #else
        Darwin.close(fd)
    #endif
}
