import ContainerKit
import Foundation

/// Paths and inline containers for the core tests.
enum TestContainers {
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func bundled(_ name: String) -> String { packageRoot.appendingPathComponent("Containers/\(name)").path }

    /// `../shared/research/corpus`, when it is beside the project.
    static let corpus: URL? = {
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/research/corpus")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    static func corpusFile(_ relative: String) -> String? { corpus?.appendingPathComponent(relative).path }

    /// Compiles an inline compiled-resource container.
    static func resource(
        macros: String = "[]",
        tags: String = "[]",
        predicates: String = "[]",
        rules: String = "[]",
        id: String = "GTM-TEST1"
    ) throws -> Container {
        let json = """
            {"resource": {"version": "7", "macros": \(macros), "tags": \(tags), "predicates": \(predicates), "rules": \(rules)}}
            """
        return try ContainerLoader(options: LoadOptions(containerID: id)).load(bytes: Array(json.utf8))
    }

    static func load(json: String, file: String = "GTM-TEST1.json") throws -> Container {
        try ContainerLoader().load(bytes: Array(json.utf8), file: file)
    }
}

/// Records every call a tag handler receives.
final class RecordingHandler: FunctionCallTagHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [FunctionCall] = []
    let body: @Sendable (FunctionCall) throws -> Void

    init(_ body: @escaping @Sendable (FunctionCall) throws -> Void = { _ in }) { self.body = body }

    func execute(_ call: FunctionCall) throws {
        lock.withLock { recorded.append(call) }
        try body(call)
    }

    var calls: [FunctionCall] { lock.withLock { recorded } }
}
