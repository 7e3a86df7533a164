import ContainerKit
import ContainerKitTesting
import Synchronization
import Testing

/// What a ``RuntimeObserver`` hears of a push that is not traced: enough to count, per tag, fired, blocked and
/// (by difference from the events evaluated) not fired — the same outcomes a trace of the push shows.
@Suite struct RuntimeObserverTests {
    /// Every event the observer received, in order.
    final class Heard: Sendable {
        let events = Mutex<[RuntimeEvent]>([])
        var observer: ClosureRuntimeObserver {
            ClosureRuntimeObserver { event in self.events.withLock { $0.append(event) } }
        }
    }

    static func session(_ heard: Heard) throws -> DataLayer {
        let manager = TagManager(logger: InMemoryLogger(), observer: heard.observer)
        manager.add(try PushTraceTests.container())
        manager.register(tagHandler: PushTraceTests.RecordMaker(), for: "make")
        manager.register(tagHandler: PushTraceTests.RecordMaker(), for: "other")
        return manager.makeDataLayer(sessionID: "s-1")
    }

    @Test func anUntracedPushReportsTheTagsFiredAndBlockedThatItsTraceShows() throws {
        let heard = Heard()
        try Self.session(heard).push(event: "e", parameters: ["genre": "rock"])
        let events = heard.events.withLock { $0 }
        let fired = events.compactMap { event -> Int? in
            if case .tagFired(_, let index, _, _, _) = event { return index } else { return nil }
        }
        let blocked = events.compactMap { event -> Int? in
            guard case .tagBlocked(let container, let index, let tagID) = event else { return nil }
            #expect(container == "GTM-TEST1" && tagID == 12)
            return index
        }
        #expect(events.filter { if case .eventEvaluated = $0 { true } else { false } }.count == 1)

        // The same push into a fresh session, traced.
        let trace = try #require(
            try Self.session(Heard()).push(event: "e", parameters: ["genre": "rock"], tracing: true).trace
        )
        let called: [PushTrace.Tag.Outcome] = [.fired, .pending, .unsupported, .blockedByConsent]
        #expect(fired.sorted() == trace.tags.filter { called.contains($0.outcome) }.map(\.index))
        #expect(blocked == trace.tags.filter { $0.outcome == .blocked }.map(\.index))
        #expect(blocked == [2] && fired.sorted() == [0, 4, 5])
    }

    @Test func aTagBlockedByTwoPassingRulesIsReportedOnce() throws {
        let container = try TestContainers.resource(
            macros: #"[{"function": "__e", "instance_name": "Event Name"}]"#,
            tags: #"[{"function": "__funct", "tag_id": 1, "instance_name": "T", "vtp_classPath": "make"}]"#,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
            rules: #"[[["if", 0], ["add", 0]], [["if", 0], ["block", 0]], [["if", 0], ["block", 0]]]"#
        )
        let heard = Heard()
        let manager = TagManager(logger: InMemoryLogger(), observer: heard.observer)
        manager.add(container)
        manager.register(tagHandler: PushTraceTests.RecordMaker(), for: "make")
        manager.makeDataLayer(sessionID: "s").push(event: "e")
        let events = heard.events.withLock { $0 }
        #expect(events.filter { if case .tagBlocked = $0 { true } else { false } }.count == 1)
        #expect(!events.contains { if case .tagFired = $0 { true } else { false } })
    }

    @Test func aContainerListsItsTagsByIndexWithTheirNames() throws {
        let tags = try PushTraceTests.container().tags
        #expect(tags.count == 8)
        #expect(tags[2].index == 2 && tags[2].tagID == 12 && tags[2].name == "Blocked on rock")
        #expect(tags[2].function == "__funct")
        #expect(tags[4].function == "__html")
    }
}
