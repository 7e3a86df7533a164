import ContainerKit
import Foundation
import Testing

/// The suite of all document-reader tests (`swift test --filter Loading`).
@Suite enum Loading {}

/// Reads `text` (UTF-8) as a container document.
func readDocument(_ text: String, positions: Bool = true, options: LoadOptions = LoadOptions()) throws -> SourceDocument
{
    try readDocument(Array(text.utf8), positions: positions, options: options)
}

/// Reads `bytes` as a container document.
func readDocument(_ bytes: [UInt8], positions: Bool = true, options: LoadOptions = LoadOptions()) throws
    -> SourceDocument
{
    var options = options
    options.recordPositions = positions
    return try ContainerLoader(options: options).readDocument(bytes: bytes, file: "test.json")
}

/// The error reading `bytes` throws, or `nil` (recorded as a test failure) when it reads fine.
func readError(
    _ bytes: [UInt8],
    options: LoadOptions = LoadOptions(),
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) -> ContainerError? {
    do {
        let document = try ContainerLoader(options: options).readDocument(bytes: bytes, file: "test.json")
        Issue.record("expected an error, read \(document.value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// The error reading `text` throws.
func readError(
    _ text: String,
    options: LoadOptions = LoadOptions(),
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) -> ContainerError? {
    readError(Array(text.utf8), options: options, sourceLocation: sourceLocation)
}

/// What Foundation's JSONSerialization makes of `bytes`, converted to a ``Value`` (ints and doubles as
/// the JSON text wrote them), as an independent reference.
func foundationValue(_ bytes: [UInt8]) throws -> Value {
    try foundationValue(JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]))
}

func foundationValue(_ object: Any) -> Value {
    switch object {
    case is NSNull:
        return .null
    case let s as String:
        return .string(s)
    case let n as NSNumber:
        if type(of: n) == type(of: NSNumber(value: true)) { return .bool(n.boolValue) }
        switch n.objCType.pointee {
        case 0x64, 0x66: return .double(n.doubleValue)  // d, f
        case 0x51:  // Q
            return n.uint64Value <= UInt64(Int64.max) ? .int(n.int64Value) : .double(n.doubleValue)
        default: return .int(n.int64Value)
        }
    case let list as [Any]:
        return .array(list.map(foundationValue))
    case let dictionary as [String: Any]:
        var map = ValueMap(minimumCapacity: dictionary.count)
        for (key, value) in dictionary { map[key] = foundationValue(value) }
        return .object(map)
    default:
        Issue.record("unexpected JSONSerialization type \(type(of: object))")
        return .undefined
    }
}

/// Every JSON pointer in `value`, in document order (the root is `""`).
func allPointers(_ value: Value, _ pointer: String = "", into out: inout [String]) {
    out.append(pointer)
    switch value {
    case .array(let list):
        for (index, element) in list.enumerated() {
            allPointers(element, JSONPointer.appending(pointer, index), into: &out)
        }
    case .object(let map):
        for (key, element) in map { allPointers(element, JSONPointer.appending(pointer, key), into: &out) }
    default:
        break
    }
}
