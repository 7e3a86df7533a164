import ContainerKit
import ContainerKitBraze
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real crash: the test binary starts itself as a child that appends records and prints each ID once
/// its record is durable; the parent `kill -9`s it mid-stream and checks that every printed ID survived.
@Suite struct DurableQueueCrashTests {
    static let childDirectoryVariable = "CONTAINERKIT_BRAZE_CRASH_CHILD_DIRECTORY"

    /// The child's side. In a normal test run (no directory in the environment) it does nothing.
    @Test func crashChildAppendsUntilKilled() async throws {
        guard let directory = ProcessInfo.processInfo.environment[Self.childDirectoryVariable] else { return }
        var configuration = DurableQueueSink.Configuration()
        configuration.maximumSegmentBytes = 16 * 1024
        configuration.logger = InMemoryLogger()
        let queue = try DurableQueueSink(
            directory: directory,
            downstream: ScriptedDownstream(mode: .fail),
            configuration: configuration
        )
        var i = 0
        while true {
            let records = (0..<3).map { event("e\(i)-\($0)", ["i": .int(Int64(i))]) }
            try await queue.append(records)
            FileHandle.standardOutput.write(Data(records.map { "acked \($0.id)\n" }.joined().utf8))
            i += 1
        }
    }

    @Test func recordsAcknowledgedBeforeAKillAreDeliveredAfterTheRestart() async throws {
        let directory = TemporaryDirectory("crash")
        defer { directory.remove() }
        let executable = try #require(
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            "cannot find the test binary"
        )
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = ["--testing-library", "swift-testing", "--filter", "crashChildAppendsUntilKilled"]
        child.environment = ProcessInfo.processInfo.environment.merging(
            [Self.childDirectoryVariable: directory.path],
            uniquingKeysWith: { $1 }
        )
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        let reader = output.fileHandleForReading
        // Blocking reads run on their own thread, never on one of the few cooperative threads.
        let acknowledged: [String] = await onThread {
            var ids: [String] = []
            var pending = ""
            while ids.count < 600 {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending += String(decoding: chunk, as: UTF8.self)
                while let newline = pending.firstIndex(of: "\n") {
                    let line = pending[..<newline]
                    if line.hasPrefix("acked ") { ids.append(String(line.dropFirst(6))) }
                    pending = String(pending[pending.index(after: newline)...])
                }
            }
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            return ids
        }
        #expect(child.terminationReason == .uncaughtSignal)
        #expect(acknowledged.count >= 600, "the child acknowledged only \(acknowledged.count) records")

        let pending = Set(try DurableQueueSink.pendingRecords(in: directory.path).map(\.id))
        let lost = acknowledged.filter { !pending.contains($0) }
        #expect(lost.isEmpty, "acknowledged before the kill but missing after it: \(lost.prefix(5))")

        let downstream = ScriptedDownstream()
        var configuration = DurableQueueSink.Configuration()
        configuration.logger = InMemoryLogger()
        let reopened = try DurableQueueSink(
            directory: directory.path,
            downstream: downstream,
            configuration: configuration
        )
        try await reopened.flush()
        let delivered = Set(downstream.delivered.map(\.id))
        #expect(acknowledged.allSatisfy { delivered.contains($0) })
        #expect(delivered.count == pending.count)
        await reopened.shutdown()
    }
}
