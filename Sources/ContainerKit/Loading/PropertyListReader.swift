import Foundation

/// Reads binary property lists into ``Value``s with `PropertyListSerialization` (XML ones are read by
/// ``XMLPropertyListParser``, which says where an error is).
///
/// Before Foundation sees the bytes, a structural check enforces the depth limit (Foundation's parser
/// recurses) and rejects reference cycles and shared objects that would expand into a huge tree. Conversion:
/// booleans → `.bool`, integers → `.int` (unsigned values above `Int64.max` → `.double`), reals → `.double`,
/// dates → ISO 8601 strings, data → base64 strings, dictionaries → objects with keys sorted (property-list
/// dictionaries have no order).
enum PropertyListReader {
    /// Foundation's parser recurses, so property lists never nest deeper than this, whatever the options say.
    static let depthCeiling = 512

    /// Parses the binary property list that starts at `start` (its magic).
    static func read(
        _ bytes: [UInt8],
        from start: Int,
        file: String?,
        options: LoadOptions
    ) throws(ContainerError) -> Value {
        let depthLimit = min(max(0, options.maximumDepth), depthCeiling)
        // Every JSON value takes at least one byte, so a file at the size limit has at most that many values;
        // a property list may expand (shared objects) to a few times that, no more.
        let weightLimit = max(options.maximumFileSize, 1 << 20).multipliedReportingOverflow(by: 8)
        let limit = weightLimit.overflow ? Int.max / 2 : weightLimit.partialValue
        try bytes.withUnsafeBufferPointer { (buffer) throws(ContainerError) in
            do throws(BinaryPropertyListCheck.Problem) {
                try BinaryPropertyListCheck(buffer, start: start).check(depthLimit: depthLimit, weightLimit: limit)
            } catch {
                switch error {
                case .corrupt(let detail):
                    throw ContainerError(.syntax, "malformed binary property list: \(detail)", file: file)
                case .tooDeep:
                    throw ContainerError(
                        .nestingTooDeep,
                        "arrays and dictionaries nest deeper than the limit of \(depthLimit)",
                        file: file
                    )
                case .tooLarge:
                    throw ContainerError(
                        .tooLarge,
                        "binary property list expands to more than \(limit) values and bytes of text",
                        file: file
                    )
                }
            }
        }

        var format = PropertyListSerialization.PropertyListFormat.binary
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(
                from: Data(bytes[start...]),
                options: [],
                format: &format
            )
        } catch {
            throw ContainerError(.syntax, "malformed binary property list: \(describe(error))", file: file)
        }
        guard format == .binary else { throw ContainerError(.syntax, "malformed binary property list", file: file) }
        var converter = Converter(depthLimit: depthLimit, file: file)
        return try converter.convert(object, depth: 0)
    }

    /// A property list's date as a string: ISO 8601 in UTC, with fractional seconds when it has them (the XML
    /// reader writes its dates the same way).
    static func iso8601String(_ date: Date, formatter: ISO8601DateFormatter = ISO8601DateFormatter()) -> String {
        let fractional = date.timeIntervalSinceReferenceDate.truncatingRemainder(dividingBy: 1) != 0
        let options: ISO8601DateFormatter.Options =
            fractional ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        // Setting the options rebuilds the formatter (about 40 times the cost of using it): only when they change.
        if formatter.formatOptions != options { formatter.formatOptions = options }
        return formatter.string(from: date)
    }

    /// Foundation's description of a parse error, lowercased, without the generic preamble.
    static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        var text = (nsError.userInfo[NSDebugDescriptionErrorKey] as? String) ?? nsError.localizedDescription
        text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        while text.hasSuffix(".") { text.removeLast() }
        guard let first = text.first else { return "cannot be parsed" }
        return first.lowercased() + text.dropFirst()
    }

    private struct Converter {
        let depthLimit: Int
        let file: String?
        var path: [String] = []
        var dateFormatter: ISO8601DateFormatter?

        init(depthLimit: Int, file: String?) {
            self.depthLimit = depthLimit
            self.file = file
        }

        var pointer: String { path.reduce("") { JSONPointer.appending($0, $1) } }

        mutating func convert(_ object: Any, depth: Int) throws(ContainerError) -> Value {
            let type = Swift.type(of: object)
            if type == Bool.self, let b = object as? Bool { return .bool(b) }
            if type == Int.self, let n = object as? Int { return .int(Int64(n)) }
            if type == Int64.self, let n = object as? Int64 { return .int(n) }
            if type == Double.self, let d = object as? Double { return try finite(d) }
            if let s = object as? String { return .string(s) }
            if let n = object as? NSNumber { return try number(n) }
            if let date = object as? Date { return .string(iso8601(date)) }
            if let data = object as? Data { return .string(data.base64EncodedString()) }
            if let list = object as? [Any] {
                guard depth < depthLimit else { throw tooDeep() }
                var elements: [Value] = []
                elements.reserveCapacity(list.count)
                for (index, element) in list.enumerated() {
                    path.append(String(index))
                    elements.append(try convert(element, depth: depth + 1))
                    path.removeLast()
                }
                return .array(elements)
            }
            if let dictionary = object as? [AnyHashable: Any] {
                guard depth < depthLimit else { throw tooDeep() }
                var entries: [(key: String, value: Any)] = []
                entries.reserveCapacity(dictionary.count)
                for (key, value) in dictionary {
                    guard let key = key.base as? String else {
                        throw ContainerError(
                            .syntax,
                            "dictionary key '\(key.base)' is not a string",
                            file: file,
                            pointer: pointer
                        )
                    }
                    entries.append((key, value))
                }
                entries.sort { $0.key < $1.key }
                var map = ValueMap(minimumCapacity: entries.count)
                for entry in entries {
                    path.append(entry.key)
                    map[entry.key] = try convert(entry.value, depth: depth + 1)
                    path.removeLast()
                }
                return .object(map)
            }
            throw ContainerError(
                .syntax,
                "unsupported property list value of type '\(type)'",
                file: file,
                pointer: pointer
            )
        }

        func number(_ n: NSNumber) throws(ContainerError) -> Value {
            if Swift.type(of: n) == Swift.type(of: NSNumber(value: true)) { return .bool(n.boolValue) }
            switch n.objCType.pointee {
            case 0x66, 0x64:  // f, d
                return try finite(n.doubleValue)
            case 0x51, 0x4C, 0x49, 0x53, 0x43:  // Q, L, I, S, C: unsigned
                let u = n.uint64Value
                return u <= UInt64(Int64.max) ? .int(Int64(u)) : .double(Double(u))
            default:
                return .int(n.int64Value)
            }
        }

        /// JSON has no NaN or infinity, and neither do containers.
        func finite(_ d: Double) throws(ContainerError) -> Value {
            guard d.isFinite else {
                throw ContainerError(.syntax, "real number '\(d)' is not finite", file: file, pointer: pointer)
            }
            return .double(d)
        }

        mutating func iso8601(_ date: Date) -> String {
            let formatter = dateFormatter ?? ISO8601DateFormatter()
            dateFormatter = formatter
            return PropertyListReader.iso8601String(date, formatter: formatter)
        }

        func tooDeep() -> ContainerError {
            ContainerError(
                .nestingTooDeep,
                "arrays and dictionaries nest deeper than the limit of \(depthLimit)",
                file: file,
                pointer: pointer
            )
        }
    }
}

