import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

/// A provider writing to an in-memory sink, with a fixed clock and predictable IDs.
struct ProviderFixture {
    static let now = Date(timeIntervalSince1970: 1_714_564_800.123)

    let sink = InMemoryAnalyticsSink()
    let logger = InMemoryLogger()
    let manager: TagManager
    let provider: BrazeTagProvider
    let session: DataLayer

    init(warningClock: ManualClock = ManualClock()) {
        manager = TagManager(logger: logger)
        provider = BrazeTagProvider(
            sink: sink,
            clock: { ProviderFixture.now },
            idGenerator: AnalyticsRecordIDGenerator(prefix: "t"),
            warningClock: warningClock
        )
        session = manager.makeDataLayer(sessionID: "s-1")
        BrazeTagProvider.setUser(.externalID("u-0"), on: session)
    }

    @discardableResult
    func run(_ arguments: ValueMap, on session: DataLayer? = nil, tagID: Int? = 7, name: String? = "Braze Tag")
        -> TagOutput?
    {
        try? provider.perform(
            FunctionCall(
                name: "BrazeGTMTagManager",
                arguments: arguments,
                eventName: "test",
                containerID: "GTM-TEST",
                tagID: tagID,
                displayName: name,
                dataLayer: session ?? self.session,
                logger: logger
            )
        )
    }

    /// The warnings logged: constant messages, with what they are about in their metadata.
    var warnings: [InMemoryLogger.Entry] { logger.entries.filter { $0.level == .warning } }
    /// The drop reasons the warnings carry (`reason` metadata).
    var reasons: [String] { warnings.map { $0.metadata["reason"] ?? "" } }
}

