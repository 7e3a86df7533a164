/// A value as Google Tag Manager sees it: what a container literal, a data-layer push or a macro produces.
///
/// `Value` is the one value type of ContainerKit. It keeps JSON's types apart (an integer stays an integer,
/// a boolean never becomes a number) and adds JavaScript's `undefined`, which GTM uses for "no value":
/// a macro whose data-layer key is missing evaluates to `.undefined`, and a function-call argument whose
/// value is undefined is left out of the argument map.
///
/// In a data-layer push, `.undefined` is also the *not present* sentinel: it leaves the existing value
/// (or array element) untouched, while `.null` overwrites it.
public enum Value: Sendable, Hashable {
    /// JavaScript's `undefined`: no value. Also the data layer's "not present" sentinel.
    case undefined
    /// JSON `null`.
    case null
    /// A boolean.
    case bool(Bool)
    /// A whole number that came from an integer literal.
    case int(Int64)
    /// A floating-point number.
    case double(Double)
    /// A string.
    case string(String)
    /// An ordered list.
    case array([Value])
    /// A map with string keys that remembers insertion order.
    case object(ValueMap)
}

extension Value {
    /// JSON equality, with strings (and map keys) compared by their UTF-8 bytes as JavaScript compares
    /// code units: `.string("caf\u{E9}")` is not `.string("cafe\u{301}")`.
    public static func == (lhs: Value, rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.undefined, .undefined), (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.string(let a), .string(let b)): return a.hasSameBytes(as: b)
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }

    /// Whether this is `.undefined`.
    public var isUndefined: Bool {
        if case .undefined = self { return true }
        return false
    }

    /// The string payload, if this is a `.string`.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The map payload, if this is an `.object`.
    public var objectValue: ValueMap? {
        if case .object(let m) = self { return m }
        return nil
    }

    /// The list payload, if this is an `.array`.
    public var arrayValue: [Value]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The boolean payload, if this is a `.bool`.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// A numeric payload as a `Double`, if this is an `.int` or a `.double`.
    public var numberValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The name of this value's type, for messages: `"string"`, `"number"`, `"boolean"`, ….
    public var typeName: String {
        switch self {
        case .undefined: return "undefined"
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Reads a nested value by path segments, walking maps (and arrays by numeric index).
    ///
    /// Returns `.undefined` when a segment is missing or an intermediate value cannot be walked.
    public func value(atPath segments: [String]) -> Value {
        // By index: `for segment in segments` copies the array into its iterator, a retain of the key path
        // every session's reads of a variable share.
        var current = self
        var i = 0
        while i < segments.count {
            guard let next = current.child(segments[i]) else { return .undefined }
            current = next
            i += 1
        }
        return current
    }

    /// Reads a nested value by path segments from any collection of them (an array takes the overload above).
    public func value(atPath segments: some Collection<String>) -> Value {
        var current = self
        for segment in segments {
            guard let next = current.child(segment) else { return .undefined }
            current = next
        }
        return current
    }

    /// Reads a nested value as gtm.js reads a version-2 data-layer variable (`a.b.c`, property by property): a
    /// `null` on the way gives `false` (not undefined, so a variable's default value does not apply), an undefined
    /// one gives undefined; an array or a string also has its `length` and its elements by index (a string's
    /// elements are its UTF-16 code units, as one-character strings).
    ///
    /// `nullOnTheWay` is what a `null` on the way gives: `false` for gtm.js's data layer; the v5 runtime's `__md`
    /// stops at it (`if (f == undefined) break`) and gives undefined.
    public func javaScriptValue(atPath segments: [String], nullOnTheWay: Value = .bool(false)) -> Value {
        var current = self
        var i = 0
        while i < segments.count {
            let segment = segments[i]
            switch current {
            case .null:
                return nullOnTheWay
            case .undefined:
                return .undefined
            case .object(let map):
                current = map[segment] ?? .undefined
            case .array(let list):
                if segment == "length" {
                    current = .int(Int64(list.count))
                } else if let index = Self.arrayIndex(segment), index < list.count {
                    current = list[index]
                } else {
                    current = .undefined
                }
            case .string(let text):
                let units = text.utf16
                if segment == "length" {
                    current = .int(Int64(units.count))
                } else if let index = Self.arrayIndex(segment), index < units.count,
                    let scalar = Unicode.Scalar(units[units.index(units.startIndex, offsetBy: index)])
                {
                    current = .string(String(Character(scalar)))
                } else {
                    current = .undefined
                }
            default:
                current = .undefined
            }
            i += 1
        }
        return current
    }

    /// `segment` as JavaScript reads an array index: the canonical text of a non-negative integer (`"01"` is no index).
    private static func arrayIndex(_ segment: String) -> Int? {
        guard let index = Int(segment), index >= 0, String(index) == segment else { return nil }
        return index
    }

    /// One step of a path: the member `segment` of a map, or the element at that numeric index of an array.
    @inline(__always)
    private func child(_ segment: String) -> Value? {
        switch self {
        case .object(let map):
            return map[segment]
        case .array(let list):
            guard let index = Int(segment), index >= 0, index < list.count else { return nil }
            return list[index]
        default:
            return nil
        }
    }
}

extension Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        var map = ValueMap()
        for (key, value) in elements { map[key] = value }
        self = .object(map)
    }
    public init(nilLiteral: ()) { self = .null }
}
