import ContainerKit
import ContainerKitTesting
import Testing

struct DiagnosticLoggerTests {
    struct Failure: Error {}

    @Test func aThrowingHandlerIsLoggedWithContainerSessionAndTag() throws {
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(try SessionConcurrencyTests.tickContainer())
        manager.register(tagHandler: ClosureTagHandler { _ in throw Failure() }, for: "com.example.Tick")
        let result = manager.makeDataLayer(sessionID: "user-9").push(event: "tick", parameters: ["caller": 1, "n": 1])
        #expect(result.fired.first?.status.name == "failed")
        let entry = try #require(logger.entries.first { $0.level == .error })
        // The message is constant; the ids are only in the metadata.
        #expect(entry.message == "a tag handler threw")
        #expect(
            entry.metadata == [
                "container": "GTM-TEST1", "session": "user-9", "tag": "1", "class_path": "com.example.Tick",
                "error": "Failure()",
            ]
        )
    }

    @Test func metadataIsOnlyBuiltWhenTheLevelPasses() {
        let logger = InMemoryLogger(minimumLevel: .error)
        var built = false
        func metadata() -> LogMetadata {
            built = true
            return ["k": "v"]
        }
        logger.warning("not written", metadata: metadata())
        #expect(!built && logger.entries.isEmpty)
        logger.error("written", metadata: metadata())
        #expect(built && logger.entries.map(\.metadata) == [["k": "v"]])
        #expect(InMemoryLogger.format(["b": "2", "a": "1"]) == "a=1 b=2")
    }
}