@Suite struct BrazeTagProviderTests {
    @Test func logEventMakesAnEventWithTypedProperties() throws {
        let fixture = ProviderFixture()
        BrazeTagProvider.setUser(.brazeID("b-1"), on: fixture.session)
        fixture.run([
            "actionType": "logEvent", "eventName": "played song", "genre": "jazz", "plays": 3, "rating": 4.5,
            "liked": true, "tags": ["a", "b"], "whole": 2.0,
        ])
        let record = try #require(fixture.sink.records.first)
        #expect(fixture.sink.count == 1)
        #expect(record.user == .brazeID("b-1"))
        #expect(record.time == ISO8601Timestamp.date(from: "2024-05-01T12:00:00.123Z"))
        #expect(record.id == "t-1")
        guard case .customEvent(let name, let properties) = record.payload else {
            Issue.record("expected a custom event, got \(record.payload)")
            return
        }
        #expect(name == "played song")
        #expect(
            properties == [
                "genre": "jazz", "plays": .int(3), "rating": .double(4.5), "liked": true, "tags": ["a", "b"],
                "whole": .double(2),
            ]
        )
        #expect(properties.keys == ["genre", "plays", "rating", "liked", "tags", "whole"])
        #expect(fixture.warnings.isEmpty)
    }

    @Test func customAttributeKeepsEachType() throws {
        let fixture = ProviderFixture()
        let cases: [(Value, Value?, CustomAttributeValue)] = [
            ("gold", nil, .string("gold")),
            (.int(7), nil, .int(7)),
            (.double(1.5), nil, .double(1.5)),
            (true, nil, .bool(true)),
            (["a", "b"], nil, .strings(["a", "b"])),
            (.null, nil, .null),
            ("2024-01-02", "date", .date(ISO8601Timestamp.date(from: "2024-01-02T00:00:00Z")!)),
            ("2024-01-02T03:04:05.600+01:00", "date", .date(ISO8601Timestamp.date(from: "2024-01-02T02:04:05.600Z")!)),
            // The last moment Braze keeps as a date (a later one is a string there, and breaks the rules here).
            ("3000-12-31T23:59:59Z", "date", .date(ISO8601Timestamp.date(from: "3000-12-31T23:59:59Z")!)),
            ("42", "integer", .int(42)),
            ("2.5", "double", .double(2.5)),
            ("true", "boolean", .bool(true)),
            (.int(12), "string", .string("12")),
        ]
        for (value, type, _) in cases {
            var arguments: ValueMap = [
                "actionType": "customAttribute", "customAttributeKey": "level", "customAttributeValue": value,
            ]
            if let type { arguments["customAttributeType"] = type }
            fixture.run(arguments)
        }
        #expect(fixture.warnings.isEmpty)
        let operations = fixture.sink.records.map(\.payload)
        #expect(operations == cases.map { .customAttribute(key: "level", operation: .set($0.2)) })
    }

    @Test func logPurchaseNormalizesCurrencyAndKeepsProperties() throws {
        let fixture = ProviderFixture()
        fixture.run([
            "actionType": "logPurchase", "productId": "sku-1", "currency": "usd", "price": 9.99, "quantity": 2,
            "coupon": "SPRING",
        ])
        fixture.run(["actionType": "logPurchase", "productId": .int(123), "currency": "EUR", "price": .int(5)])
        #expect(fixture.warnings.isEmpty)
        #expect(
            fixture.sink.records.map(\.payload) == [
                .purchase(
                    productID: "sku-1",
                    currency: "USD",
                    price: 9.99,
                    quantity: 2,
                    properties: ["coupon": "SPRING"]
                ),
                .purchase(productID: "123", currency: "EUR", price: 5, quantity: 1, properties: [:]),
            ]
        )
    }

    @Test func incrementAndArrayActionsMakeAttributeOperations() {
        let fixture = ProviderFixture()
        fixture.run(["actionType": "incrementCustomAttribute", "customAttributeKey": "logins"])
        fixture.run(["actionType": "incrementCustomAttribute", "customAttributeKey": "logins", "incrementValue": -2])
        fixture.run([
            "actionType": "addToCustomAttributeArray", "customAttributeKey": "genres", "customAttributeValue": "jazz",
        ])
        fixture.run([
            "actionType": "removeFromCustomAttributeArray", "customAttributeKey": "genres",
            "customAttributeValue": ["rock", "pop"],
        ])
        #expect(fixture.warnings.isEmpty)
        #expect(
            fixture.sink.records.map(\.payload) == [
                .customAttribute(key: "logins", operation: .increment(1)),
                .customAttribute(key: "logins", operation: .increment(-2)),
                .customAttribute(key: "genres", operation: .addToArray(["jazz"])),
                .customAttribute(key: "genres", operation: .removeFromArray(["rock", "pop"])),
            ]
        )
    }

    @Test func setUserAttributeAcceptsPairsAndFieldParameters() {
        let fixture = ProviderFixture()
        fixture.run([
            "actionType": "setUserAttribute", "userAttributeKey": "email", "userAttributeValue": "ana@example.com",
        ])
        fixture.run([
            "actionType": "setUserAttribute", "firstName": "Ana", "gender": "female", "country": "pt", "language": "PT",
            "dob": "1990-02-28", "email_subscribe": "Opted_In", "phone": "+351 912 345 678", "home_city": .null,
        ])
        #expect(fixture.warnings.isEmpty)
        #expect(
            fixture.sink.records.map(\.payload) == [
                .userAttribute(.email, value: "ana@example.com"),
                .userAttribute(.firstName, value: "Ana"),
                .userAttribute(.gender, value: "F"),
                .userAttribute(.country, value: "PT"),
                .userAttribute(.language, value: "pt"),
                .userAttribute(.dob, value: "1990-02-28"),
                .userAttribute(.emailSubscribe, value: "opted_in"),
                .userAttribute(.phone, value: "+351 912 345 678"),
                .userAttribute(.homeCity, value: .null),
            ]
        )
    }

    @Test func changeUserSwitchesTheSessionToTheExternalID() throws {
        let fixture = ProviderFixture()
        BrazeTagProvider.setUser(.brazeID("b-1"), on: fixture.session)
        fixture.run(["actionType": "logEvent", "eventName": "before"])
        fixture.run(["actionType": "changeUser", "externalUserId": "u-9"])
        fixture.run(["actionType": "logEvent", "eventName": "after"])
        fixture.run(["actionType": "changeUser", "externalUserId": "u-9"])
        let records = fixture.sink.records
        #expect(records.map(\.user) == [.brazeID("b-1"), .externalID("u-9"), .externalID("u-9")])
        #expect(records[1].payload == .changeUser(externalID: "u-9", previousUser: .brazeID("b-1")))
        #expect(BrazeTagProvider.user(of: fixture.session) == .externalID("u-9"))
    }

    @Test func eachSessionKeepsItsOwnUser() {
        let fixture = ProviderFixture()
        let other = fixture.manager.makeDataLayer(sessionID: "s-2")
        BrazeTagProvider.setUser(.userAlias(name: "cookie-1", label: "web"), on: fixture.session)
        BrazeTagProvider.setUser(.brazeID("b-2"), on: other)
        fixture.run(["actionType": "changeUser", "externalUserId": "u-1"], on: fixture.session)
        fixture.run(["actionType": "logEvent", "eventName": "a"], on: fixture.session)
        fixture.run(["actionType": "logEvent", "eventName": "b"], on: other)
        #expect(fixture.sink.records.map(\.user) == [.externalID("u-1"), .externalID("u-1"), .brazeID("b-2")])
        #expect(
            fixture.sink.records[0].payload
                == .changeUser(externalID: "u-1", previousUser: .userAlias(name: "cookie-1", label: "web"))
        )
    }

    @Test func aCallInASessionWithoutAUserIsHeldPendingSayingHowToReleaseIt() throws {
        let fixture = ProviderFixture()
        BrazeTagProvider.setUser(nil, on: fixture.session)
        let output = try #require(fixture.run(["actionType": "logEvent", "eventName": "anonymous"]))
        #expect(fixture.sink.records.isEmpty)
        #expect(output.dropReason == nil)
        #expect(output.pendingReason?.contains("until the session has a Braze user") == true)
        #expect(output.pendingReason?.contains("setUser") == true)
        #expect(BrazeTagProvider.pendingRecords(of: fixture.session).map(\.user) == [nil])
        // changeUser needs no user: it gives the session one, and the push's end releases what was held.
        fixture.run(["actionType": "changeUser", "externalUserId": "u-9"])
        fixture.run(["actionType": "logEvent", "eventName": "known"])
        #expect(fixture.sink.records.map(\.user) == [.externalID("u-9"), .externalID("u-9")])
        let released = try #require(fixture.provider.endOfPush(fixture.session))
        #expect(released.records.count == 1)
        #expect(fixture.sink.records.map(\.user) == Array(repeating: .externalID("u-9"), count: 3))
    }

    static let violations: [(ValueMap, String, String)] = [
        (["actionType": "logEvent", "eventName": "e", "$price": 1], "$price", "reserved_key"),
        // Keys /users/track reserves in an event's properties: it refuses the whole request.
        (["actionType": "logEvent", "eventName": "e", "time": "2024-05-01T10:00:00Z"], "time", "reserved_key"),
        (["actionType": "logEvent", "eventName": "e", "event_name": "checkout"], "event_name", "reserved_key"),
        (
            ["actionType": "logPurchase", "productId": "p", "currency": "USD", "price": 1, "product_id": "q"],
            "product_id", "reserved_key"
        ),
        // A custom attribute named like an identifier or a profile field would set that instead.
        (
            ["actionType": "customAttribute", "customAttributeKey": "external_id", "customAttributeValue": "other"],
            "external_id", "reserved_key"
        ),
        (
            ["actionType": "customAttribute", "customAttributeKey": "email", "customAttributeValue": "not an email"],
            "email", "reserved_key"
        ),
        (
            ["actionType": "incrementCustomAttribute", "customAttributeKey": "_update_existing_only"],
            "_update_existing_only", "reserved_key"
        ),
        (
            ["actionType": "logEvent", "eventName": "e", "note": .string(String(repeating: "x", count: 256))], "note",
            "too_long"
        ),
        (["actionType": "logEvent", "eventName": "e", "gone": .null], "gone", "invalid_type"),
        (["actionType": "logEvent", "genre": "jazz"], "eventName", "missing_parameter"),
        (
            ["actionType": "logEvent", "eventName": .string(String(repeating: "e", count: 256))], "eventName",
            "too_long"
        ),
        (
            [
                "actionType": "logEvent", "eventName": "e",
                "big": .array(Array(repeating: .string(String(repeating: "x", count: 200)), count: 300)),
            ],
            "properties", "properties_too_large"
        ),
        (
            ["actionType": "logPurchase", "productId": "p", "currency": "XYZ", "price": 1], "currency",
            "invalid_currency"
        ),
        (
            ["actionType": "logPurchase", "productId": "p", "currency": "USD", "price": 1, "quantity": 101], "quantity",
            "quantity_out_of_range"
        ),
        (
            ["actionType": "logPurchase", "productId": "p", "currency": "USD", "price": 1, "quantity": 0], "quantity",
            "quantity_out_of_range"
        ),
        (["actionType": "logPurchase", "productId": "p", "currency": "USD"], "price", "missing_parameter"),
        (
            ["actionType": "logPurchase", "productId": "p", "currency": "USD", "price": "cheap"], "price",
            "invalid_type"
        ),
        (
            ["actionType": "customAttribute", "customAttributeKey": "$level", "customAttributeValue": 1], "$level",
            "reserved_key"
        ),
        (
            ["actionType": "customAttribute", "customAttributeKey": "level", "customAttributeValue": ["a": 1]], "level",
            "invalid_type"
        ),
        (
            ["actionType": "customAttribute", "customAttributeKey": "tags", "customAttributeValue": ["a", 1]], "tags",
            "invalid_type"
        ),
        (
            [
                "actionType": "customAttribute", "customAttributeKey": "since", "customAttributeValue": "yesterday",
                "customAttributeType": "date",
            ],
            "since", "invalid_value"
        ),
        (
            [
                "actionType": "customAttribute", "customAttributeKey": "expires", "customAttributeValue": "3001-01-01",
                "customAttributeType": "date",
            ],
            "expires", "invalid_value"
        ),
        (
            ["actionType": "customAttribute", "customAttributeKey": "level"], "customAttributeValue",
            "missing_parameter"
        ),
        (["actionType": "setUserAttribute", "email": "not-an-email"], "email", "invalid_email"),
        (["actionType": "setUserAttribute", "gender": "X"], "gender", "invalid_value"),
        (["actionType": "setUserAttribute", "dob": "1990-02-30"], "dob", "invalid_value"),
        (["actionType": "setUserAttribute", "favourite_color": "red"], "favourite_color", "unknown_attribute"),
        (["actionType": "changeUser", "externalUserId": ""], "externalUserId", "empty"),
        (["actionType": "changeUser"], "externalUserId", "missing_parameter"),
        (
            ["actionType": "incrementCustomAttribute", "customAttributeKey": "n", "incrementValue": 1.5],
            "incrementValue", "invalid_type"
        ),
    ]

    @Test(arguments: violations.indices)
    func ruleViolationDropsTheCallWithAWarningNamingTagKeyAndRule(index: Int) throws {
        let (arguments, key, rule) = Self.violations[index]
        let fixture = ProviderFixture()
        fixture.run(arguments, tagID: 12, name: "Braze Purchase")
        #expect(fixture.sink.records.isEmpty)
        let warning = try #require(fixture.warnings.first)
        #expect(fixture.warnings.count == 1)
        #expect(warning.message == "dropped a braze tag: it breaks braze rules")
        #expect(warning.metadata["tag"] == "12" && warning.metadata["tag_name"] == "Braze Purchase")
        #expect(warning.metadata["rules"]?.split(separator: ",").contains { $0 == rule } == true)
        let reason = warning.metadata["reason"] ?? ""
        #expect(reason.contains("braze tag 'Braze Purchase' (tag 12)"))
        #expect(reason.contains("'\(key)'"))
        #expect(reason.contains("(\(rule))"))
    }

    @Test(
        arguments: [
            (["eventName": "e", "title": .string(longText)], "'title': property 'title' is 300 characters long"),
            (
                ["eventName": "e", "tags": ["ok", .string(longText)]],
                "'tags': an element of 'tags' is 300 characters long"
            ),
            (["eventName": .string(longText)], "'eventName': 'eventName' is 300 characters long"),
        ] as [(ValueMap, String)]
    )
    func aLengthMessageQuotesEachNameOnce(arguments: ValueMap, message: String) throws {
        let fixture = ProviderFixture()
        var call = arguments
        call["actionType"] = "logEvent"
        fixture.run(call)
        let reason = try #require(fixture.reasons.first)
        #expect(reason.hasSuffix(": " + message + "; the limit is 255 (too_long)"), "\(reason)")
    }

    @Test func anEmptinessMessageQuotesTheNameOnce() throws {
        let fixture = ProviderFixture()
        fixture.run(["actionType": "changeUser", "externalUserId": ""])
        let reason = try #require(fixture.reasons.first)
        #expect(reason.hasSuffix(": 'externalUserId': 'externalUserId' is empty (empty)"), "\(reason)")
    }

    static let longText = String(repeating: "x", count: 300)

    @Test func aViolationLeavesOtherCallsAlone() {
        let fixture = ProviderFixture()
        fixture.run(["actionType": "logEvent", "eventName": "ok-1"])
        fixture.run(["actionType": "logPurchase", "productId": "p", "currency": "??", "price": 1, "quantity": 500])
        fixture.run(["actionType": "logEvent", "eventName": "ok-2"])
        #expect(
            fixture.sink.records.map(\.payload) == [
                .customEvent(name: "ok-1", properties: [:]), .customEvent(name: "ok-2", properties: [:]),
            ]
        )
        #expect(fixture.warnings.count == 1)
        #expect(
            fixture.reasons[0].contains("(invalid_currency)") && fixture.reasons[0].contains("(quantity_out_of_range)")
        )
        #expect(
            Set((fixture.warnings[0].metadata["rules"] ?? "").split(separator: ",").map(String.init))
                == ["invalid_currency", "quantity_out_of_range"]
        )
    }

    @Test func missingOrUnknownActionTypeIsAWarningAndDoesNothing() {
        let fixture = ProviderFixture()
        fixture.run(["eventName": "e"], tagID: nil, name: "No Action")
        fixture.run(["actionType": "teleport"], tagID: 3, name: nil)
        #expect(fixture.sink.records.isEmpty)
        #expect(
            fixture.warnings.map(\.message) == [
                "dropped a braze tag: it has no actionType", "dropped a braze tag: unknown actionType",
            ]
        )
        #expect(
            fixture.reasons == [
                "braze tag 'No Action': missing parameter 'actionType'; nothing sent",
                "braze tag 3: unknown actionType 'teleport'; nothing sent",
            ]
        )
        #expect(fixture.warnings[1].metadata["action"] == "teleport" && fixture.warnings[1].metadata["tag"] == "3")
    }

    @Test func registersUnderTheGivenClassPaths() {
        let fixture = ProviderFixture()
        fixture.provider.register(on: fixture.manager)
        fixture.provider.register(on: fixture.manager, classPaths: ["com.example.Braze"])
        for path in BrazeTagProvider.defaultClassPaths + ["com.example.Braze"] {
            #expect(fixture.manager.tagHandler(for: path) is BrazeTagProvider)
        }
    }

    @Test func performReportsRecordsAndDropsInTheTagOutput() throws {
        let fixture = ProviderFixture()
        let output = try #require(fixture.run(["actionType": "logEvent", "eventName": "played"]))
        #expect(output.records.count == 1)
        #expect((output.records.first as? AnalyticsRecord) == fixture.sink.records.first)
        #expect(output.dropReason == nil && output.problems.isEmpty && output.durability == nil)

        let dropped = try #require(
            fixture.run(["actionType": "logPurchase", "productId": "p", "currency": "??", "price": 1])
        )
        #expect(dropped.records.isEmpty)
        #expect(dropped.problems.count == 1 && dropped.problems[0].contains("(invalid_currency)"))
        #expect(dropped.dropReason?.contains("dropped 'logPurchase'") == true)
    }

    @Test func repeatedWarningsAreRateLimitedAndCounted() {
        let clock = ManualClock()
        let fixture = ProviderFixture(warningClock: clock)
        let bad: ValueMap = ["actionType": "logPurchase", "productId": "p", "currency": "??", "price": 1]
        for _ in 0..<5 { fixture.run(bad) }
        #expect(fixture.warnings.count == 1)
        // Another tag's warning is not held back by the first tag's.
        fixture.run(bad, tagID: 8)
        #expect(fixture.warnings.count == 2)
        clock.advance(by: .seconds(61))
        fixture.run(bad)
        #expect(fixture.warnings.count == 3)
        #expect(fixture.warnings[2].message == fixture.warnings[0].message)
        #expect(fixture.warnings[2].metadata["repeated"] == "4")
    }

    @Test func aDurableQueueSinkPutsItsTokenInTheOutput() async throws {
        let directory = TemporaryDirectory("provider")
        defer { directory.remove() }
        var settings = DeliverySettings()
        settings.logger = InMemoryLogger()
        let destination = InMemoryAnalyticsSink()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(
            try await ContainerLoader().load(
                path: Fixtures.containersDirectory.appendingPathComponent("GTM-MUSIC01.json").path
            )
        )
        BrazeTagProvider(sink: queue).register(
            on: manager,
            classPaths: ["com.appboy.googletagmanager.BrazeGtmTagProvider"]
        )
        let session = manager.makeDataLayer()
        BrazeTagProvider.setUser(.brazeID("b-1"), on: session)
        try await whileRunning(queue) {
            let result = await session.push(
                event: "played song",
                parameters: ["title": "Blue", "genre": "jazz", "duration": 300]
            )
            let tokens = result.durability
            #expect(tokens.count == 1)
            #expect(tokens.first?.source === queue)
            let records = result.fired.flatMap { $0.output?.records ?? [] }
            #expect(!records.isEmpty)
            try await result.waitUntilDurable()
            #expect(queue.statistics.durableRecords >= records.count)
            try await queue.flush()
        }
        #expect(!destination.records.isEmpty)
    }
}
