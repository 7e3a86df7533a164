import ContainerKit
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a command writes: standard output for reports, standard error for diagnostics and summaries.
/// Tests capture both in memory.
public final class CommandOutput: Sendable {
    private let out: @Sendable (String) -> Void
    private let err: @Sendable (String) -> Void
    private let outFailure: @Sendable () -> String?

    /// Creates an output from two writers; `outFailure` says why standard output could not be written, if it
    /// could not.
    public init(
        out: @escaping @Sendable (String) -> Void,
        err: @escaping @Sendable (String) -> Void,
        outFailure: @escaping @Sendable () -> String? = { nil }
    ) {
        self.out = out
        self.err = err
        self.outFailure = outFailure
    }

    /// The process's standard output and standard error, unbuffered line by line. A write that fails (a full
    /// disk, a closed terminal) is kept as ``outputFailure`` rather than ending the process.
    public static let standard = CommandOutput(
        out: { text in StandardStream.output.write(text) },
        err: { text in StandardStream.error.write(text) },
        outFailure: { StandardStream.output.failure }
    )

    /// Writes a line to standard output.
    public func print(_ line: String) { out(line + "\n") }
    /// Writes a line to standard error.
    public func error(_ line: String) { err(line + "\n") }
    /// Why standard output could not be written (`No space left on device`), or `nil` when all of it was.
    public var outputFailure: String? { outFailure() }
}

/// A standard stream written with `write(2)`: every byte, or from the first failed write on nothing more, with
/// that write's error kept. `FileHandle.write(_:)` traps when a write fails, so `containerkit lint > /dev/full`
/// crashed.
final class StandardStream: Sendable {
    static let output = StandardStream(descriptor: STDOUT_FILENO)
    static let error = StandardStream(descriptor: STDERR_FILENO)

    private let descriptor: Int32
    /// The `errno` of the first failed write; 0 while none failed.
    private let errorNumber = Atomic<Int32>(0)

    init(descriptor: Int32) { self.descriptor = descriptor }

    func write(_ text: String) {
        guard errorNumber.load(ordering: .relaxed) == 0 else { return }
        var text = text
        text.withUTF8 { bytes in
            do throws(FileSystemError) {
                try FileSystem.writeAll(descriptor, UnsafeRawBufferPointer(bytes), path: "")
            } catch {
                errorNumber.store(error.errorNumber, ordering: .relaxed)
            }
        }
    }

    /// Why a write failed (`No space left on device`), or `nil` when none did.
    var failure: String? {
        let number = errorNumber.load(ordering: .relaxed)
        return number == 0 ? nil : String(cString: strerror(number))
    }
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
    /// Where the search for the next newline resumes: bytes before it were already searched.
    private var searched = 0
    private var atEOF = false
    /// Whether the rest of an over-long line is being thrown away.
    private var skippingRest = false
    /// Whether the line ``nextBytes()`` returned last was longer than the limit, and cut there.
    private(set) var lastLineWasCut = false
    /// Why reading stopped before the end of the input (`Is a directory`, `Input/output error`); the lines
    /// before it were returned, and ``nextBytes()`` returns `nil` from then on.
    private(set) var readError: String?
    /// Lines longer than this are cut, and ``lastLineWasCut`` says so (a line is one push: the reader of pushes
    /// refuses a cut line once, under its own line number, and reads on).
    static let maximumLineLength = 16 * 1024 * 1024
    /// The longest line returned whole.
    let limit: Int

    init(handle: FileHandle, maximumLineLength: Int = LineReader.maximumLineLength) {
        self.handle = handle
        self.limit = maximumLineLength
    }

    /// The next line as text (invalid UTF-8 replaced), without its line break.
    mutating func next() -> String? {
        nextBytes().map { String(decoding: $0, as: UTF8.self) }
    }

    /// The next line's bytes as read, without its line break (cut at the length limit).
    mutating func nextBytes() -> [UInt8]? {
        while true {
            if let newline = buffer[searched...].firstIndex(of: 0x0A) {
                if skippingRest {
                    skippingRest = false
                    start = newline + 1
                    searched = start
                    continue
                }
                var end = newline
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                lastLineWasCut = end - start > limit
                let line = Array(buffer[start..<Swift.min(end, start + limit)])
                start = newline + 1
                searched = start
                return line
            }
            searched = buffer.count
            if atEOF {
                guard start < buffer.count, !skippingRest else { return nil }
                lastLineWasCut = buffer.count - start > limit
                let line = Array(buffer[start..<Swift.min(buffer.count, start + limit)])
                start = buffer.count
                searched = start
                return line
            }
            if skippingRest {
                // The rest of a line already cut: dropped, however many reads it takes to reach its end.
                buffer.removeAll(keepingCapacity: true)
                start = 0
                searched = 0
            } else if buffer.count - start > limit {
                lastLineWasCut = true
                let line = Array(buffer[start..<(start + limit)])
                buffer.removeAll(keepingCapacity: true)
                start = 0
                searched = 0
                skippingRest = true
                return line
            } else if start > 0 {
                buffer.removeFirst(start)
                searched -= start
                start = 0
            }
            readChunk()
        }
    }

    /// The next line's bytes without taking them: up to its line break (not included), the limit, the end of the
    /// input, or as soon as `enough` says what is there decides what the caller wants to know; `nil` at the end of
    /// the input.
    mutating func peekLine(enough: (ArraySlice<UInt8>) -> Bool = { _ in false }) -> ArraySlice<UInt8>? {
        while true {
            if let newline = buffer[searched...].firstIndex(of: 0x0A) { return buffer[start..<newline] }
            searched = buffer.count
            if atEOF || buffer.count - start >= limit || (start < buffer.count && enough(buffer[start...])) {
                return start < buffer.count ? buffer[start..<Swift.min(buffer.count, start + limit)] : nil
            }
            if start > 0 {
                buffer.removeFirst(start)
                searched -= start
                start = 0
            }
            readChunk()
        }
    }

    /// Drops the next `count` bytes, which ``peekLine()`` returned.
    mutating func skip(_ count: Int) {
        start += count
        searched = Swift.max(searched, start)
    }

    /// The bytes not taken yet, as they come — what is buffered, then what each read gives — for a reader that
    /// finds its own boundaries (a data-layer dump); `nil` at the end of the input (``readError`` says whether it
    /// failed).
    mutating func nextChunk() -> ArraySlice<UInt8>? {
        while start == buffer.count {
            if atEOF { return nil }
            buffer.removeAll(keepingCapacity: true)
            (start, searched) = (0, 0)
            readChunk()
        }
        defer { (start, searched) = (buffer.count, buffer.count) }
        return buffer[start...]
    }

    /// Appends what one `read(2)` gives (what is there now: a terminal's line, a pipe's bytes, up to 64 KiB of a
    /// file); at the end of the input or a failed read, marks the end, keeping the error. `FileHandle`'s
    /// `availableData` traps on a failed read (an events path that is a directory crashed the command).
    private mutating func readChunk() {
        do throws(FileSystemError) {
            if try FileSystem.readAvailable(handle.fileDescriptor, appendingTo: &buffer, maximum: 1 << 16, path: "")
                == 0
            {
                atEOF = true
            }
        } catch {
            readError = String(cString: strerror(error.errorNumber))
            atEOF = true
        }
    }
}
