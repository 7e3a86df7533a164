import Foundation

/// Reads containers from a directory of `<ID>.json` / `<ID>.plist` files: the bundled default containers
/// an app ships, a mirror of the container server, or (as a ``PreviewSource``) a directory of drafts,
/// where the auth token is not checked.
///
/// The ID is checked against the `GTM-XXXX` pattern before any path is built from it, so no request can
/// name a file outside the directory.
///
/// ```swift
/// let defaults = DirectoryContainerSource(directory: "Resources/containers")
/// let result = try await defaults.fetch(id: "GTM-XXXX", ifNoneMatch: nil)
/// ```
public struct DirectoryContainerSource: ContainerSource, PreviewSource, CustomStringConvertible {
    /// The directory that holds the files.
    public let directory: String
    /// Files larger than this are refused (default 16 MiB).
    public var maximumBytes: Int

    /// Creates a source reading from `directory`.
    public init(directory: String, maximumBytes: Int = 16 * 1024 * 1024) {
        self.directory = directory
        self.maximumBytes = maximumBytes
    }

    /// The directory.
    public var description: String { directory }

    /// Reads `<id>.json`, else `<id>.plist`. Files carry no entity tag, so the answer is never `notModified`.
    public func fetch(id: String, ifNoneMatch etag: String?) async throws(ContainerFetchError)
        -> ContainerFetchResult
    {
        .container(bytes: try read(id), etag: nil)
    }

    /// Reads the draft `<id>.json` or `<id>.plist`; the token and preview number are not checked.
    public func fetchDraft(_ request: PreviewRequest) async throws(ContainerFetchError) -> [UInt8] {
        try read(request.containerID)
    }

    /// The path of the file for `id`, or `nil` when there is none.
    public func path(for id: String) throws(ContainerFetchError) -> String? {
        guard ContainerLoader.isContainerID(id) else {
            throw ContainerFetchError(.invalidContainerID, "'\(id)' is not a container id (GTM-XXXX)")
        }
        let base = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        for ext in ["json", "plist"] {
            let path = "\(base)/\(id).\(ext)"
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        return nil
    }

    private func read(_ id: String) throws(ContainerFetchError) -> [UInt8] {
        guard let path = try path(for: id) else {
            // Said for what it is: a directory without the file, a path that is a file (the draft itself,
            // given where its folder belongs), or nothing at all.
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
                throw ContainerFetchError(.notFound, "no directory '\(directory)' (it should hold '\(id).json')")
            }
            if !isDirectory.boolValue {
                throw ContainerFetchError(
                    .notFound,
                    "'\(directory)' is a file, not a directory: give the directory that holds '\(id).json' or "
                        + "'\(id).plist'"
                )
            }
            throw ContainerFetchError(.notFound, "no '\(id).json' or '\(id).plist' in '\(directory)'")
        }
        do {
            return try ContainerLoader.readFile(path, limit: maximumBytes, regularOnly: true)
        } catch {
            let code: ContainerFetchError.Code = error.code == .fileTooLarge ? .tooLarge : .io
            throw ContainerFetchError(code, "'\(path)': \(error.message)")
        }
    }
}
