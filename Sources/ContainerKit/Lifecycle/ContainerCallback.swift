/// Where a refresh came from: the on-disk saved container, the network, or a watched file.
public enum RefreshType: String, Sendable, Hashable, CaseIterable {
    /// Loading the saved container from disk.
    case saved
    /// Fetching the container from its network source.
    case network
    /// Reading a changed container file (``ContainerFileWatcher``).
    case file
}

/// Why a refresh failed. The six cases of the GTM mobile SDK.
public enum RefreshFailure: String, Sendable, Hashable, CaseIterable {
    /// There is no saved container (or no saved-container store is configured).
    case noSavedContainer = "no_saved_container"
    /// A file could not be read or written.
    case ioError = "io_error"
    /// The server could not be reached: connection refused, unknown host, no network.
    case noNetwork = "no_network"
    /// The connection failed part way: a timeout, a truncated body, a dropped connection.
    case networkError = "network_error"
    /// The server answered, but not with a container: a 4xx or 5xx status, or a body that does not parse.
    case serverError = "server_error"
    /// Anything else.
    case unknownError = "unknown_error"
}

/// One step of a container refresh, as a ``ContainerCallback`` receives it.
///
/// A refresh's `began` always comes before its own `succeeded` or `failed`; nothing else is ordered
/// (a saved and a network refresh may overlap).
public enum ContainerRefreshEvent: Sendable, Hashable, CustomStringConvertible {
    /// A refresh of `type` started.
    case began(RefreshType)
    /// A refresh of `type` loaded a container (or the server confirmed the cached one is current).
    case succeeded(RefreshType)
    /// A refresh of `type` failed; the current container stays live.
    case failed(RefreshType, RefreshFailure)

    /// The refresh type the event is about.
    public var type: RefreshType {
        switch self {
        case .began(let type), .succeeded(let type), .failed(let type, _): return type
        }
    }

    /// `began saved`, `succeeded network`, `failed network: no_network`.
    public var description: String {
        switch self {
        case .began(let type): return "began \(type.rawValue)"
        case .succeeded(let type): return "succeeded \(type.rawValue)"
        case .failed(let type, let failure): return "failed \(type.rawValue): \(failure.rawValue)"
        }
    }
}

/// Receives the refresh events of an opened container. Calls may come from any thread, and may arrive
/// before ``TagManager/open(id:openType:timeout:callback:)`` returns.
///
/// ```swift
/// struct PrintingCallback: ContainerCallback {
///     func containerRefresh(_ containerID: String, _ event: ContainerRefreshEvent) {
///         print("\(containerID): \(event)")   // "GTM-XXXX: failed network: no_network"
///     }
/// }
/// ```
public protocol ContainerCallback: Sendable {
    /// Called for every refresh step of the container `containerID`.
    func containerRefresh(_ containerID: String, _ event: ContainerRefreshEvent)
}

/// A ``ContainerCallback`` made from a closure.
///
/// ```swift
/// let callback = ClosureContainerCallback { id, event in print(id, event) }
/// ```
public struct ClosureContainerCallback: ContainerCallback {
    private let body: @Sendable (String, ContainerRefreshEvent) -> Void

    /// Creates a callback that calls `body`.
    public init(_ body: @escaping @Sendable (String, ContainerRefreshEvent) -> Void) { self.body = body }

    public func containerRefresh(_ containerID: String, _ event: ContainerRefreshEvent) { body(containerID, event) }
}
