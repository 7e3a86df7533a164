public import Foundation

/// Where the live version of an opened container came from.
public enum ContainerOrigin: String, Sendable, Hashable, CaseIterable {
    /// The bundled default container.
    case `default`
    /// The saved container on disk.
    case saved
    /// The network source (or the server confirmed the saved container is current).
    case network
    /// A preview draft.
    case preview
}

/// What ``TagManager/open(id:openType:timeout:callback:)`` returns: the best container available when it
/// returned. Later, better versions replace it in the ``TagManager`` without further calls.
public struct OpenedContainer: Sendable {
    /// The container ID.
    public var containerID: String
    /// The container, or `nil` when nothing loaded in time (no default, no saved container, and the network
    /// did not answer before the timeout).
    public var container: Container?
    /// Where ``container`` came from.
    public var origin: ContainerOrigin?
    /// When the container was last fetched from the network (for a saved container, when it was saved).
    public var lastRefresh: Date?

    /// Creates a result.
    public init(containerID: String, container: Container?, origin: ContainerOrigin?, lastRefresh: Date?) {
        self.containerID = containerID
        self.container = container
        self.origin = origin
        self.lastRefresh = lastRefresh
    }

    /// Whether the container is the bundled default container.
    public var isDefault: Bool { origin == .default }
}
