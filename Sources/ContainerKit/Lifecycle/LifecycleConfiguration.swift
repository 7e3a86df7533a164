public import Foundation

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
    /// The time source of open timeouts, the refresh schedule and throttle, and the age of saved containers
    /// (`ContinuousClock` by default; `ManualClock` from `ContainerKitTesting` in tests). Fixed when the configuration is made: the
    /// configuration reads the clock once then, and measures every interval from that reading.
    public let clock: any Clock<Duration>
    /// The wall-clock time at which the configuration read ``clock`` (by default `Date()` then).
    ///
    /// Saved containers carry the wall-clock time they were fetched, which survives restarts; the lifecycle
    /// computes wall-clock time as this anchor plus the time elapsed on ``clock`` since, so that a
    /// `ManualClock` also moves the age of saved containers, and so that no second time source is needed.
    /// The fetch times it records (``OpenedContainer/lastRefresh``, ``SavedContainer/fetchedAt``) and
    /// ``ContainerHolder/nextRefresh`` are on this scale. With `ContinuousClock`, a wall-clock step (NTP, a
    /// manual change) after the configuration was made is not seen.
    public let wallClockAnchor: Date
    /// The refresh schedule.
    public var refreshPolicy: RefreshPolicy
    /// Whether pushes wait for a container.
    public var delayedInitialization: DelayedInitialization
    /// How fetched bytes are compiled (size and depth limits). The container ID is always forced to the
    /// ID that was opened.
    public var loadOptions: LoadOptions

    /// Creates a configuration.
    /// - Parameters:
    ///   - clock: the time source of timeouts and schedules; see ``clock``.
    ///   - wallClockAnchor: the wall-clock time now; see ``wallClockAnchor``.
    public init(
        defaultContainers: (any ContainerSource)? = nil,
        savedContainers: SavedContainerStore? = nil,
        network: (any ContainerSource)? = nil,
        preview: (any PreviewSource)? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        wallClockAnchor: Date = Date(),
        refreshPolicy: RefreshPolicy = .standard,
        delayedInitialization: DelayedInitialization = DelayedInitialization(),
        loadOptions: LoadOptions = LoadOptions()
    ) {
        self.defaultContainers = defaultContainers
        self.savedContainers = savedContainers
        self.network = network
        self.preview = preview
        self.clock = clock
        self.wallClockAnchor = wallClockAnchor
        self.time = LifecycleTime(clock: clock, wallClockAnchor: wallClockAnchor)
        self.refreshPolicy = refreshPolicy
        self.delayedInitialization = delayedInitialization
        self.loadOptions = loadOptions
    }

    /// The lifecycle's reading of ``clock``.
    let time: LifecycleTime

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
