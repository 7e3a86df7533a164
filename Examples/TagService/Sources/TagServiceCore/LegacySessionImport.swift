import ContainerKit
import ContainerKitBraze
import Foundation
import Logging

/// `--sessions <dir>`: the session files of an earlier TagService (its `FileSessionPersistence`), moved once
/// into the durable queue's log, where sessions live now.
///
/// At start, before any service runs: when the directory holds session files (`<number>.sessions`) and no
/// marker (``markerName``), they are read (``LegacySessionFiles``), the sessions the earlier version still
/// handed out — saved within `--session-idle` — are written into the queue as snapshots
/// (`DeliveryPipeline.importSessions(_:)` of the durable pipeline, synced before it returns), and the marker is written into the directory,
/// naming the queue and the date. Later starts find the marker and read nothing. The files are left as they are
/// (remove the directory once the new version runs).
///
/// A crash between the import and the marker imports again at the next start, which changes nothing: the queue
/// leaves a session it already holds at that version (or a newer one) as it is.
enum LegacySessionImport {
    /// The marker written into the sessions directory after the import.
    static let markerName = "IMPORTED-INTO-QUEUE"

    /// What an import did.
    struct Outcome: Equatable {
        /// Sessions written into the queue.
        var imported: Int
        /// Sessions left out: not saved within the idle timeout (the earlier version had let them expire).
        var expired: Int
        /// What was read.
        var contents: LegacySessionFiles.Contents
    }

    /// Imports the session files in `directory` into `queue` unless they were imported before or there are none.
    /// - Returns: what was imported; `nil` when nothing was read (no session files, or the marker is there).
    /// - Throws: when the files cannot be read or the queue cannot write them; the service does not start then.
    @discardableResult
    static func run(
        directory: String,
        into queue: DeliveryPipeline<SegmentRecordStore>,
        idleTimeout: Duration,
        logger: Logging.Logger,
        now: Date = Date()
    ) throws -> Outcome? {
        let marker = directory + "/" + markerName
        guard !FileManager.default.fileExists(atPath: marker) else { return nil }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard names.contains(where: { $0.hasSuffix(".sessions") }) else { return nil }

        let contents = try LegacySessionFiles.read(directory: directory)
        let since = Int64(now.timeIntervalSince1970) - idleTimeout.components.seconds
        let sessions = contents.storedSessions(savedSince: since)
        let imported = try queue.importSessions(sessions)
        let outcome = Outcome(imported: imported, expired: contents.sessions.count - sessions.count, contents: contents)

        let date = ISO8601DateFormatter().string(from: now)
        let text = """
            The session files in this directory were imported into the durable queue '\(queue.store.directory)' on \(date):
            \(imported) sessions imported, \(outcome.expired) expired, \(contents.endedSessions) ended, \
            \(contents.skippedLines) lines skipped. TagService no longer reads them; remove the directory when the new
            version runs.

            """
        if FileManager.default.createFile(
            atPath: marker,
            contents: Data(text.utf8),
            attributes: [.posixPermissions: 0o600]
        ) {
            logger.notice(
                "imported the session files of an earlier version into the queue",
                metadata: metadata(outcome, directory: directory, queue: queue.store.directory)
            )
        } else {
            logger.warning(
                "imported the session files of an earlier version into the queue, but cannot write the marker",
                metadata: metadata(outcome, directory: directory, queue: queue.store.directory).merging(
                    ["marker": "\(marker)", "next_start": "imports them again, changing nothing the queue holds"],
                    uniquingKeysWith: { $1 }
                )
            )
        }
        return outcome
    }

    private static func metadata(_ outcome: Outcome, directory: String, queue: String) -> Logging.Logger.Metadata {
        var metadata: Logging.Logger.Metadata = [
            "sessions_directory": "\(directory)", "queue": "\(queue)", "imported": "\(outcome.imported)",
            "expired": "\(outcome.expired)", "ended": "\(outcome.contents.endedSessions)",
            "skipped_lines": "\(outcome.contents.skippedLines)", "ignored_files": "\(outcome.contents.ignoredFiles)",
        ]
        if let problem = outcome.contents.firstProblem { metadata["first_problem"] = "\(problem)" }
        return metadata
    }
}
