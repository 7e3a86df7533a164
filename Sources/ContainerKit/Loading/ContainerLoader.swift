import Foundation

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

    /// Reads a whole file, refusing files over `limit` bytes before reading them.
    package static func readFile(_ path: String, limit: Int) throws(ContainerError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ContainerError(.io, "no such file '\(path)'", file: path)
        }
        guard !isDirectory.boolValue else { throw ContainerError(.io, "'\(path)' is a directory", file: path) }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ContainerError(.io, "cannot open '\(path)' for reading", file: path)
        }
        defer { try? handle.close() }
        let size: UInt64
        do { size = try handle.seekToEnd() } catch {
            throw ContainerError(.io, "cannot read '\(path)': \(error.localizedDescription)", file: path)
        }
        guard size <= UInt64(limit) else {
            throw ContainerError(
                .fileTooLarge,
                "file is \(size) bytes, more than the limit of \(limit) bytes",
                file: path
            )
        }
        do {
            try handle.seek(toOffset: 0)
            let data = try handle.read(upToCount: limit + 1) ?? Data()
            guard data.count <= limit else {
                throw ContainerError(.fileTooLarge, "file grew past the limit of \(limit) bytes", file: path)
            }
            return [UInt8](data)
        } catch let error as ContainerError {
            throw error
        } catch {
            throw ContainerError(.io, "cannot read '\(path)': \(error.localizedDescription)", file: path)
        }
    }
}
