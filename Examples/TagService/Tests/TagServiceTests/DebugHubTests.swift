import ContainerKit
import Foundation
import HTTPTypes
import Synchronization
import Testing

@testable import TagServiceCore

/// The debug page's bounds and escaping, without a browser.
struct DebugHubTests {
    static let token = "debug-token-0123456789abcdef"

    /// A hub with a clock moved by hand.
    final class Fixture: Sendable {
        final class Time: Sendable {
            let value = Mutex<Duration>(.zero)
        }
        let time = Time()
        let hub: DebugHub

        init(_ change: (inout DebugSettings) -> Void = { _ in }) {
            var settings = DebugSettings()
            settings.token = DebugHubTests.token
            change(&settings)
            let time = self.time
            hub = DebugHub(settings: settings, now: { time.value.withLock { $0 } })
        }

        func advance(_ duration: Duration) { time.value.withLock { $0 += duration } }
    }

    /// A trace of a push of `event` that evaluated `tags` (name and outcome) in container `GTM-X` (the runtime
    /// makes traces; a test reads one from its JSON).
    static func trace(_ event: String, tags: [(String, String)] = []) -> PushTrace {
        let tagsJSON = tags.enumerated().map { index, tag in
            #"{"index":\#(index),"name":"\#(tag.0)","function":"__funct","outcome":"\#(tag.1)"}"#
        }
        let evaluations =
            tags.isEmpty
            ? ""
            : #"{"container_id":"GTM-X","container_version":"1","event":"\#(event)","nested":false,"tags":[\#(tagsJSON.joined(separator: ","))],"variables":[]}"#
        return try! PushTrace(
            json:
                #"{"version":1,"session_id":"alice","event":"\#(event)","message":{},"outcome":"applied","changes":[],"evaluations":[\#(evaluations)],"records":[],"data_layer":{}}"#
        )
    }

    @Test func nobodyFollowedMeansNoPushIsTraced() {
        let fixture = Fixture()
        #expect(fixture.hub.tracing(userID: "alice", headers: [:]) == nil)
        #expect(fixture.hub.tracing(userID: "alice", headers: [DebugHub.header: "wrong-token-0123456789"]) == nil)
        #expect(!fixture.hub.isFollowed("alice"))
    }

    @Test func theDebugHeaderWithTheTokenTracesAndFollowsItsUser() throws {
        let fixture = Fixture()
        #expect(fixture.hub.tracing(userID: "alice", headers: [DebugHub.header: Self.token]) == .header)
        #expect(fixture.hub.isFollowed("alice"))
        #expect(fixture.hub.tracing(userID: "alice", headers: [:]) == .followed)
        #expect(fixture.hub.tracing(userID: "bob", headers: [:]) == nil)
    }

    @Test func aFollowedUserKeepsTheirLastPushesNewestFirst() throws {
        let fixture = Fixture { $0.pushesPerUser = 200 }
        try fixture.hub.follow("alice")
        for index in 1...205 { fixture.hub.record(Self.trace("e\(index)"), userID: "alice", tracing: .followed) }
        let pushes = fixture.hub.pushes(of: "alice")
        #expect(pushes.count == 200)
        #expect(pushes.first?.trace.event == "e205")
        #expect(pushes.last?.trace.event == "e6")
        #expect(pushes.first?.sequence == 205)
    }

    @Test func followingEndsAfterTheGracePeriodOnceNoPageIsOpen() async throws {
        let fixture = Fixture { $0.followGrace = .seconds(600) }
        try fixture.hub.follow("alice")
        let subscription = try fixture.hub.subscribe("alice", after: 0)
        fixture.advance(.seconds(3600))
        #expect(fixture.hub.sweep() == 0, "a page is open")
        subscription.end()
        fixture.advance(.seconds(599))
        #expect(fixture.hub.sweep() == 0)
        fixture.advance(.seconds(2))
        #expect(fixture.hub.sweep() == 1)
        #expect(fixture.hub.tracing(userID: "alice", headers: [:]) == nil)
        #expect(fixture.hub.openStreams == 0)
    }

    @Test func atMostTheConfiguredUsersAreFollowedAndAnIdleOneMakesRoom() throws {
        let fixture = Fixture { $0.maximumFollowedUsers = 16 }
        var subscriptions: [DebugHub.Subscription] = []
        for index in 0..<16 {
            try fixture.hub.follow("user\(index)")
            fixture.advance(.seconds(1))
        }
        // The 17th replaces the user followed the longest ago without an open page.
        try fixture.hub.follow("user16")
        #expect(!fixture.hub.isFollowed("user0"))
        #expect(fixture.hub.followedUsers.count == 16)
        // With a page open for each of them, there is no room.
        let fixture2 = Fixture {
            $0.maximumFollowedUsers = 2; $0.maximumStreams = 8
        }
        subscriptions.append(try fixture2.hub.subscribe("a", after: 0))
        subscriptions.append(try fixture2.hub.subscribe("b", after: 0))
        #expect(throws: DebugHub.Refusal.tooManyUsers(2)) { try fixture2.hub.follow("c") }
        for subscription in subscriptions { subscription.end() }
    }

