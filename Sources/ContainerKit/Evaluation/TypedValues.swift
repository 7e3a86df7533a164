/// Typed getters over value-collection macros and flat values, with GTM's defaults for missing keys:
/// `""`, `false`, `0`, `0`.
extension Container {
    /// The value of the variable (macro) named `key`, or of the flat value `key`; `.undefined` when the
    /// container has neither. Evaluated against an empty data layer and the host's client context.
    public func value(forKey key: String) -> Value {
        let session = TagManager(logger: StandardErrorLogger(minimumLevel: .none)).makeDataLayer()
        return value(forKey: key, in: session)
    }

    /// The value of the variable named `key`, evaluated against `session`'s data layer and context.
    public func value(forKey key: String, in session: DataLayer) -> Value {
        if let index = program.macroByName[key] {
            var evaluation = Evaluation(
                container: SessionRuntime.ContainerHold(storage),
                message: ValueMap(),
                model: session.model,
                eventName: nil,
                eventNumber: 0,
                session: session.view,
                runtime: SessionRuntime(
                    generation: 0,
                    snapshot: session.tagManager.snapshot,
                    containers: [],
                    context: session.contextBox
                ),
                recordTrace: false
            )
            return evaluation.value(ofMacro: index)
        }
        if let flat = program.flatValues[key] { return flat }
        session.tagManager.logger.error(
            "invalid macro: the container has no such variable",
            metadata: ["container": id, "variable": key]
        )
        return .undefined
    }

    /// The string value of `key`, or `""`.
    public func string(forKey key: String) -> String { TypedValue.string(value(forKey: key)) }
    /// The boolean value of `key`, or `false`.
    public func bool(forKey key: String) -> Bool { value(forKey: key).gtmBool }
    /// The numeric value of `key`, or `0`.
    public func double(forKey key: String) -> Double { TypedValue.double(value(forKey: key)) }
    /// The integer value of `key` (truncated toward zero), or `0`.
    public func int64(forKey key: String) -> Int64 { TypedValue.int64(value(forKey: key)) }
}

extension DataLayer {
    /// The value of the variable named `key` in the live container `containerID` (or the first live
    /// container that has it), evaluated against this session.
    public func value(forKey key: String, containerID: String? = nil) -> Value {
        let candidates = tagManager.containers.filter { containerID == nil || $0.id == containerID }
        let container =
            candidates.first { $0.program.macroByName[key] != nil || $0.program.flatValues[key] != nil }
            ?? candidates.first
        guard let container else { return .undefined }
        return container.value(forKey: key, in: self)
    }

    /// The string value of `key`, or `""`.
    public func string(forKey key: String, containerID: String? = nil) -> String {
        TypedValue.string(value(forKey: key, containerID: containerID))
    }
    /// The boolean value of `key`, or `false`.
    public func bool(forKey key: String, containerID: String? = nil) -> Bool {
        value(forKey: key, containerID: containerID).gtmBool
    }
    /// The numeric value of `key`, or `0`.
    public func double(forKey key: String, containerID: String? = nil) -> Double {
        TypedValue.double(value(forKey: key, containerID: containerID))
    }
    /// The integer value of `key`, or `0`.
    public func int64(forKey key: String, containerID: String? = nil) -> Int64 {
        TypedValue.int64(value(forKey: key, containerID: containerID))
    }
}

enum TypedValue {
    static func string(_ value: Value) -> String {
        switch value {
        case .undefined, .null: return ""
        default: return value.jsString
        }
    }

    static func double(_ value: Value) -> Double {
        if case .bool(let b) = value { return b ? 1 : 0 }
        return value.jsNumber ?? 0
    }

    static func int64(_ value: Value) -> Int64 {
        if case .int(let i) = value { return i }
        let d = double(value)
        guard d.isFinite, d > -9.2e18, d < 9.2e18 else { return 0 }
        return Int64(d)
    }
}
