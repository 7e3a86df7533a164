import Foundation
import Synchronization

/// Where a command writes: standard output for reports, standard error for diagnostics and summaries.
/// Tests capture both in memory.
public final class CommandOutput: Sendable {
    private let out: @Sendable (String) -> Void
    private let err: @Sendable (String) -> Void

    /// Creates an output from two writers.
    public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void) {
        self.out = out
        self.err = err
    }

    /// The process's standard output and standard error, unbuffered line by line.
    public static let standard = CommandOutput(
        out: { text in FileHandle.standardOutput.write(Data(text.utf8)) },
        err: { text in FileHandle.standardError.write(Data(text.utf8)) }
    )

    /// Writes a line to standard output.
    public func print(_ line: String) { out(line + "\n") }
    /// Writes a line to standard error.
    public func error(_ line: String) { err(line + "\n") }
}

/// Captures a command's output in memory (for tests and for embedding the CLI).
public final class CapturedOutput: Sendable {
    private let storage = Mutex<(out: String, err: String)>(("", ""))

    public init() {}

    /// A ``CommandOutput`` that writes here.
    public var output: CommandOutput {
        CommandOutput(
            out: { [self] text in self.storage.withLock { $0.out += text } },
            err: { [self] text in self.storage.withLock { $0.err += text } }
        )
    }

    /// Everything written to standard output.
    public var standardOutput: String { storage.withLock { $0.out } }
    /// Everything written to standard error.
    public var standardError: String { storage.withLock { $0.err } }
}

/// Reads a file or standard input line by line without loading it whole.
struct LineReader: Sequence, IteratorProtocol {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEOF = false
    /// Lines longer than this are cut and reported (a line is one push).
    static let maximumLineLength = 16 * 1024 * 1024

    init(handle: FileHandle) { self.handle = handle }

    mutating func next() -> String? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                var end = newline
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                let line = String(decoding: buffer[start..<end], as: UTF8.self)
                start = newline + 1
                return line
            }
            if atEOF {
                guard start < buffer.count else { return nil }
                let line = String(decoding: buffer[start...], as: UTF8.self)
                start = buffer.count
                return line
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            let chunk = handle.availableData
            if chunk.isEmpty { atEOF = true } else { buffer.append(contentsOf: chunk) }
            if buffer.count > LineReader.maximumLineLength && buffer.firstIndex(of: 0x0A) == nil {
                let line = String(decoding: buffer.prefix(LineReader.maximumLineLength), as: UTF8.self)
                buffer.removeAll()
                return line
            }
        }
    }
}
