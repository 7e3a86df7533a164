extension FiredTag {
    /// The tag as `containerkit run --format json` prints it: `tag_id`, `name`, `function`, `class_path`,
    /// `parameters`, `status`, then `message` for `failed` and `dropped`, and the handler's `records` and
    /// `problems` when it reported any.
    public var jsonValue: Value {
        var map = ValueMap(minimumCapacity: 9)
        map["tag_id"] = tagID.map { .int(Int64($0)) } ?? .null
        map["name"] = name.map(Value.string) ?? .null
        map["function"] = .string(function)
        map["class_path"] = classPath.map(Value.string) ?? .null
        map["parameters"] = .object(parameters)
        map["status"] = .string(status.name)
        if let message = status.message { map["message"] = .string(message) }
        if let output {
            if !output.records.isEmpty { map["records"] = .array(output.records.map(\.jsonValue)) }
            if !output.problems.isEmpty { map["problems"] = .array(output.problems.map(Value.string)) }
        }
        return .object(map)
    }
}

extension PushResult {
    /// The push as `containerkit run --format json` prints it: `fired` (each tag's ``FiredTag/jsonValue``),
    /// `records` (every record the push's tags produced, in order), and `deferred` / `loop_guard_tripped`
    /// when they are true.
    public var jsonValue: Value {
        var map = ValueMap(minimumCapacity: 4)
        let fired = self.fired
        map["fired"] = .array(fired.map(\.jsonValue))
        map["records"] = .array(fired.flatMap { $0.output?.records ?? [] }.map(\.jsonValue))
        if deferred { map["deferred"] = true }
        if loopGuardTripped { map["loop_guard_tripped"] = true }
        return .object(map)
    }
}

extension FiredTag: Encodable {
    /// Encodes ``jsonValue``.
    public func encode(to encoder: any Encoder) throws { try jsonValue.encode(to: encoder) }
}

extension PushResult: Encodable {
    /// Encodes ``jsonValue``.
    public func encode(to encoder: any Encoder) throws { try jsonValue.encode(to: encoder) }
}
