import ContainerKit
import Foundation

/// The pushes `run` and `preview` read: one JSON object per line, from a file or standard input.
struct PushInput: Sequence {
    /// One non-blank input line: a push, or why it is not one.
    enum Line {
        case push(number: Int, message: ValueMap)
        /// `problem` reads like "line 3:7: expected ',' or '}' …".
        case invalid(number: Int, problem: String)
    }

    private let handle: FileHandle
    private let ownsHandle: Bool

    /// Opens `path` (`-` is standard input); reports and returns `nil` when it cannot be opened.
    static func open(_ path: String, command: String, output: CommandOutput) -> PushInput? {
        if path == "-" { return PushInput(handle: .standardInput, ownsHandle: false) }
        guard let file = FileHandle(forReadingAtPath: path) else {
            output.error("containerkit \(command): cannot open events file '\(path)'")
            return nil
        }
        return PushInput(handle: file, ownsHandle: true)
    }

    /// Closes a file (not standard input).
    func close() { if ownsHandle { try? handle.close() } }

    func makeIterator() -> AnyIterator<Line> {
        var lines = LineReader(handle: handle)
        var number = 0
        return AnyIterator {
            while let bytes = lines.nextBytes() {
                number += 1
                if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                return PushInput.parse(bytes, number: number)
            }
            return nil
        }
    }

    /// Parses one line's bytes as they were read: invalid UTF-8 is an error that says where, not replaced.
    static func parse(_ bytes: [UInt8], number: Int) -> Line {
        do throws(ContainerError) {
            guard case .object(let message) = try Value(jsonBytes: bytes) else {
                return .invalid(number: number, problem: "line \(number): a push must be a JSON object")
            }
            return .push(number: number, message: message)
        } catch {
            let column = error.location.map { ":\($0.column)" } ?? ""
            return .invalid(number: number, problem: "line \(number)\(column): \(error.message)")
        }
    }
}
