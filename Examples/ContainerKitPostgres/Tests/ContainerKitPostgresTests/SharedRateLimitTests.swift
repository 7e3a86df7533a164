import ContainerKit
import ContainerKitDelivery
import Synchronization
import Testing

@testable import ContainerKitPostgres

@Suite(.timeLimit(.minutes(2)))
struct SharedRateLimitTests {
    /// Two instances over one PostgreSQL send to one `/users/track` stand-in through their own
    /// `SharedRateLimitDestination`s: together they stay within the key's limit, and one left alone takes
    /// the whole of it. The time is virtual (each wait advances it), so the figures do not depend on the
    /// machine.
    @Test func instancesShareTheLimitOfTheKeyInsteadOfMultiplyingIt() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let leasesA = Reports<[Int]>()
        let leasesB = Reports<[Int]>()
        let a = Instance(endpoint, name: "a") { $0.onLeasesChanged = { leasesA.report($0) } }
        let b = Instance(endpoint, name: "b") { $0.onLeasesChanged = { leasesB.report($0) } }
        let standIn = CountingDestination()
        let clock = VirtualTime()
        let limit = 20.0
        let throughA = SharedRateLimitDestination(
            standIn,
            requestsPerSecond: limit,
            store: a.store,
            timing: clock.timing
        )
        let throughB = SharedRateLimitDestination(
            standIn,
            requestsPerSecond: limit,
            store: b.store,
            timing: clock.timing
        )
        try await withRunning([a.run]) {
            _ = await leasesA.first { $0.count == 4 }
            try await withRunning([b.run]) {
                _ = await leasesA.first { $0.count == 2 }
                _ = await leasesB.first { $0.count == 2 }
                #expect(throughA.currentRequestsPerSecond + throughB.currentRequestsPerSecond == limit)
                let start = clock.now
                for request in 0..<200 {
                    _ = await (request.isMultiple(of: 2) ? throughA : throughB).deliver([makeRecord(user: "u")])
                }
                let seconds = (clock.now - start).seconds
                #expect(standIn.requests == 200)
                // At most the limit a second (plus the one request each bucket lets through at once).
                #expect(Double(standIn.requests) <= limit * seconds + 2, "\(standIn.requests) in \(seconds) s")
            }
            // B is gone: A leases every partition again and sends at the whole limit.
            _ = await leasesA.first { $0.count == 4 }
            #expect(throughA.currentRequestsPerSecond == limit)
            let start = clock.now
            for _ in 0..<100 { _ = await throughA.deliver([makeRecord(user: "u")]) }
            let seconds = (clock.now - start).seconds
            #expect(seconds <= 100 / limit + 0.001, "100 requests took \(seconds) s")
            #expect(seconds >= 98 / limit, "100 requests took \(seconds) s")
        }
    }
}

/// A `/users/track` stand-in that counts the requests it answered.
final class CountingDestination: AnalyticsDestination {
    private let count = Mutex(0)
    var requests: Int { count.withLock { $0 } }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        count.withLock { $0 += 1 }
        return .accepted(records)
    }
}

/// A clock that stands still until someone waits on it: a wait moves it forward by the time waited.
final class VirtualTime: Sendable {
    private let elapsed = Mutex(Duration.zero)

    var now: Duration { elapsed.withLock { $0 } }

    var timing: SharedRateLimitDestination.Timing {
        SharedRateLimitDestination.Timing(
            now: { self.now },
            sleep: { duration in self.elapsed.withLock { $0 += duration } }
        )
    }
}
