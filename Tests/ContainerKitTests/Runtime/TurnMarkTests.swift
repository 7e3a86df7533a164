import ContainerKitTesting
import Synchronization
import Testing

@testable import ContainerKit

/// The task-local turn mark (``DataLayer/enclosingTurns``) is bound exactly where host code can run inside a
/// push, so a push that host code makes into the session is nested instead of waiting for a turn that the push
/// holds.
struct TurnMarkTests {
    /// A push no rule can pass for is evaluated without the mark (it calls no handler), but an observer still
    /// sees it: the observer runs inside the mark, and a push it makes into the session is nested in that push.
    @Test func anObserverOfAnEventNoRuleCanPassForRunsInsideTheMarkAndItsPushIsNested() throws {
        let session = Mutex<DataLayer?>(nil)
        let markedWhenObserved = Mutex<Bool?>(nil)
        let observer = ClosureRuntimeObserver { event in
            guard case .eventEvaluated(_, "unmatched") = event, let layer = session.withLock({ $0 }) else { return }
            let marked = DataLayer.enclosingTurns?.turn(of: ObjectIdentifier(layer)) != nil
            markedWhenObserved.withLock { $0 = marked }
            // Without the mark this push would wait for the turn the observed push holds: never.
            if marked { layer.push(event: "tick", parameters: ["n": 1]) }
        }
        let manager = TagManager(logger: InMemoryLogger(), observer: observer)
        manager.add(try SessionConcurrencyTests.tickContainer())
        manager.register(tagHandler: ClosureTagHandler { _ in }, for: "com.example.Tick")
        let layer = manager.makeDataLayer()
        session.withLock { $0 = layer }
        let result = layer.push(event: "unmatched")
        #expect(markedWhenObserved.withLock { $0 } == true)
        #expect(result.events.map(\.eventName) == ["unmatched", "tick"])
        #expect(result.fired.map { $0.parameters["n"] } == [.int(1)])
    }

    /// Handlers run inside the mark of their session's turn, whichever push of the turn fired them.
    @Test func handlersOfNestedPushesRunInsideTheTurnsMark() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try SessionConcurrencyTests.tickContainer())
        let marks = Mutex<[UInt64?]>([])
        manager.register(
            tagHandler: ClosureTagHandler { call in
                marks.withLock { $0.append(DataLayer.enclosingTurns?.turn(of: ObjectIdentifier(call.dataLayer))) }
                guard case .int(let n)? = call.arguments["n"], n < 1 else { return }
                call.dataLayer.push(event: "unmatched")
                call.dataLayer.push(event: "tick", parameters: ["n": .int(n + 1)])
            },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        session.push(event: "tick", parameters: ["n": 0])
        let seen = marks.withLock { $0 }
        #expect(seen.count == 2)
        #expect(seen.allSatisfy { $0 != nil } && Set(seen).count == 1)
        #expect(DataLayer.enclosingTurns == nil)
    }
}
