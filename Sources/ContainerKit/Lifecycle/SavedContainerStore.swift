public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A container read back from a ``SavedContainerStore``.
public struct SavedContainer: Sendable, Hashable {
    /// The container file as it was fetched.
    public var bytes: [UInt8]
    /// When it was fetched (or last confirmed current by the server); `nil` when the metadata is missing
    /// or does not match the file, which makes the container count as stale.
    public var fetchedAt: Date?
    /// The entity tag the server sent with it.
    public var etag: String?

    /// Creates a saved container.
    public init(bytes: [UInt8], fetchedAt: Date?, etag: String?) {
        self.bytes = bytes
        self.fetchedAt = fetchedAt
        self.etag = etag
    }
}

/// The on-disk cache of the last container fetched for each ID: `<ID>.json` (or `<ID>.plist`, after the
/// content) and `<ID>.meta.json` with the fetch time, the entity tag, and the size and checksum of the file
/// it describes.
///
/// Every file is written atomically (a temporary file in the same directory, `fsync`, `rename`, then
/// `fsync` of the directory), so a crash leaves the previous version or the new one, never a mix. If the
/// process dies between the two files, the metadata no longer matches the container file and the saved
/// container counts as stale: it is still used, and refreshed from the network at once.
///
/// ```swift
/// let store = SavedContainerStore(directory: "/var/lib/myservice/containers")
/// if let saved = try await store.load(id: "GTM-XXXX") { print(saved.fetchedAt ?? "stale") }
/// ```
public struct SavedContainerStore: Sendable, CustomStringConvertible {
    /// The directory the files live in; created on first save.
    public let directory: String
    /// Saved files larger than this are refused when read (default 16 MiB).
    public var maximumBytes: Int

    /// Creates a store in `directory`.
    public init(directory: String, maximumBytes: Int = 16 * 1024 * 1024) {
        self.directory = directory
        self.maximumBytes = maximumBytes
    }

    /// The directory.
    public var description: String { directory }

    /// Reads the saved container `id`; `nil` when there is none.
    /// - Throws: ``ContainerFetchError`` with ``ContainerFetchError/Code/io`` when a file exists but cannot
    ///   be read, or ``ContainerFetchError/Code/invalidContainerID``.
    public func load(id: String) async throws(ContainerFetchError) -> SavedContainer? {
        let bytes: [UInt8]
        do {
            guard case .container(let body, _) = try await files.fetch(id: id, ifNoneMatch: nil) else { return nil }
            bytes = body
        } catch  where error.code == .notFound {
            return nil
        }
        guard let meta = readMetadata(id), meta.size == bytes.count, meta.checksum == Self.checksum(bytes) else {
            return SavedContainer(bytes: bytes, fetchedAt: nil, etag: nil)
        }
        return SavedContainer(bytes: bytes, fetchedAt: meta.fetchedAt, etag: meta.etag)
    }

    /// Saves `bytes` as container `id`, fetched at `fetchedAt` with entity tag `etag`.
    public func save(id: String, bytes: [UInt8], etag: String?, fetchedAt: Date) async throws(ContainerFetchError) {
        _ = try files.path(for: id)  // validates the ID
        try createDirectory()
        let ext = Self.looksLikePropertyList(bytes) ? "plist" : "json"
        let other = ext == "json" ? "plist" : "json"
        try Self.writeAtomically(bytes, to: "\(base)/\(id).\(ext)")
        if FileManager.default.fileExists(atPath: "\(base)/\(id).\(other)") {
            try? FileManager.default.removeItem(atPath: "\(base)/\(id).\(other)")
        }
        try writeMetadata(
            id,
            Metadata(fetchedAt: fetchedAt, etag: etag, size: bytes.count, checksum: Self.checksum(bytes))
        )
    }

    /// Records that the server confirmed the saved container `id` is current (HTTP 304) at `fetchedAt`.
    /// Does nothing when there is no saved container.
    public func touch(id: String, fetchedAt: Date) async throws(ContainerFetchError) {
        guard let saved = try await load(id: id) else { return }
        try writeMetadata(
            id,
            Metadata(
                fetchedAt: fetchedAt,
                etag: saved.etag,
                size: saved.bytes.count,
                checksum: Self.checksum(saved.bytes)
            )
        )
    }

    /// Deletes the saved container `id`, if any.
    public func remove(id: String) async throws(ContainerFetchError) {
        _ = try files.path(for: id)
        for name in ["\(id).json", "\(id).plist", "\(id).meta.json"] {
            let path = "\(base)/\(name)"
            guard FileManager.default.fileExists(atPath: path) else { continue }
            do { try FileManager.default.removeItem(atPath: path) } catch {
                throw ContainerFetchError(.io, "cannot remove '\(path)'")
            }
        }
    }

    // MARK: Files

    private var files: DirectoryContainerSource {
        DirectoryContainerSource(directory: directory, maximumBytes: maximumBytes)
    }
    private var base: String { directory.hasSuffix("/") ? String(directory.dropLast()) : directory }

    private struct Metadata {
        var fetchedAt: Date
        var etag: String?
        var size: Int
        var checksum: String
    }

    private func readMetadata(_ id: String) -> Metadata? {
        let path = "\(base)/\(id).meta.json"
        guard FileManager.default.fileExists(atPath: path),
            let bytes = try? ContainerLoader.readFile(path, limit: 64 * 1024),
            case .object(let map)? = try? Value(json: String(decoding: bytes, as: UTF8.self)),
            // Bounded (about ±31,000 years) so that the age computed from it fits a `Duration`.
            let seconds = map["fetched_at"]?.numberValue, seconds.isFinite, abs(seconds) < 1e12,
            case .int(let size)? = map["size"],
            let checksum = map["checksum"]?.stringValue
        else { return nil }
        return Metadata(
            fetchedAt: Date(timeIntervalSince1970: seconds),
            etag: map["etag"]?.stringValue,
            size: Int(size),
            checksum: checksum
        )
    }

    private func writeMetadata(_ id: String, _ meta: Metadata) throws(ContainerFetchError) {
        var map = ValueMap()
        map["fetched_at"] = .double(meta.fetchedAt.timeIntervalSince1970)
        map["etag"] = meta.etag.map(Value.string) ?? .null
        map["size"] = .int(Int64(meta.size))
        map["checksum"] = .string(meta.checksum)
        try Self.writeAtomically(Array(JSONWriter.string(.object(map)).utf8), to: "\(base)/\(id).meta.json")
    }

    private func createDirectory() throws(ContainerFetchError) {
        do {
            // Private, as everything the runtime keeps: containers hold the company's settings and keys.
            try FileSystem.makeDirectory(directory, mode: 0o700)
        } catch {
            throw ContainerFetchError(.io, "cannot create directory '\(directory)': \(error.reason)")
        }
    }

    /// Writes `bytes` to a temporary file beside `path`, flushes it, renames it over `path` and flushes the
    /// directory.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(ContainerFetchError) {
        do {
            try AtomicFile.write(bytes, to: path, uniqueTemporary: true, mode: 0o600)
        } catch {
            throw ContainerFetchError(
                .io,
                "cannot write '\(path)' (\(error.step) '\(error.path)': errno \(error.errorNumber))"
            )
        }
    }

    /// FNV-1a, 64 bits, as 16 hex digits: enough to notice a container file that its metadata does not
    /// describe.
    static func checksum(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func looksLikePropertyList(_ bytes: [UInt8]) -> Bool {
        let head = String(decoding: bytes.prefix(64), as: UTF8.self)
        return head.hasPrefix("bplist") || head.contains("<plist") || head.hasPrefix("<?xml")
    }
}
