import ContainerKit

// The seam until ContainerKit's own `PushTrace` is on main: the members of it the debug page reads, with its
// names, built from what a `PushResult` reports (the fired tags and their records; no tag that did not fire,
// no variable, no data-layer change). Adopting the library's trace deletes this file and `DebugTracer.trace(of:)`.

/// What one push did, as the debug page shows it (the subset of ContainerKit's `PushTrace` it reads).
struct PushTrace: Sendable, Hashable {
    var event: String?
    var eventID: String?
    var message: Value
    var outcome: Outcome
    var refusal: Problem?
    var changes: [Change] = []
    var evaluations: [Evaluation] = []
    var records: [Record] = []
    var dataLayer: Value = .undefined

    enum Outcome: String, Sendable, Hashable {
        case applied, duplicate, refused, deferred, dropped
    }

    struct Problem: Sendable, Hashable {
        var code: String
        var message: String
    }

    struct Change: Sendable, Hashable {
        var key: String
        var before: Value?
        var after: Value?
    }

    struct Evaluation: Sendable, Hashable {
        var containerID: String
        var containerVersion: String
        var event: String?
        var nested: Bool = false
        var tags: [Tag] = []
        var variables: [Variable] = []
    }

    struct Tag: Sendable, Hashable {
        enum Outcome: String, Sendable, Hashable {
            case fired, pending, unsupported, blocked
            case blockedByConsent = "blocked_by_consent"
            case notFired = "not_fired"
            case paused
            case alreadyFired = "already_fired"
            case duplicate
        }
        var index: Int
        var tagID: Int?
        var name: String?
        var function: String?
        var classPath: String?
        var outcome: Outcome
        var status: Status?
        var arguments: Value?
        var blockedBy: [Rule]?
        var failedConditions: [Condition]?
        var recordIDs: [String]?
        var reason: String?
    }

    struct Status: Sendable, Hashable {
        var name: String
        var message: String?
    }

    struct Rule: Sendable, Hashable {
        var index: Int
        var name: String?
    }

    struct Condition: Sendable, Hashable {
        enum Role: String, Sendable, Hashable { case `if`, unless }
        var rule: Rule
        var predicate: Int
        var role: Role
        var variable: String?
        var `operator`: String
        var negate: Bool
        var ignoreCase: Bool
        var left: Value?
        var right: Value?
        var note: String?
    }

    struct Variable: Sendable, Hashable {
        var index: Int
        var name: String?
        var function: String
        var value: Value?
    }

    struct Record: Sendable, Hashable {
        enum State: String, Sendable, Hashable { case sent, held }
        enum Durability: String, Sendable, Hashable { case none, writing, durable, failed, session }
        var containerID: String?
        var tagIndex: Int?
        var tagID: Int?
        var tagName: String?
        var fromPushHook: Bool
        var state: State
        var recordID: String?
        var record: Value
        var durability: Durability
        var durabilityError: String?
    }

    /// Every tag of every evaluation, in order.
    var tags: [Tag] { evaluations.flatMap(\.tags) }
}

extension DebugTracer {
    /// The trace of `result` (a push of `event` with `parameters`), from what the push result reports.
    static func trace(of result: PushResult, event: String, parameters: ValueMap, eventID: String?) -> PushTrace {
        var trace = PushTrace(event: event, eventID: eventID, message: .object(parameters), outcome: .applied)
        if let refusal = result.refusal {
            trace.outcome = .refused
            trace.refusal = PushTrace.Problem(code: refusal.code.rawValue, message: refusal.message)
            return trace
        }
        if result.isDuplicate { trace.outcome = .duplicate }
        if result.deferred { trace.outcome = result.dropped ? .dropped : .deferred }
        for report in result.events {
            var evaluation = PushTrace.Evaluation(
                containerID: report.containerID,
                containerVersion: "",
                event: report.eventName
            )
            for tag in report.fired {
                let outcome: PushTrace.Tag.Outcome
                switch tag.status {
                case .pending: outcome = .pending
                case .unsupported: outcome = .unsupported
                default: outcome = .fired
                }
                evaluation.tags.append(
                    PushTrace.Tag(
                        index: tag.index,
                        tagID: tag.tagID,
                        name: tag.name,
                        function: tag.function,
                        classPath: tag.classPath,
                        outcome: outcome,
                        status: PushTrace.Status(name: tag.status.name, message: tag.status.message),
                        arguments: .object(tag.parameters)
                    )
                )
                let sent = (tag.output?.records ?? []).map { ($0, PushTrace.Record.State.sent) }
                let held = (tag.output?.pendingRecords ?? []).map { ($0, PushTrace.Record.State.held) }
                for (record, state) in sent + held {
                    trace.records.append(
                        PushTrace.Record(
                            containerID: report.containerID,
                            tagIndex: tag.index,
                            tagID: tag.tagID,
                            tagName: tag.name,
                            fromPushHook: false,
                            state: state,
                            recordID: record.recordID,
                            record: record.jsonValue,
                            durability: state == .sent ? .writing : .session
                        )
                    )
                }
            }
            trace.evaluations.append(evaluation)
        }
        return trace
    }
}