    @Test func everyFollowedUsersPushIsTracedAndNoOneElsesWhoeverFollowsAndStops() throws {
        // The push path asks a 64-bit filter of the followed users before the lock: 16 users share its bits with
        // many others, and an eviction or the end of the grace period must clear a user's bit.
        let fixture = Fixture {
            $0.maximumFollowedUsers = 16; $0.followGrace = .seconds(600)
        }
        for index in 0..<20 {
            try fixture.hub.follow("followed-\(index)")
            fixture.advance(.seconds(1))
        }
        for index in 0..<20 {
            let expected: DebugTracing? = index < 4 ? nil : .followed
            #expect(fixture.hub.tracing(userID: "followed-\(index)", headers: [:]) == expected, "followed-\(index)")
        }
        for index in 0..<2_000 {
            #expect(fixture.hub.tracing(userID: "other-\(index)", headers: [:]) == nil)
        }
        fixture.advance(.seconds(601))
        #expect(fixture.hub.sweep() == 16)
        for index in 0..<20 {
            #expect(fixture.hub.tracing(userID: "followed-\(index)", headers: [:]) == nil)
        }
        try fixture.hub.follow("followed-7")
        #expect(fixture.hub.tracing(userID: "followed-7", headers: [:]) == .followed)
        #expect(fixture.hub.tracing(userID: "followed-8", headers: [:]) == nil)
    }

    @Test func atMostTheConfiguredStreamsAreOpen() throws {
        let fixture = Fixture { $0.maximumStreams = 8 }
        var subscriptions: [DebugHub.Subscription] = []
        for _ in 0..<8 { subscriptions.append(try fixture.hub.subscribe("alice", after: 0)) }
        #expect(throws: DebugHub.Refusal.tooManyStreams(8)) { try fixture.hub.subscribe("alice", after: 0) }
        subscriptions.removeFirst().end()
        subscriptions.append(try fixture.hub.subscribe("alice", after: 0))
        #expect(fixture.hub.openStreams == 8)
        for subscription in subscriptions { subscription.end() }
        #expect(fixture.hub.openStreams == 0)
    }

    @Test func aStreamGetsTheKeptPushesAfterItsLastThenNewOnes() async throws {
        let fixture = Fixture()
        try fixture.hub.follow("alice")
        for index in 1...3 { fixture.hub.record(Self.trace("e\(index)"), userID: "alice", tracing: .followed) }
        let subscription = try fixture.hub.subscribe("alice", after: 1)
        fixture.hub.record(Self.trace("e4"), userID: "alice", tracing: .followed)
        var iterator = subscription.messages.makeAsyncIterator()
        var events: [String?] = []
        for _ in 0..<3 {
            if case .push(let entry) = await iterator.next() { events.append(entry.trace.event) }
        }
        #expect(events == ["e2", "e3", "e4"])
        subscription.end()
        #expect(await iterator.next() == nil)
    }

    @Test func aBrowserThatDoesNotReadIsDroppedAndNeverBlocksAPush() async throws {
        let fixture = Fixture { $0.pushesPerUser = 10 }
        let subscription = try fixture.hub.subscribe("alice", after: 0)
        // Its buffer holds the ring and a margin (26); nothing reads it. Every record returns at once.
        for index in 1...100 { fixture.hub.record(Self.trace("e\(index)"), userID: "alice", tracing: .followed) }
        var received = 0
        for await _ in subscription.messages { received += 1 }
        #expect(received == 26, "what its buffer held, then the stream ended")
        #expect(fixture.hub.openStreams == 0)
        // The page reconnects and catches up from the ring.
        let again = try fixture.hub.subscribe("alice", after: 90)
        var iterator = again.messages.makeAsyncIterator()
        if case .push(let entry) = await iterator.next() {
            #expect(entry.sequence == 91)
        } else {
            Issue.record("no push")
        }
        again.end()
    }

