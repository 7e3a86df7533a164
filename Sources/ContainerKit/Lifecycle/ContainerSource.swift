/// What a ``ContainerSource`` answered.
public enum ContainerFetchResult: Sendable, Hashable {
    /// The container's bytes (JSON or property list) and the entity tag to send next time, if any.
    case container(bytes: [UInt8], etag: String?)
    /// The container is unchanged since the version whose entity tag was sent (HTTP 304).
    case notModified
}

/// Where fresh containers come from: the network, a mirror directory, or anything else.
///
/// A source is asked for one container ID at a time. ContainerKit validates the ID before it asks, and
/// sources validate it again before building a URL or a file path from it.
///
/// ```swift
/// struct BundleSource: ContainerSource {
///     func fetch(id: String, ifNoneMatch etag: String?) async throws(ContainerFetchError)
///         -> ContainerFetchResult
///     {
///         guard let bytes = embedded[id] else { throw ContainerFetchError(.notFound, "no '\(id)'") }
///         return .container(bytes: bytes, etag: nil)
///     }
/// }
/// ```
public protocol ContainerSource: Sendable {
    /// Fetches container `id`. When `etag` is given and the container has not changed, a source may answer
    /// ``ContainerFetchResult/notModified``.
    func fetch(id: String, ifNoneMatch etag: String?) async throws(ContainerFetchError) -> ContainerFetchResult
}

/// A ``ContainerSource`` made from a closure (tests, or containers kept somewhere unusual).
///
/// ```swift
/// let source = ClosureContainerSource { id, _ in .container(bytes: try await store.bytes(id), etag: nil) }
/// ```
public struct ClosureContainerSource: ContainerSource {
    private let body: @Sendable (String, String?) async throws(ContainerFetchError) -> ContainerFetchResult

    /// Creates a source that calls `body` with the ID and the entity tag.
    public init(
        _ body: @escaping @Sendable (String, String?) async throws(ContainerFetchError) -> ContainerFetchResult
    ) {
        self.body = body
    }

    public func fetch(id: String, ifNoneMatch etag: String?) async throws(ContainerFetchError)
        -> ContainerFetchResult
    {
        try await body(id, etag)
    }
}
