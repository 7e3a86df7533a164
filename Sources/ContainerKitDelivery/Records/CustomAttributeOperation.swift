public import ContainerKit

/// What a custom-attribute record does to the attribute.
///
/// In record JSON and in Braze's attribute objects, ``set(_:)`` writes the value itself, and the
/// other operations write Braze's operator objects: `{"inc": 2}`, `{"add": ["a"]}`, `{"remove": ["a"]}`.
/// A set value is never an object, so the two cannot be confused.
public enum CustomAttributeOperation: Sendable, Hashable {
    /// Sets the attribute (`setCustomAttribute`; `.null` removes it).
    case set(CustomAttributeValue)
    /// Adds to an integer attribute (`incrementCustomUserAttribute`; negative to decrement).
    case increment(Int64)
    /// Adds strings to an array attribute (`addToCustomAttributeArray`).
    case addToArray([String])
    /// Removes strings from an array attribute (`removeFromCustomAttributeArray`).
    case removeFromArray([String])

    /// The JSON `value`: the value itself, or Braze's operator object.
    public var jsonValue: Value {
        switch self {
        case .set(let value): return value.jsonValue
        case .increment(let amount): return .object(["inc": .int(amount)])
        case .addToArray(let list): return .object(["add": .array(list.map { .string($0) })])
        case .removeFromArray(let list): return .object(["remove": .array(list.map { .string($0) })])
        }
    }

    /// Reads a record's `value` (see ``jsonValue``).
    init?(jsonValue: Value, isDate: Bool) {
        if case .object(let map) = jsonValue {
            guard map.count == 1, let (name, operand) = map.first(where: { _ in true }) else { return nil }
            switch (name, operand) {
            case ("inc", .int(let amount)):
                self = .increment(amount)
            case ("add", .array), ("remove", .array):
                guard case .strings(let list)? = CustomAttributeValue(jsonValue: operand, isDate: false) else {
                    return nil
                }
                self = name == "add" ? .addToArray(list) : .removeFromArray(list)
            default:
                return nil
            }
        } else {
            guard let value = CustomAttributeValue(jsonValue: jsonValue, isDate: isDate) else { return nil }
            self = .set(value)
        }
    }
}
