import ContainerKit
import ContainerKitBraze
import Foundation
import Synchronization

/// The Braze side of `containerkit run`: the provider's sink chain built from `--braze`, `--sink` and
/// `--queue`, and a capture of each event's records for the output.
final class BrazeSetup: Sendable {
    /// Where the records go: standard output (shown in the run's own output), a JSON-lines file, or Braze.
    enum SinkSpec: Equatable {
        case standardOutput
        case jsonLines(String)
        case braze(URL)

        init(parsing text: String) throws(UsageError) {
            if text == "stdout" {
                self = .standardOutput
            } else if text.hasPrefix("jsonl:"), text.count > 6 {
                self = .jsonLines(String(text.dropFirst(6)))
            } else if text.hasPrefix("braze:") {
                let endpoint = String(text.dropFirst(6))
                guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(),
                    scheme == "http" || scheme == "https", url.host?.isEmpty == false
                else {
                    throw UsageError("--sink braze:<REST endpoint> needs an http(s) URL, not '\(endpoint)'")
                }
                self = .braze(url)
            } else {
                throw UsageError("--sink must be stdout, jsonl:<path> or braze:<REST endpoint>, not '\(text)'")
            }
        }
    }

    /// A failure to set the chain up (exit code 1).
    struct SetupError: Error, CustomStringConvertible {
        var description: String
    }

    /// The environment variable that holds the Braze REST API key.
    static let apiKeyVariable = "BRAZE_REST_API_KEY"

    let capture = CapturingSink()
    let queue: DurableQueueSink?
    private let downstream: (any AnalyticsSink)?

    init(sink: SinkSpec, queueDirectory: String?, environment: [String: String], logger: any Logger) throws {
        let downstream: (any AnalyticsSink & AcknowledgingSink)?
        switch sink {
        case .standardOutput:
            downstream = queueDirectory == nil ? nil : DiscardingSink()
        case .jsonLines(let path):
            do {
                downstream = try JSONLinesAnalyticsSink(
                    destination: .file(path: path),
                    synchronizesOnFlush: true,
                    logger: logger
                )
            } catch {
                throw SetupError(description: "cannot open sink file: \(error)")
            }
        case .braze(let endpoint):
            guard let key = environment[BrazeSetup.apiKeyVariable], !key.isEmpty else {
                throw SetupError(description: "--sink braze: needs the REST API key in \(BrazeSetup.apiKeyVariable)")
            }
            var configuration = BrazeUsersTrackSink.Configuration()
            configuration.logger = logger
            downstream = BrazeUsersTrackSink(endpoint: endpoint, apiKey: key, configuration: configuration)
        }
        if let queueDirectory, let downstream {
            var configuration = DurableQueueSink.Configuration()
            configuration.logger = logger
            do {
                queue = try DurableQueueSink(
                    directory: queueDirectory,
                    downstream: downstream,
                    configuration: configuration
                )
            } catch {
                throw SetupError(description: "cannot open queue '\(queueDirectory)': \(error)")
            }
        } else {
            queue = nil
        }
        self.downstream = downstream
        capture.next = queue ?? downstream
    }

    /// This event's records, in order; empties the capture.
    func takeRecords() -> [AnalyticsRecord] { capture.take() }

    /// Waits until everything handed to the queue is durable (a no-op without `--queue`).
    func waitUntilDurable() async throws {
        try await queue?.waitUntilDurable()
    }

    /// Drains the chain: the queue delivers what it can (the rest stays queued for the next run), then
    /// the downstream sink flushes and stops.
    func shutdown() async {
        if let queue { await queue.shutdown() }
        if let downstream { await downstream.shutdown() }
    }
}

/// Keeps each event's records for the output and forwards them to the real sink.
final class CapturingSink: AnalyticsSink {
    private let records = Mutex<[AnalyticsRecord]>([])
    private let forward = Mutex<(any AnalyticsSink)?>(nil)

    var next: (any AnalyticsSink)? {
        get { forward.withLock { $0 } }
        set { forward.withLock { $0 = newValue } }
    }

    func receive(_ batch: [AnalyticsRecord]) {
        records.withLock { $0.append(contentsOf: batch) }
        next?.receive(batch)
    }

    func take() -> [AnalyticsRecord] {
        records.withLock { list in
            defer { list.removeAll() }; return list
        }
    }
    func flush() async throws { try await next?.flush() }
    func shutdown() async { await next?.shutdown() }
}

/// The downstream of `--sink stdout --queue`: the records are shown in the run's output; the queue only
/// makes them durable first.
final class DiscardingSink: AnalyticsSink, AcknowledgingSink {
    func receive(_ records: [AnalyticsRecord]) {}
    func deliver(_ records: [AnalyticsRecord]) async throws {}
    func flush() async throws {}
    func shutdown() async {}
}
