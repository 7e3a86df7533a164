import ContainerKit
import ContainerKitBraze
import Foundation

/// The Braze side of `containerkit run`: the provider's sink and the front that delivers, built from
/// `--sink` and `--queue`. Each event's records come from its `PushResult`.
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
                do throws(ContainerError) {
                    self = .braze(try BrazeUsersTrackDestination.restEndpoint(parsing: String(text.dropFirst(6))))
                } catch {
                    throw UsageError("--sink braze:<REST endpoint>: \(error.message)")
                }
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

    /// What the provider hands records to: a delivery pipeline (in memory, or durable with `--queue`) or, for `--sink
    /// stdout` without a queue, a sink that takes them and keeps nothing (the records are printed from the
    /// push's result).
    let sink: any AnalyticsSink
    /// The pipeline to run while events are processed (none for `--sink stdout` without `--queue`).
    let front: (any Runnable)?
    /// Records the pipeline dropped at delivery so far: rejected by the destination, or given up on.
    let droppedRecords: @Sendable () -> Int

    init(
        sink spec: SinkSpec,
        objectLimit: BrazeUsersTrackDestination.ObjectLimit? = nil,
        queueDirectory: String?,
        environment: [String: String],
        logger: any DiagnosticLogger
    ) throws {
        let destination: any AnalyticsDestination
        var shown: ShownRecordsSink?
        switch spec {
        case .standardOutput:
            // The records are shown in the run's own output; the destination only has to take them.
            shown = ShownRecordsSink()
            destination = shown!
        case .jsonLines(let path):
            do {
                destination = try JSONLinesDestination(destination: .file(path: path), synchronizes: true)
            } catch {
                throw SetupError(description: "cannot open sink file: \(error)")
            }
        case .braze(let endpoint):
            guard let text = environment[BrazeSetup.apiKeyVariable], !text.isEmpty else {
                throw SetupError(description: "--sink braze: needs the REST API key in \(BrazeSetup.apiKeyVariable)")
            }
            let key: String
            do throws(ContainerError) {
                key = try BrazeUsersTrackDestination.restAPIKey(parsing: text)
            } catch {
                throw SetupError(description: "\(BrazeSetup.apiKeyVariable): \(error.message)")
            }
            var configuration = BrazeUsersTrackDestination.Configuration()
            if let objectLimit { configuration.objectLimit = objectLimit }
            destination = BrazeUsersTrackDestination(endpoint: endpoint, apiKey: key, configuration: configuration)
        }
        if let queueDirectory {
            do {
                let queue = try DeliveryPipeline.durable(
                    directory: queueDirectory,
                    destination: destination,
                    settings: DeliverySettings(logger: logger)
                )
                sink = queue
                front = queue
                droppedRecords = { queue.statistics.rejectedRecords }
            } catch {
                throw SetupError(description: "cannot open queue '\(queueDirectory)': \(error)")
            }
        } else if let shown {
            sink = shown
            front = nil
            droppedRecords = { 0 }
        } else {
            let queue = DeliveryPipeline.inMemory(destination: destination, settings: DeliverySettings(logger: logger))
            sink = queue
            front = queue
            droppedRecords = { queue.statistics.rejectedRecords + queue.statistics.droppedRecords }
        }
    }
}

/// The sink and destination of `--sink stdout`: takes every record and keeps none, since `run` prints them
/// from each push's result.
private struct ShownRecordsSink: AnalyticsSink, AnalyticsDestination {
    func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? { nil }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult { .accepted(records) }
}
