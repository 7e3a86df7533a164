// PLACEHOLDER: to be replaced by the real reader (positions, plists, legacy binary detection).
import Foundation

public struct SourceMap: Sendable {
    var locations: [String: SourceLocation] = [:]
    public func location(of pointer: String) -> SourceLocation? { locations[pointer] }
}

public struct SourceDocument: Sendable {
    public enum Syntax: String, Sendable, Hashable {
        case json, xmlPropertyList = "xml_plist", binaryPropertyList = "binary_plist"
    }
    public let value: Value
    public let syntax: Syntax
    public let file: String?
    public let sourceMap: SourceMap?
    public func location(of pointer: String) -> SourceLocation? { sourceMap?.location(of: pointer) }
    public func locate(_ pointer: String) -> SourceLocation? { location(of: pointer) }
}

enum DocumentReader {
    static func read(_ bytes: [UInt8], file: String?, options: LoadOptions) throws(ContainerError) -> SourceDocument {
        guard bytes.count <= options.maximumFileSize else {
            throw ContainerError(.fileTooLarge, "file is larger than \(options.maximumFileSize) bytes", file: file)
        }
        do {
            let any = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            return SourceDocument(value: convert(any), syntax: .json, file: file, sourceMap: nil)
        } catch {
            throw ContainerError(.syntax, "malformed json", file: file)
        }
    }

    static func convert(_ any: Any) -> Value {
        switch any {
        case let s as String: return .string(s)
        case let n as NSNumber:
            if type(of: n) == type(of: NSNumber(value: true)) { return .bool(n.boolValue) }
            let t = String(cString: n.objCType)
            if t == "d" || t == "f" { return .double(n.doubleValue) }
            return .int(n.int64Value)
        case let a as [Any]: return .array(a.map(convert))
        case let d as [String: Any]:
            var m = ValueMap()
            for (k, v) in d { m[k] = convert(v) }
            return .object(m)
        default: return .null
        }
    }
}
