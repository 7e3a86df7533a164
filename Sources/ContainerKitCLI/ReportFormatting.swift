import ContainerKit

/// The JSON and text renderings of evaluation results that `run` and `preview` share.
enum ReportFormatting {
    /// The tag as ``FiredTag/jsonValue`` has it.
    static func json(_ tag: FiredTag) -> Value { tag.jsonValue }

    /// The event name of a pushed message, as the output's `event` field shows it.
    static func eventField(_ message: ValueMap) -> Value {
        switch message["event"] {
        case nil, .undefined?, .null?: return .null
        case let value?: return .string(value.jsString)
        }
    }

    /// One person-readable line for a fired tag.
    static func text(_ tag: FiredTag) -> String {
        let id = tag.tagID.map { "tag \($0)" } ?? "tag #\(tag.index)"
        let name = tag.name.map { " '\($0)'" } ?? ""
        let target = tag.classPath.map { " → \($0)" } ?? ""
        var status = tag.status.name
        if let why = tag.status.message { status += ": \(why)" }
        return "  \(id)\(name) \(tag.function)\(target) [\(status)]"
    }

    /// The parameters of a fired tag, one `key = value` per line, indented.
    static func parameterLines(_ parameters: ValueMap) -> [String] {
        parameters.map { "      \($0.key) = \(JSONWriter.string($0.value))" }
    }
}
