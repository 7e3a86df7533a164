import ContainerKit
import Testing

@testable import TagServiceCore

/// ``BatchAnswer``: items written as the events are pushed, and a failed wait that refuses only the events
/// whose own records are not durable.
@Suite struct BatchAnswerTests {
    /// A durable queue stand-in whose writes of `failing` tickets failed.
    final class Tickets: DurabilitySource {
        let failing: Set<UInt64>
        init(failing: Set<UInt64>) { self.failing = failing }
        func waitUntilDurable(ticket: UInt64) async throws(DurabilityError) {
            if failing.contains(ticket) { throw DurabilityError(.diskFull, "ticket \(ticket) was not written") }
        }
    }

    @Test func aFailedWaitRefusesInItsPlaceOnlyAnEventWhoseOwnRecordsAreNotDurable() async throws {
        let tickets = Tickets(failing: [2])
        let pushed = await TagManager().makeDataLayer().push(event: "played song")
        var answer = BatchAnswer(events: 4)
        answer.appendPushed(pushed, userID: "ada", durable: true, tokens: [DurabilityToken(source: tickets, ticket: 1)])
        answer.appendRefused(APIError(.missingField, "'event' is required"), userID: "bob")
        answer.appendPushed(
            pushed,
            userID: "cy",
            durable: true,
            tokens: [DurabilityToken(source: tickets, ticket: 1), DurabilityToken(source: tickets, ticket: 2)]
        )
        answer.appendPushed(pushed, userID: "dee", durable: true)
        #expect(answer.tokens.map(\.ticket) == [1, 1, 2])

        let refusal = APIError(.notDurable, "the event's records could not be made durable now; retry later")
        await answer.refuseUndurable(refusal)
        let body = try #require(try Value(jsonBytes: answer.body()).objectValue)
        #expect(body["accepted"] == 2)
        #expect(body["refused"] == 2)
        let items = body.batchResults
        #expect(items.map { $0["status"] } == [200, 400, .int(Int64(refusal.status.code)), 200])
        #expect(items.map { $0["user_id"]?.stringValue } == ["ada", "bob", "cy", "dee"])
        #expect(
            items.map { $0["error"]?.objectValue?["code"]?.stringValue } == [
                nil, "missing_field", refusal.code.rawValue, nil,
            ]
        )
        #expect(items[0]["durable"] == true && items[0]["fired"] == .array([]))
    }

    @Test func aQueueThatDoesNotRunRefusesEveryPushedEvent() async throws {
        let pushed = await TagManager().makeDataLayer().push(event: "played song")
        var answer = BatchAnswer(events: 2)
        answer.appendPushed(pushed, userID: "ada", durable: true)
        answer.appendRefused(APIError(.missingField, "'event' is required"), userID: nil)
        await answer.refuseUndurable(APIError(.queueNotRunning, "the record queue is not running"))
        let body = try #require(try Value(jsonBytes: answer.body()).objectValue)
        #expect(body["accepted"] == 0)
        #expect(body["refused"] == 2)
        #expect(
            body.batchResults.map { $0["error"]?.objectValue?["code"]?.stringValue } == [
                "queue_not_running", "missing_field",
            ]
        )
        #expect(body.batchResults.map { $0["user_id"]?.stringValue } == ["ada", nil])
    }
}
