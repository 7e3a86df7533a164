public import ContainerKit
public import Foundation

/// A value a custom attribute can be set to, with Braze's types: string, integer, float, boolean, date,
/// array of strings, or `null` (which removes the attribute).
public enum CustomAttributeValue: Sendable, Hashable {
    /// A string (at most 255 characters).
    case string(String)
    /// An integer.
    case int(Int64)
    /// A floating-point number.
    case double(Double)
    /// A boolean.
    case bool(Bool)
    /// A date, sent to Braze as an ISO-8601 string.
    case date(Date)
    /// An array of strings (Braze keeps them as a set).
    case strings([String])
    /// Removes the attribute.
    case null

    /// The JSON form Braze receives: dates as ISO-8601 strings with milliseconds, UTC.
    public var jsonValue: Value {
        switch self {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .bool(let b): return .bool(b)
        case .date(let date): return .string(ISO8601Timestamp.string(from: date))
        case .strings(let list): return .array(list.map { .string($0) })
        case .null: return .null
        }
    }

    /// Whether this is a ``date(_:)`` (records mark dates with `"value_type": "date"`).
    public var isDate: Bool {
        if case .date = self { return true }
        return false
    }

    /// Reads a record's `value`; `isDate` says the string is a date (`"value_type": "date"`).
    init?(jsonValue: Value, isDate: Bool) {
        switch jsonValue {
        case .string(let s):
            if isDate {
                guard let date = ISO8601Timestamp.date(from: s) else { return nil }
                self = .date(date)
            } else {
                self = .string(s)
            }
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .bool(let b): self = .bool(b)
        case .null: self = .null
        case .array(let list):
            var strings: [String] = []
            strings.reserveCapacity(list.count)
            for element in list {
                guard case .string(let s) = element else { return nil }
                strings.append(s)
            }
            self = .strings(strings)
        default:
            return nil
        }
    }
}
