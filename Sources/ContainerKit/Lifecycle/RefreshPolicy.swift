import Foundation

/// When containers are refreshed: GTM's schedule by default.
public struct RefreshPolicy: Sendable, Hashable {
    /// The wait after a successful network refresh, and the age at which a saved container is stale
    /// (default 12 hours).
    public var afterSuccess: Duration
    /// The wait after a failed network refresh (default 1 hour).
    public var afterFailure: Duration
    /// The shortest time between two network refreshes that ``ContainerHolder/refresh()`` allows
    /// (default 15 minutes).
    public var minimumManualInterval: Duration

    /// GTM's schedule: 12 hours, 1 hour, 15 minutes.
    public static let standard = RefreshPolicy()

    /// Creates a policy; every parameter defaults to GTM's value.
    public init(
        afterSuccess: Duration = .seconds(12 * 3600),
        afterFailure: Duration = .seconds(3600),
        minimumManualInterval: Duration = .seconds(15 * 60)
    ) {
        self.afterSuccess = afterSuccess
        self.afterFailure = afterFailure
        self.minimumManualInterval = minimumManualInterval
    }
}
