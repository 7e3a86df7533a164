import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads container files (JSON, XML or binary property lists) and compiles them into ``Container``s.
///
/// ```swift
/// let container = try await ContainerLoader().load(path: "Containers/GTM-5HM9ZRX.json")
/// ```
///
/// The container ID comes from ``LoadOptions/containerID``, else from a file name that follows
/// `GTM-XXXX.json|plist`, else from the content (an export's `publicId`).
public struct ContainerLoader: Sendable {
    /// Limits and choices for reading.
    public var options: LoadOptions

    /// Creates a loader.
    public init(options: LoadOptions = LoadOptions()) { self.options = options }

    /// Reads and compiles the container file at `path`.
    /// - Throws: ``ContainerError`` naming what is wrong and where.
    public func load(path: String) async throws(ContainerError) -> Container {
        let document = try await readDocument(path: path)
        return try compile(document)
    }

    /// Compiles a container from bytes already in memory. `file` names it in errors and may carry the ID.
    public func load(bytes: [UInt8], file: String? = nil) throws(ContainerError) -> Container {
        try compile(readDocument(bytes: bytes, file: file))
    }

    /// Reads the file at `path` into a ``SourceDocument`` without compiling it (lint works on these).
    public func readDocument(path: String) async throws(ContainerError) -> SourceDocument {
        let bytes = try ContainerLoader.readFile(path, limit: options.maximumFileSize)
        return try readDocument(bytes: bytes, file: path)
    }

    /// Parses bytes into a ``SourceDocument`` without compiling them.
    public func readDocument(bytes: [UInt8], file: String? = nil) throws(ContainerError) -> SourceDocument {
        try DocumentReader.read(bytes, file: file, options: options)
    }

    /// Compiles a document into a container.
    public func compile(_ document: SourceDocument) throws(ContainerError) -> Container {
        try ContainerCompiler.compile(document, options: options)
    }

    /// The container ID a file name carries (`GTM-5HM9ZRX.json` → `GTM-5HM9ZRX`), if it follows the pattern.
    public static func containerID(fromFileName path: String) -> String? {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: ".") else { return isContainerID(name) ? name : nil }
        let stem = String(name[..<dot])
        let ext = name[name.index(after: dot)...].lowercased()
        guard ext == "json" || ext == "plist", isContainerID(stem) else { return nil }
        return stem
    }

    /// Whether `text` is a container ID: `GTM-` followed by upper-case letters and digits.
    public static func isContainerID(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count > 4, utf8.count <= 64, text.hasPrefix("GTM-") else { return false }
        return utf8[4...].allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }

    /// Reads a whole file, refusing files over `limit` bytes (a regular file before reading it; a pipe, a device
    /// or a `/proc` file, which have no size, once more than `limit` bytes came). Every failure names the file and
    /// the system's reason (`permission denied`), with its `errno`. With `regularOnly` (a service watching a
    /// directory), anything but a regular file is refused before it is opened: opening a FIFO waits for a writer.
    package static func readFile(_ path: String, limit: Int, regularOnly: Bool = false) throws(ContainerError)
        -> [UInt8]
    {
        if regularOnly {
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG, info.st_mode & S_IFMT != S_IFDIR {
                throw ContainerError(
                    .io,
                    "'\(path)' is not a regular file (a FIFO, socket or device), which a container file must be",
                    file: path
                )
            }
        }
        func failure(_ error: FileSystemError) -> ContainerError {
            if error.errorNumber == ENOENT { return ContainerError(.io, "no such file '\(path)'", file: path) }
            let verb = error.step == "opening" ? "open" : "read"
            return ContainerError(
                .io,
                "cannot \(verb) '\(path)': \(error.reason)",
                file: path,
                errorNumber: error.errorNumber
            )
        }
        let fd: Int32
        do throws(FileSystemError) {
            fd = try FileSystem.openFile(path, O_RDONLY)
        } catch {
            throw failure(error)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw failure(FileSystemError(step: "reading", path: path, errorNumber: errno))
        }
        let type = info.st_mode & S_IFMT
        guard type != S_IFDIR else { throw ContainerError(.io, "'\(path)' is a directory", file: path) }
        if type == S_IFREG, info.st_size > limit {
            throw ContainerError(
                .fileTooLarge,
                "file is \(info.st_size) bytes, more than the limit of \(limit) bytes",
                file: path
            )
        }
        var bytes: [UInt8] = []
        // A regular file's size is known: one allocation (and a byte more, to see it grow past the limit).
        if type == S_IFREG { bytes.reserveCapacity(Int(info.st_size) + 1) }
        while true {
            let count: Int
            do throws(FileSystemError) {
                count = try FileSystem.readAvailable(
                    fd,
                    appendingTo: &bytes,
                    maximum: min(1 << 16, limit + 1 - bytes.count),
                    path: path
                )
            } catch {
                throw failure(error)
            }
            if count == 0 { return bytes }
            guard bytes.count <= limit else {
                throw ContainerError(.fileTooLarge, "file grew past the limit of \(limit) bytes", file: path)
            }
        }
    }
}