// MARK: - Structural checks

/// Walks a binary property list's object graph (bplist00) without building anything: bounds, cycles,
/// depth and expanded size.
struct BinaryPropertyListCheck {
    enum Problem: Error {
        case corrupt(String)
        case tooDeep
        case tooLarge
    }

    private let p: UnsafePointer<UInt8>
    private let count: Int

    init(_ buffer: UnsafeBufferPointer<UInt8>, start: Int) {
        let count = max(0, buffer.count - start)
        self.p = (buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!) + (count > 0 ? start : 0)
        self.count = count
    }

    private func integer(at offset: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for k in 0..<size { value = value << 8 | UInt64(p[offset + k]) }
        return value
    }

    /// A name for a marker byte that property lists do not allow, for messages.
    static func typeName(_ marker: UInt8) -> String {
        switch marker >> 4 {
        case 0x0: return marker == 0x00 ? "null" : marker == 0x0F ? "fill" : "0x\(String(marker, radix: 16))"
        case 0x7: return "utf-8 string"
        case 0x8: return "uid"
        case 0xB: return "ordered set"
        case 0xC: return "set"
        default: return "0x\(String(marker, radix: 16))"
        }
    }

    func check(depthLimit: Int, weightLimit: Int) throws(Problem) {
        guard count >= 8 + 32 else { throw .corrupt("file is too short") }
        guard p[6] == 0x30, p[7] == 0x30 else { throw .corrupt("unsupported version") }
        let trailer = count - 32
        let offsetSize = Int(p[trailer + 6])
        let refSize = Int(p[trailer + 7])
        let objectCount64 = integer(at: trailer + 8, size: 8)
        let top64 = integer(at: trailer + 16, size: 8)
        let tableOffset64 = integer(at: trailer + 24, size: 8)
        guard [1, 2, 4, 8].contains(offsetSize), [1, 2, 4, 8].contains(refSize) else {
            throw .corrupt("invalid offset or reference size in the trailer")
        }
        guard objectCount64 >= 1, objectCount64 <= UInt64(count), top64 < objectCount64 else {
            throw .corrupt("invalid object count or top object in the trailer")
        }
        let objectCount = Int(objectCount64)
        guard tableOffset64 >= 8, tableOffset64 <= UInt64(trailer),
            UInt64(trailer) - tableOffset64 >= objectCount64 * UInt64(offsetSize)
        else { throw .corrupt("offset table is out of bounds") }
        let tableOffset = Int(tableOffset64)
        let referenceLimit: UInt64 = refSize == 8 ? .max : (UInt64(1) << UInt64(8 * refSize))
        if objectCount64 > referenceLimit {
            throw .corrupt("object references are too small for the object count")
        }

        struct Info {
            var refsStart: Int
            var refCount: Int
            var weight: Int
        }

        /// Reads object `k`'s header; containers get their reference list, scalars their weight.
        func info(_ k: Int) throws(Problem) -> Info {
            let offset64 = integer(at: tableOffset + k * offsetSize, size: offsetSize)
            guard offset64 >= 8, offset64 < UInt64(trailer) else { throw .corrupt("object \(k) is out of bounds") }
            let offset = Int(offset64)
            let marker = p[offset]
            let type = marker >> 4
            let low = Int(marker & 0x0F)
            var start = offset + 1
            /// The object's length: the low nibble, or an integer object that follows.
            func length() throws(Problem) -> Int {
                guard low == 0x0F else { return low }
                guard start < trailer, p[start] >> 4 == 0x1 else { throw .corrupt("object \(k) has an invalid length") }
                let size = 1 << Int(p[start] & 0x0F)
                guard size <= 8, start + 1 + size <= trailer else {
                    throw .corrupt("object \(k) has an invalid length")
                }
                let value = integer(at: start + 1, size: size)
                start += 1 + size
                guard value <= UInt64(count) else { throw .corrupt("object \(k) is out of bounds") }
                return Int(value)
            }
            var payload: Int
            var refs = 0
            // Only the types a property list can hold get past here: Foundation crashes bridging some of the
            // others (a set, marker 0xC, dies with SIGSEGV), so they never reach it.
            switch type {
            case 0x0 where low == 0x8 || low == 0x9: payload = 0  // false, true
            case 0x1 where low <= 4: payload = 1 << low  // integers of 1 to 16 bytes
            case 0x2 where low == 2 || low == 3: payload = 1 << low  // reals of 4 or 8 bytes
            case 0x3 where low == 3: payload = 8  // date
            case 0x4, 0x5: payload = try length()  // data, ascii string
            case 0x6: payload = try length() * 2  // utf-16 string
            case 0xA:  // array
                refs = try length()
                payload = refs * refSize
            case 0xD:  // dictionary
                refs = try length() * 2
                payload = refs * refSize
            default:
                throw .corrupt("object \(k) has type \(Self.typeName(marker)), which a property list cannot hold")
            }
            guard payload <= trailer - start else { throw .corrupt("object \(k) is out of bounds") }
            if refs > 0 || type >= 0xA { return Info(refsStart: start, refCount: refs, weight: 1) }
            return Info(refsStart: start, refCount: -1, weight: 1 + payload)
        }

        struct Step {
            var object: Int
            var info: Info
            var next: Int
            var depth: Int
            var weight: Int
        }
        // 0: not seen, 1: on the current path, 2: done.
        var state = [UInt8](repeating: 0, count: objectCount)
        var depthOf = [Int32](repeating: 0, count: objectCount)
        var weightOf = [Int](repeating: 0, count: objectCount)
        let top = Int(top64)
        let rootInfo = try info(top)
        if rootInfo.refCount < 0 { return }
        guard depthLimit >= 1 else { throw .tooDeep }
        var stack = [Step(object: top, info: rootInfo, next: 0, depth: 0, weight: 1)]
        state[top] = 1
        while !stack.isEmpty {
            let last = stack.count - 1
            let step = stack[last]
            if step.next < step.info.refCount {
                stack[last].next += 1
                let ref64 = integer(at: step.info.refsStart + step.next * refSize, size: refSize)
                guard ref64 < objectCount64 else { throw .corrupt("object \(step.object) refers to a missing object") }
                let ref = Int(ref64)
                switch state[ref] {
                case 1:
                    throw .corrupt("object \(ref) contains itself")
                case 2:
                    guard stack.count + Int(depthOf[ref]) <= depthLimit else { throw .tooDeep }
                    stack[last].depth = max(step.depth, Int(depthOf[ref]))
                    stack[last].weight = min(weightLimit + 1, step.weight + weightOf[ref])
                default:
                    let child = try info(ref)
                    if child.refCount < 0 {
                        state[ref] = 2
                        weightOf[ref] = child.weight
                        stack[last].weight = min(weightLimit + 1, step.weight + child.weight)
                    } else {
                        guard stack.count + 1 <= depthLimit else { throw .tooDeep }
                        state[ref] = 1
                        stack.append(Step(object: ref, info: child, next: 0, depth: 0, weight: 1))
                    }
                }
                if stack[last].weight > weightLimit { throw .tooLarge }
            } else {
                stack.removeLast()
                state[step.object] = 2
                depthOf[step.object] = Int32(step.depth + 1)
                weightOf[step.object] = step.weight
                if let parent = stack.indices.last {
                    stack[parent].depth = max(stack[parent].depth, step.depth + 1)
                    stack[parent].weight = min(weightLimit + 1, stack[parent].weight + step.weight)
                    if stack[parent].weight > weightLimit { throw .tooLarge }
                }
            }
        }
    }
}
