extension FiredTag {
    /// The tag as `containerkit run --format json` prints it: `tag_id`, `name`, `function`, `class_path`,
    /// `parameters`, `status`, then `message` for `failed`, `dropped` and `pending`, and the handler's `records`,
    /// `pending_records` (what it holds for later) and `problems` when it reported any, and `unknown_inputs`
    /// (``unknownInputs``) when there are any.
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
            if !output.pendingRecords.isEmpty {
                map["pending_records"] = .array(output.pendingRecords.map(\.jsonValue))
            }
            if !output.problems.isEmpty { map["problems"] = .array(output.problems.map(Value.string)) }
        }
        if !unknownInputs.isEmpty { map["unknown_inputs"] = .array(unknownInputs.map(Value.string)) }
        return .object(map)
    }
}

extension FiredTag {
    /// Appends the compact JSON text of ``jsonValue`` to `bytes`, written straight to bytes (records with
    /// their own ``TagRecord/appendJSON(to:)``): for answers sent for every push.
    public func appendJSON(to bytes: inout [UInt8]) {
        var unused: [UInt8]? = nil
        appendJSON(to: &bytes, copyingRecordsTo: &unused)
    }

    /// ``appendJSON(to:)``, also appending each record's JSON, comma-separated, to `records` when it is not
    /// `nil`: a push's answer lists every record twice and encodes each once.
    func appendJSON(to bytes: inout [UInt8], copyingRecordsTo records: inout [UInt8]?) {
        append("{\"tag_id\":", to: &bytes)
        if let tagID { JSONWriter.write(.int(Int64(tagID)), into: &bytes) } else { append("null", to: &bytes) }
        append(",\"name\":", to: &bytes)
        if let name { JSONWriter.writeString(name, into: &bytes) } else { append("null", to: &bytes) }
        append(",\"function\":", to: &bytes)
        JSONWriter.writeString(function, into: &bytes)
        append(",\"class_path\":", to: &bytes)
        if let classPath { JSONWriter.writeString(classPath, into: &bytes) } else { append("null", to: &bytes) }
        append(",\"parameters\":", to: &bytes)
        JSONWriter.write(.object(parameters), into: &bytes)
        append(",\"status\":", to: &bytes)
        JSONWriter.writeString(status.name, into: &bytes)
        if let message = status.message {
            append(",\"message\":", to: &bytes)
            JSONWriter.writeString(message, into: &bytes)
        }
        if let output {
            if !output.records.isEmpty {
                append(",\"records\":", to: &bytes)
                FiredTag.appendJSON(
                    records: output.records,
                    encoded: output.recordsJSON,
                    to: &bytes,
                    copyingTo: &records
                )
            }
            if !output.pendingRecords.isEmpty {
                append(",\"pending_records\":", to: &bytes)
                FiredTag.appendJSON(records: output.pendingRecords, to: &bytes)
            }
            if !output.problems.isEmpty {
                append(",\"problems\":", to: &bytes)
                JSONWriter.write(.array(output.problems.map(Value.string)), into: &bytes)
            }
        }
        if !unknownInputs.isEmpty {
            append(",\"unknown_inputs\":", to: &bytes)
            JSONWriter.write(.array(unknownInputs.map(Value.string)), into: &bytes)
        }
        bytes.append(0x7D)
    }

    /// Appends `records` as a JSON array.
    public static func appendJSON(records: some Sequence<any TagRecord>, to bytes: inout [UInt8]) {
        var unused: [UInt8]? = nil
        appendJSON(records: Array(records), encoded: nil, to: &bytes, copyingTo: &unused)
    }

    /// Appends `records` as a JSON array and, when `copies` is not `nil`, each record's JSON to it too,
    /// comma-separated. Each record's JSON is taken from `encoded` (what the sink stored) when it covers
    /// them, else encoded here — once either way.
    static func appendJSON(
        records: [any TagRecord],
        encoded: RecordsJSON?,
        to bytes: inout [UInt8],
        copyingTo copies: inout [UInt8]?
    ) {
        bytes.append(0x5B)
        let encoded = encoded?.count == records.count ? encoded : nil
        for index in records.indices {
            if index > 0 { bytes.append(0x2C) }
            let start = bytes.count
            if let encoded {
                bytes.append(contentsOf: encoded[index])
            } else {
                records[index].appendJSON(to: &bytes)
            }
            if copies?.isEmpty == false { copies?.append(0x2C) }
            copies?.append(contentsOf: bytes[start...])
        }
        bytes.append(0x5D)
    }

    private func append(_ literal: StaticString, to bytes: inout [UInt8]) {
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
}

extension PushResult {
    /// Appends the compact JSON text of ``jsonValue`` to `bytes`, written straight to bytes.
    public func appendJSON(to bytes: inout [UInt8]) {
        let fired = self.fired
        appendMembers(fired: fired, to: &bytes)
        bytes.append(0x7D)
    }

    /// Appends `{"fired":[…],"records":[…]` and the `problems` / `deferred` / `loop_guard_tripped` members,
    /// without the closing brace, so that a caller can add members of its own.
    public func appendJSONMembers(to bytes: inout [UInt8]) { appendMembers(fired: fired, to: &bytes) }

    private func appendMembers(fired: [FiredTag], to bytes: inout [UInt8]) {
        if let original = duplicateOf { return appendDuplicateMembers(original, to: &bytes) }
        bytes.append(contentsOf: #"{"fired":["#.utf8)
        // Each record is encoded once, inside its tag, and copied to the push's own list.
        var records: [UInt8]? = []
        for (index, tag) in fired.enumerated() {
            if index > 0 { bytes.append(0x2C) }
            tag.appendJSON(to: &bytes, copyingRecordsTo: &records)
        }
        bytes.append(contentsOf: #"],"records":["#.utf8)
        bytes.append(contentsOf: records ?? [])
        var problems: [String] = []
        for output in hookOutputs {
            problems += output.problems
            let encoded = output.recordsJSON
            for (index, record) in output.records.enumerated() {
                if bytes.last != 0x5B { bytes.append(0x2C) }
                if let encoded {
                    bytes.append(contentsOf: encoded[index])
                } else {
                    record.appendJSON(to: &bytes)
                }
            }
        }
        bytes.append(0x5D)
        if !problems.isEmpty {
            bytes.append(contentsOf: #","problems":"#.utf8)
            JSONWriter.write(.array(problems.map(Value.string)), into: &bytes)
        }
        if deferred { bytes.append(contentsOf: #","deferred":true"#.utf8) }
        if loopGuardTripped { bytes.append(contentsOf: #","loop_guard_tripped":true"#.utf8) }
    }
}

extension PushResult {
    /// The push as `containerkit run --format json` prints it: `fired` (each tag's ``FiredTag/jsonValue``),
    /// `records` (every record the push's tags produced, in order, then those its push hooks added — the
    /// Braze provider's pending records, released), `problems` (what the push hooks reported, such as
    /// pending records dropped for their age) when there are any, and `deferred` / `loop_guard_tripped` when
    /// they are true.
    public var jsonValue: Value {
        if let original = duplicateOf { return duplicateJSONValue(original) }
        var map = ValueMap(minimumCapacity: 5)
        let fired = self.fired
        let hooks = hookOutputs
        map["fired"] = .array(fired.map(\.jsonValue))
        map["records"] = .array(
            (fired.flatMap { $0.output?.records ?? [] } + hooks.flatMap(\.records)).map(\.jsonValue)
        )
        let problems = hooks.flatMap(\.problems)
        if !problems.isEmpty { map["problems"] = .array(problems.map(Value.string)) }
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
