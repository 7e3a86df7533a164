public import Foundation

extension DataLayer {
    /// Pushes an event that happened at `eventTime`, the time its client says (Segment's and RudderStack's
    /// `timestamp`, an app's own clock for an event it sends later), as
    /// ``push(event:parameters:eventID:tracing:)-(String,ValueMap,String?,Bool)`` does otherwise.
    ///
    /// The handlers the push's tags and variables call see the time as ``FunctionCall/eventTime``: the Braze tag
    /// provider stamps its records with it, so an event a phone sends an hour late, or a retry, is recorded when it
    /// happened. Nothing else of the push depends on it: the rules, the variables and an event ID's window see the
    /// push when it is processed. `nil`: the event happens now. Pushes a handler nests inside it happen now too.
    @discardableResult
    public func push(
        event: String,
        parameters: ValueMap = ValueMap(),
        eventID: String? = nil,
        eventTime: Date?,
        tracing: Bool = false
    ) async -> PushResult {
        let time = eventTime?.timeIntervalSince1970
        switch pending(parameters, event: event, eventID: eventID, tracing: tracing, eventTime: time) {
        case .success(let pending): return await push(pending)
        case .failure(let refused): return refused.result
        }
    }

    /// Pushes a message whose event happened at `eventTime` (see ``push(event:parameters:eventID:eventTime:tracing:)``),
    /// as ``push(_:eventID:tracing:)-(ValueMap,String?,Bool)`` does otherwise. A message without an event merges
    /// into the data layer and calls nothing: the time then has no use.
    @discardableResult
    public func push(
        _ message: ValueMap,
        eventID: String? = nil,
        eventTime: Date?,
        tracing: Bool = false
    ) async -> PushResult {
        switch pending(
            message,
            event: nil,
            eventID: eventID,
            tracing: tracing,
            eventTime: eventTime?.timeIntervalSince1970
        ) {
        case .success(let pending): return await push(pending)
        case .failure(let refused): return refused.result
        }
    }
}
