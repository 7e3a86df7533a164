public import Foundation

/// One call from a container to host code: a Function Call tag firing, or a Function Call variable
/// (macro) being evaluated.
public struct FunctionCall: Sendable {
    /// The class path (v5 `vtp_classPath`) or legacy function name (`function_call_macro_name`) called.
    public var name: String { origin.name }
    /// The evaluated argument map: keys and values as the container lists them, with types kept
    /// (a parameter that comes from a number is a number). Undefined values are left out.
    public internal(set) var arguments: ValueMap
    /// The event being evaluated, or `nil` for a push without an event (typed getters).
    public let eventName: String?
    /// When the event happened, when its push said so (``DataLayer/push(event:parameters:eventID:eventTime:tracing:)``:
    /// the time a client gave, such as Segment's `timestamp`); `nil`: the event is happening now. A handler that
    /// stamps what it makes with a time uses this one when it is given.
    public let eventTime: Date?
    /// The ID of the container that made the call.
    public var containerID: String { origin.containerID }
    /// The tag's `tag_id`, for tag calls that have one.
    public var tagID: Int? { origin.tagID }
    /// The tag's or variable's display name, when the container has one.
    public var displayName: String? { origin.displayName }
    /// The session the call is made for. Handlers may read and write its attributes and push to it
    /// (a push made from a handler is queued and processed after the current one). The push being evaluated reads
    /// the session as it found it: a context or user property a handler changes applies from the next push.
    public let dataLayer: DataLayer
    /// Where the handler should write its diagnostics.
    public var logger: any DiagnosticLogger { loggerOverride ?? dataLayer.tagManager.logger }
    /// A logger other than the session's tag manager's, when the creator gave one.
    private let loggerOverride: (any DiagnosticLogger)?
    /// What the call is to (class path, container, tag), behind one reference: a planned tag's is made once
    /// with its ``CallPlan``, so a call retains one object instead of three strings.
    let origin: Origin

    /// The constant part of a call: what is called, and from where.
    final class Origin: Sendable {
        let name: String
        let containerID: String
        let tagID: Int?
        let displayName: String?

        init(name: String, containerID: String, tagID: Int?, displayName: String?) {
            self.name = name
            self.containerID = containerID
            self.tagID = tagID
            self.displayName = displayName
        }
    }

    /// Creates a call; the runtime makes these, tests of handlers may too.
    public init(
        name: String,
        arguments: ValueMap,
        eventName: String?,
        containerID: String,
        tagID: Int? = nil,
        displayName: String? = nil,
        eventTime: Date? = nil,
        dataLayer: DataLayer,
        logger: (any DiagnosticLogger)? = nil
    ) {
        self.init(
            origin: Origin(name: name, containerID: containerID, tagID: tagID, displayName: displayName),
            arguments: arguments,
            eventName: eventName,
            eventTime: eventTime,
            dataLayer: dataLayer,
            logger: logger
        )
    }

    /// A call the evaluation makes for `session` (the session it was handed, which it cannot read itself).
    init(origin: Origin, arguments: consuming ValueMap, eventName: String?, session: CallSession) {
        self.init(
            origin: origin,
            arguments: arguments,
            eventName: eventName,
            eventTime: session.eventTime.map(Date.init(timeIntervalSince1970:)),
            dataLayer: session.dataLayer
        )
    }

    init(
        origin: Origin,
        arguments: consuming ValueMap,
        eventName: String?,
        eventTime: Date? = nil,
        dataLayer: DataLayer,
        logger: (any DiagnosticLogger)? = nil
    ) {
        self.origin = origin
        self.arguments = arguments
        self.eventName = eventName
        self.eventTime = eventTime
        self.dataLayer = dataLayer
        self.loggerOverride = logger
    }
}

/// The session an evaluation makes its calls for, as the session handed it: what a ``FunctionCall`` carries to its
/// handler as ``FunctionCall/dataLayer``. The reference is private to this file, so an evaluation can pass the
/// session on to the handlers it calls but can neither read the session's state nor call it: what it reads of the
/// session comes in its ``SessionView``.
struct CallSession: Sendable {
    fileprivate let dataLayer: DataLayer
    /// When the push's event happened, if its push said (seconds since 1970): ``FunctionCall/eventTime``.
    let eventTime: Double?

    init(_ dataLayer: DataLayer, eventTime: Double? = nil) {
        self.dataLayer = dataLayer
        self.eventTime = eventTime
    }

    /// The session's identifier (a constant), for the evaluation's log messages.
    var sessionID: String { dataLayer.sessionID }
}

/// Host code that a Function Call tag (`__funct`, legacy `_func`) calls, registered on a ``TagManager``
/// under a class path or function name.
///
/// ```swift
/// struct AnalyticsHandler: FunctionCallTagHandler {
///     func execute(_ call: FunctionCall) throws {
///         print(call.name, call.arguments)
///     }
/// }
/// tagManager.register(tagHandler: AnalyticsHandler(), for: "com.example.AnalyticsTag")
/// ```
///
/// A handler that throws is contained: the error is logged and reported for that tag, and the other
/// tags of the event still fire.
public protocol FunctionCallTagHandler: Sendable {
    /// Runs the tag.
    func execute(_ call: FunctionCall) throws

    /// Runs the tag and says what it produced. The runtime calls this; the default runs
    /// ``execute(_:)`` and reports nothing. Handlers that produce records (and can say when they are
    /// durable) implement it, and their `execute` calls it.
    func perform(_ call: FunctionCall) throws -> TagOutput
}

extension FunctionCallTagHandler {
    /// Runs ``execute(_:)``; reports nothing.
    public func perform(_ call: FunctionCall) throws -> TagOutput {
        try execute(call)
        return .none
    }
}

/// Host code that a Function Call variable (`__funcm`, legacy `_func` macro) calls for its value.
public protocol FunctionCallMacroHandler: Sendable {
    /// Returns the variable's value. Throwing yields `undefined` (and the variable's default, if any).
    func value(for call: FunctionCall) throws -> Value
}

/// Adapts a closure to ``FunctionCallTagHandler``.
public struct ClosureTagHandler: FunctionCallTagHandler {
    private let body: @Sendable (FunctionCall) throws -> Void
    /// Creates a handler that runs `body`.
    public init(_ body: @escaping @Sendable (FunctionCall) throws -> Void) { self.body = body }
    public func execute(_ call: FunctionCall) throws { try body(call) }
}

/// Adapts a closure to ``FunctionCallMacroHandler``.
public struct ClosureMacroHandler: FunctionCallMacroHandler {
    private let body: @Sendable (FunctionCall) throws -> Value
    /// Creates a handler that returns what `body` returns.
    public init(_ body: @escaping @Sendable (FunctionCall) throws -> Value) { self.body = body }
    public func value(for call: FunctionCall) throws -> Value { try body(call) }
}
