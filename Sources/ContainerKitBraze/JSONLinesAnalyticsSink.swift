import ContainerKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes every record as one line of JSON (``AnalyticsRecord/jsonLine``) to standard output or a file.
///
/// Each ``receive(_:)`` call is written at once with one `write(2)`, so lines from concurrent callers
/// never interleave and output order is receive order. ``flush()`` also `fsync`s a file when
/// `synchronizesOnFlush` is set. As an ``AcknowledgingSink`` it confirms a batch once it is written
/// (and throws if the write fails, so a ``DurableQueueSink`` in front of it keeps the records).
///
/// ```swift
/// let sink = try JSONLinesAnalyticsSink(destination: .file(path: "/var/log/braze.jsonl"))
/// sink.receive(record)   // {"type":"custom_event","id":"…",…}
/// ```
public final class JSONLinesAnalyticsSink: AnalyticsSink, AcknowledgingSink {
    /// Where lines go.
    public enum Destination: Sendable, Hashable {
        /// The process's standard output (file descriptor 1), which the sink never closes.
        case standardOutput
        /// A file, created if missing and appended to.
        case file(path: String)
    }

    private struct State: Sendable {
        var fd: Int32
        var closed = false
    }

    /// Where this sink writes.
    public let destination: Destination
    private let path: String
    private let synchronizesOnFlush: Bool
    private let logger: any Logger
    private let state: Mutex<State>

    /// Opens the destination.
    /// - Parameters:
    ///   - destination: standard output, or a file (appended to, or emptied first when `truncate`).
    ///   - truncate: empty an existing file first.
    ///   - synchronizesOnFlush: `fsync` the file in ``flush()`` and ``shutdown()``.
    ///   - logger: where write failures in ``receive(_:)`` are reported.
    /// - Throws: ``AnalyticsSinkError`` when the file cannot be opened.
    public init(
        destination: Destination = .standardOutput,
        truncate: Bool = false,
        synchronizesOnFlush: Bool = false,
        logger: any Logger = StandardErrorLogger()
    ) throws(AnalyticsSinkError) {
        self.destination = destination
        self.synchronizesOnFlush = synchronizesOnFlush
        self.logger = logger
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

    /// Writes `records`, one line each; a failure is logged and the records are lost.
    public func receive(_ records: [AnalyticsRecord]) {
        do {
            try write(records)
        } catch {
            logger.error("json lines sink: dropped \(records.count) records: \(error.message)")
        }
    }

    /// Writes `records`; throws if they could not be written.
    public func deliver(_ records: [AnalyticsRecord]) async throws {
        try write(records)
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
        try state.withLock { (state: inout State) throws(AnalyticsSinkError) -> Void in
            guard !state.closed else { throw AnalyticsSinkError(.closed, "json lines sink for '\(path)' is shut down") }
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
        }
    }

    /// `fsync`s the file when the sink was made with `synchronizesOnFlush` (lines are written as they
    /// arrive, so there is nothing else to flush).
    public func flush() async throws {
        try synchronize()
    }

    private func synchronize() throws(AnalyticsSinkError) {
        guard synchronizesOnFlush, case .file = destination else { return }
        let path = self.path
        try state.withLock { (state: inout State) throws(AnalyticsSinkError) -> Void in
            guard !state.closed else { return }
            try FileIO.sync(state.fd, path: path)
        }
    }

    /// Synchronizes (if asked to) and closes a file; later records are dropped with an error.
    public func shutdown() async {
        do {
            try synchronize()
        } catch {
            logger.error("json lines sink: \(error.message)")
        }
        let destination = self.destination
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            if case .file = destination { close(state.fd) }
        }
    }

    deinit {
        let destination = self.destination
        state.withLock { state in
            if !state.closed, case .file = destination { close(state.fd) }
        }
    }
}
