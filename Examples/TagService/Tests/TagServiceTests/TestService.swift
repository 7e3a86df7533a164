import ContainerKit
import ContainerKitBraze
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import TagServiceCore

/// A service in a fresh temporary directory: `containers/` holds the fixture container (a "played song"
/// Braze tag and a once-per-load "first play" tag), `queue/` the durable queue, `records.jsonl` is never
/// used (records go to `queue.jsonl`, beside the queue). Sessions live in the queue's log; `sessions/` (in
/// ``legacySessionsDirectory``) is where a test puts an earlier version's session files for `--sessions`.
struct TestService {
    let root: URL
    var configuration: TagServiceConfiguration

    static let fixtureID = "GTM-TAGSVC1"

    init(containers: Bool = true) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("tagservice-\(UUID().uuidString)")
        let containersDirectory = root.appendingPathComponent("containers")
        try FileManager.default.createDirectory(at: containersDirectory, withIntermediateDirectories: true)
        if containers {
            try FileManager.default.copyItem(
                at: Self.fixtureURL,
                to: containersDirectory.appendingPathComponent("\(Self.fixtureID).json")
            )
        }
        configuration = TagServiceConfiguration(
            containersDirectory: containersDirectory.path,
            queueDirectory: root.appendingPathComponent("queue").path
        )
        configuration.port = 0
    }

    /// Where a test writes an earlier version's session files (give it as ``TagServiceConfiguration/sessionsDirectory``).
    var legacySessionsDirectory: String { root.appendingPathComponent("sessions").path }

    /// The fixture container in the test bundle.
    static var fixtureURL: URL {
        Bundle.module.url(forResource: fixtureID, withExtension: "json", subdirectory: "Fixtures/containers")!
    }

    /// A logger that shows errors only.
    static var logger: Logging.Logger {
        var logger = Logging.Logger(label: "TagServiceTests") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .error
        return logger
    }

    func make() async throws -> TagServiceApplication {
        try await TagServiceApplication(configuration: configuration, logger: Self.logger)
    }

    /// The records delivered to the JSON-lines file so far.
    func deliveredRecords() throws -> [AnalyticsRecord] {
        guard let text = try? String(contentsOfFile: configuration.recordsFile, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { try AnalyticsRecord(jsonLine: String($0)) }
    }

    func remove() { try? FileManager.default.removeItem(at: root) }

    /// A service in `--postgres` mode: records and sessions in the database of `url`, named `name`, with 4
    /// delivery partitions.
    static func postgres(_ url: String, name: String) throws -> TestService {
        var fixture = try TestService()
        fixture.configuration.postgresURL = url
        fixture.configuration.instanceName = name
        fixture.configuration.postgresPartitions = 4
        return fixture
    }
}

/// A `POST /v1/events` body.
func eventBody(user: String, event: String = "played song", parameters: String = #"{"title": "So What"}"#)
    -> ByteBuffer
{
    ByteBuffer(string: #"{"user_id": "\#(user)", "event": "\#(event)", "parameters": \#(parameters)}"#)
}

extension TestResponse {
    /// The body as JSON.
    var json: ValueMap {
        get throws {
            let value = try Value(jsonBytes: Array(body.readableBytesView))
            return try #require(value.objectValue)
        }
    }
}

extension ValueMap {
    /// The names of the fired tags in an events answer.
    var firedNames: [String] {
        (self["fired"]?.arrayValue ?? []).compactMap { $0.objectValue?["name"]?.stringValue }
    }
}

extension HTTPFields {
    /// `Content-Type: application/json`, which every body the service reads must have.
    static let json: HTTPFields = [.contentType: "application/json"]
}