    /// A tag manager over the debug fixture container (GTM-DEBUG1: tag 0 'Braze - purchase' fires on `purchase`
    /// with a price over 10 and is blocked when the plan is `staff`; tag 1 'Braze - played song' fires on
    /// `played song`) whose observer is what the service's is with the page on.
    static func manager(counting overview: DebugOverview) throws -> (TagManager, Container) {
        let url = try #require(
            Bundle.module.url(
                forResource: "GTM-DEBUG1",
                withExtension: "json",
                subdirectory: "Fixtures/debug-containers"
            )
        )
        let container = try ContainerLoader().load(bytes: Array(try Data(contentsOf: url)), file: "GTM-DEBUG1.json")
        let counting = TagManager(observer: DebugRuntimeObserver(metrics: ServiceMetrics(), overview: overview))
        counting.add(container)
        return (counting, container)
    }

    @Test func theOverviewCountsEveryPushNotOnlyTracedOnes() throws {
        let fixture = Fixture()
        let (manager, container) = try Self.manager(counting: fixture.hub.overview)
        let session = manager.makeDataLayer(sessionID: "nobody-follows-me")
        // Nobody is followed: nothing is traced, and every push is counted.
        #expect(fixture.hub.tracing(userID: "nobody-follows-me", headers: [:]) == nil)
        session.push(event: "purchase", parameters: ["price": 20])
        session.push(event: "purchase", parameters: ["price": 5])
        fixture.advance(.seconds(20))
        session.push(event: "played song", parameters: ["title": "So What"])
        session.push(event: "purchase", parameters: ["price": 20, "plan": "staff"])
        let series = fixture.hub.overview.tagSeries(of: [container], at: fixture.hub.now())
        #expect(series.map(\.tag.name) == ["Braze - purchase", "Braze - played song"])
        #expect(series[0].counts.count == DebugOverview.buckets)
        let purchase = series[0].counts.suffix(2)
        #expect(purchase.first == DebugOverview.Counts(fired: 1, notFired: 1, blocked: 0))
        #expect(purchase.last == DebugOverview.Counts(fired: 0, notFired: 1, blocked: 1))
        let played = series[1].counts.suffix(2)
        #expect(played.first == DebugOverview.Counts(fired: 0, notFired: 2, blocked: 0))
        #expect(played.last == DebugOverview.Counts(fired: 1, notFired: 1, blocked: 0))
        // Ten minutes later the old buckets are gone; the ring's slots count the new ones from zero.
        fixture.advance(.seconds(600))
        #expect(
            fixture.hub.overview.tagSeries(of: [container], at: fixture.hub.now()).allSatisfy {
                $0.counts.allSatisfy { $0 == .init() }
            }
        )
        session.push(event: "played song")
        let later = fixture.hub.overview.tagSeries(of: [container], at: fixture.hub.now())
        #expect(later[1].counts.last == DebugOverview.Counts(fired: 1, notFired: 0, blocked: 0))
        #expect(later[1].counts.dropLast().allSatisfy { $0 == .init() })
    }

    @Test func theOverviewsCountsAgreeWithTheTracesOfTheSamePushes() throws {
        let fixture = Fixture()
        let (manager, container) = try Self.manager(counting: fixture.hub.overview)
        let session = manager.makeDataLayer(sessionID: "alice")
        var expected = [DebugOverview.Counts(), DebugOverview.Counts()]
        let pushes: [(String, ValueMap)] = [
            ("purchase", ["price": 20]), ("purchase", ["price": 20, "plan": "staff"]), ("played song", [:]),
            ("purchase", ["price": 1]), ("screen", [:]),
        ]
        for (event, parameters) in pushes {
            let trace = try #require(session.push(event: event, parameters: parameters, tracing: true).trace)
            for tag in trace.tags {
                switch tag.outcome {
                case .fired, .pending, .unsupported: expected[tag.index].fired += 1
                case .blocked, .blockedByConsent: expected[tag.index].blocked += 1
                default: expected[tag.index].notFired += 1
                }
            }
        }
        let series = fixture.hub.overview.tagSeries(of: [container], at: fixture.hub.now())
        #expect(series.map { $0.counts.last! } == expected)
    }

    @Test func withThePageOffTheTagManagersObserverIsTheMetricsAlone() {
        let metrics = ServiceMetrics()
        #expect(TagServiceApplication.runtimeObserver(metrics: metrics, debug: nil) as? ServiceMetrics === metrics)
        #expect(TagServiceApplication.runtimeObserver(metrics: metrics, debug: Fixture().hub) is DebugRuntimeObserver)
    }

    @Test func deliveryLatencyIsEstimatedFromBacklogAndRate() {
        let overview = DebugOverview(now: { .zero })
        overview.sample(backlog: 0, delivered: 0, at: .seconds(0))
        overview.sample(backlog: 50, delivered: 100, at: .seconds(5))
        #expect(overview.deliveries.last?.latency == .milliseconds(2500), "50 waiting, 20 delivered a second")
        overview.sample(backlog: 50, delivered: 100, at: .seconds(10))
        #expect(overview.deliveries.last?.latency == nil, "nothing delivered meanwhile")
    }

    @Test(arguments: [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("\"onmouseover=\"x'", "&quot;onmouseover=&quot;x&#39;"),
        ("a&b", "a&amp;b"),
        ("bell\u{7}esc\u{1B}del\u{7F}", "bell\\u0007esc\\u001Bdel\\u007F"),
        ("rtl\u{202E}x\u{2028}", "rtl\\u202Ex\\u2028"),
        ("line\nfeed", "line\\u000Afeed"),
        ("café 🎵", "café 🎵"),
    ])
    func untrustedTextIsEscaped(input: String, escaped: String) {
        #expect(HTML.escape(input) == escaped)
    }

    @Test func jsonIsEscapedForHTMLAndKeepsItsLayout() {
        var html = HTML()
        html.json(.object(["<k>": .string("</pre><script>"), "n": .int(1)]))
        #expect(
            html.string == "{\n  &quot;&lt;k&gt;&quot;: &quot;&lt;/pre&gt;&lt;script&gt;&quot;,\n  &quot;n&quot;: 1\n}"
        )
    }

    @Test func aConsentCommandsPushShowsEachTypeBeforeAndAfterEscaped() throws {
        let trace = try PushTrace(
            json:
                #"{"version":1,"session_id":"alice","message":{},"outcome":"applied","consent":{"kind":"update","types":[{"type":"ad_storage","before":"denied","after":"granted"},{"type":"<script>x</script>","after":"denied"},{"type":"analytics_storage"}]},"changes":[],"evaluations":[],"records":[],"data_layer":{}}"#
        )
        let html = DebugPages.push(
            DebugPushEntry(sequence: 4, time: Date(), userID: "alice", viaHeader: false, trace: trace)
        )
        #expect(html.contains(#"<span class="event">consent update</span>"#))
        #expect(
            html.contains(
                #"<tr class="consent-type" data-type="ad_storage" data-changed="true"><td><code>ad_storage</code></td><td class="before">denied</td><td class="after">granted</td></tr>"#
            )
        )
        #expect(html.contains("&lt;script&gt;x&lt;/script&gt;") && !html.contains("<script>x"))
        #expect(
            html.contains(
                #"<td class="before">not set</td><td class="after">not set <span class="none">(unchanged)</span>"#
            )
        )
    }

    @Test func serverSentEventsPutEveryLineOfTheDataInItsOwnField() {
        let event = ServerSentEvent(id: "7", event: "push", data: "a\nb\r\nc\rd")
        #expect(event.text == "id: 7\nevent: push\ndata: a\ndata: b\ndata: c\ndata: d\n\n")
    }

    @Test func theRedirectDropsTheTokenAndStaysOnTheListener() {
        #expect(
            DebugAccessMiddleware.addressWithoutToken(.init("/debug/users/a?token=x&after=2"))
                == "/debug/users/a?after=2"
        )
        #expect(DebugAccessMiddleware.addressWithoutToken(.init("//evil.example/x?token=x")) == "/evil.example/x")
        #expect(DebugAccessMiddleware.addressWithoutToken(.init("/debug?token=x")) == "/debug")
    }

    @Test func userIDsArePercentEncodedInAddresses() {
        #expect(HTML.pathSegment("a b/c?<é>") == "a%20b%2Fc%3F%3C%C3%A9%3E")
        #expect(HTML.pathSegment("alice-1_2.3~") == "alice-1_2.3~")
    }

    @Test func theDebugPageIsOffUnlessATokenIsGiven() throws {
        let base = ["--containers", "/tmp/c", "--queue", "/tmp/q"]
        guard case .run(let off) = try TagServiceConfiguration.parse(base, environment: [:]) else {
            Issue.record("no configuration")
            return
        }
        #expect(!off.debug.isEnabled)
        guard
            case .run(let on) = try TagServiceConfiguration.parse(
                base + ["--debug-port", "0", "--debug-max-streams", "4"],
                environment: ["TAGSERVICE_DEBUG_TOKEN": Self.token]
            )
        else {
            Issue.record("no configuration")
            return
        }
        #expect(on.debug.token == Self.token && on.debug.port == 0 && on.debug.maximumStreams == 4)
        #expect(on.debug.host == "127.0.0.1" && on.debug.followGrace == .seconds(600))
        #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(base + ["--debug-port", "9"], environment: [:])
        }
        #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(base + ["--debug-token", "short"], environment: [:])
        }
        #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                base + ["--debug-token", Self.token, "--debug-max-users", "0"],
                environment: [:]
            )
        }
        #expect(TagServiceConfiguration.help.contains("--debug-token <token>"))
    }
}
