import Foundation

/// Where a ``TagManager`` finds containers and when it refreshes them. Every parameter has a default:
/// with none set, ``TagManager/open(id:openType:timeout:callback:)`` finds nothing.
///
/// ```swift
/// let manager = TagManager(
///     lifecycle: LifecycleConfiguration(
///         defaultContainers: DirectoryContainerSource(directory: "Resources/containers"),
///         savedContainers: SavedContainerStore(directory: "/var/lib/myservice/gtm"),
///         network: try HTTPContainerSource(base: URL(string: "https://www.googletagmanager.com")!)
///     )
/// )
/// let opened = try await manager.open(id: "GTM-XXXX", openType: .preferNonDefault)
/// ```
public struct LifecycleConfiguration: Sendable {
    /// The bundled default containers (a directory of `<ID>.json` / `<ID>.plist`).
    public var defaultContainers: (any ContainerSource)?
    /// The on-disk cache of fetched containers.
    public var savedContainers: SavedContainerStore?
    /// Where fresh containers come from.
    public var network: (any ContainerSource)?
    /// Where preview drafts come from; without one, ``TagManager/preview(url:)`` refuses to enter preview.
    public var preview: (any PreviewSource)?
    /// The time source of timeouts and schedules.
    public var clock: any RefreshClock
    /// The refresh schedule.
    public var refreshPolicy: RefreshPolicy
    /// Whether pushes wait for a container.
    public var delayedInitialization: DelayedInitialization
    /// How fetched bytes are compiled (size and depth limits). The container ID is always forced to the
    /// ID that was opened.
    public var loadOptions: LoadOptions

    /// Creates a configuration.
    public init(
        defaultContainers: (any ContainerSource)? = nil,
        savedContainers: SavedContainerStore? = nil,
        network: (any ContainerSource)? = nil,
        preview: (any PreviewSource)? = nil,
        clock: any RefreshClock = SystemRefreshClock(),
        refreshPolicy: RefreshPolicy = .standard,
        delayedInitialization: DelayedInitialization = DelayedInitialization(),
        loadOptions: LoadOptions = LoadOptions()
    ) {
        self.defaultContainers = defaultContainers
        self.savedContainers = savedContainers
        self.network = network
        self.preview = preview
        self.clock = clock
        self.refreshPolicy = refreshPolicy
        self.delayedInitialization = delayedInitialization
        self.loadOptions = loadOptions
    }

    /// Compiles fetched `bytes` as container `id`.
    func compile(_ bytes: [UInt8], id: String, origin: String) throws(ContainerFetchError) -> Container {
        var options = loadOptions
        options.containerID = id
        do {
            let ext = SavedContainerStore.looksLikePropertyList(bytes) ? "plist" : "json"
            return try ContainerLoader(options: options).load(bytes: bytes, file: "\(origin):\(id).\(ext)")
        } catch {
            throw ContainerFetchError(.invalidContainer, "the \(origin) container '\(id)' does not load: \(error)")
        }
    }
}
