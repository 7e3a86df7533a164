import ContainerKit
import ContainerKitBraze
import ContainerKitBrazeLint
import ContainerKitLint
import ContainerKitTesting
import Testing

/// Lint's Braze rules and the runtime's Braze tag provider give the same verdict on the same arguments: the
/// lint rules call the runtime's rule checker, and this table pins the cases where the two used to differ.
struct BrazeLintAgreementTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var arguments: [(String, Value)]
        /// The rule codes the call breaks; empty when the runtime sends it.
        var rules: Set<String>
        var testDescription: String { name }
    }

    /// 127 emoji (two UTF-16 units each, one `Character` each) and one letter: exactly 255 UTF-16 units.
    static let emoji255 = String(repeating: "😀", count: 127) + "a"
    /// 128 emoji: 256 UTF-16 units but only 128 `Character`s.
    static let emoji256 = String(repeating: "😀", count: 128)

    static func purchase(_ extra: [(String, Value)], currency: Value = "USD") -> [(String, Value)] {
        [("actionType", "logPurchase"), ("productId", "sku-1"), ("currency", currency), ("price", "9.99")] + extra
    }

    static let cases: [Case] = [
        Case(name: "lower-case currency usd", arguments: purchase([], currency: "usd"), rules: []),
        Case(name: "upper-case currency USD", arguments: purchase([], currency: "USD"), rules: []),
        Case(
            name: "currency XYZ is not ISO-4217",
            arguments: purchase([], currency: "XYZ"),
            rules: ["invalid_currency"]
        ),
        Case(name: "currency of four letters", arguments: purchase([], currency: "USDX"), rules: ["invalid_currency"]),
        Case(name: "quantity 1", arguments: purchase([("quantity", 1)]), rules: []),
        Case(name: "quantity 100 as text", arguments: purchase([("quantity", "100")]), rules: []),
        Case(name: "quantity 0", arguments: purchase([("quantity", 0)]), rules: ["quantity_out_of_range"]),
        Case(name: "quantity 101", arguments: purchase([("quantity", 101)]), rules: ["quantity_out_of_range"]),
        Case(name: "quantity 2.5", arguments: purchase([("quantity", 2.5)]), rules: ["invalid_type"]),
        Case(name: "price that is not a number", arguments: purchase([("price", "cheap")]), rules: ["invalid_type"]),
        Case(
            name: "event name of 255 UTF-16 units with non-BMP characters",
            arguments: [("actionType", "logEvent"), ("eventName", .string(emoji255))],
            rules: []
        ),
        Case(
            name: "event name of 256 UTF-16 units in 128 characters",
            arguments: [("actionType", "logEvent"), ("eventName", .string(emoji256))],
            rules: ["too_long"]
        ),
        Case(
            name: "property value of 256 UTF-16 units",
            arguments: [("actionType", "logEvent"), ("eventName", "e"), ("plan", .string(emoji256))],
            rules: ["too_long"]
        ),
        Case(
            name: "property key of 255 UTF-16 units",
            arguments: [("actionType", "logEvent"), ("eventName", "e"), (emoji255, "gold")],
            rules: []
        ),
        Case(
            name: "product id of 256 UTF-16 units",
            arguments: purchase([]).map { $0.0 == "productId" ? ($0.0, .string(emoji256)) : $0 },
            rules: ["too_long"]
        ),
        Case(
            name: "$-prefixed property key",
            arguments: [("actionType", "logEvent"), ("eventName", "e"), ("$plan", "gold")],
            rules: ["reserved_key"]
        ),
        Case(
            name: "consent key as an event property",
            arguments: [("actionType", "logEvent"), ("eventName", "e"), ("$google_ad_user_data", true)],
            rules: ["reserved_key"]
        ),
        Case(
            name: "consent key as a boolean custom attribute",
            arguments: [
                ("actionType", "customAttribute"), ("customAttributeKey", "$google_ad_user_data"),
                ("customAttributeValue", true),
            ],
            rules: []
        ),
        Case(
            name: "reserved event property key",
            arguments: [("actionType", "logEvent"), ("eventName", "e"), ("event_name", "checkout")],
            rules: ["reserved_key"]
        ),
        Case(
            name: "custom attribute key that is a profile field",
            arguments: [
                ("actionType", "customAttribute"), ("customAttributeKey", "gender"), ("customAttributeValue", "female"),
            ],
            rules: ["reserved_key"]
        ),
        Case(
            name: "custom attribute key that is a profile field in another case",
            arguments: [
                ("actionType", "customAttribute"), ("customAttributeKey", "Gender"), ("customAttributeValue", "female"),
            ],
            rules: []
        ),
        Case(
            name: "$-prefixed custom attribute key",
            arguments: [
                ("actionType", "customAttribute"), ("customAttributeKey", "$tier"), ("customAttributeValue", 1),
            ],
            rules: ["reserved_key"]
        ),
        Case(
            name: "missing event name",
            arguments: [("actionType", "logEvent")],
            rules: ["missing_parameter"]
        ),
        Case(
            name: "empty event name",
            arguments: [("actionType", "logEvent"), ("eventName", "")],
            rules: ["empty"]
        ),
        Case(
            name: "setUserAttribute without a field",
            arguments: [("actionType", "setUserAttribute")],
            rules: ["missing_parameter"]
        ),
        Case(
            name: "setUserAttribute with a field that is not standard",
            arguments: [("actionType", "setUserAttribute"), ("favourite_colour", "blue")],
            rules: ["unknown_attribute"]
        ),
    ]

    /// The rule codes the runtime provider drops the call for.
    static func runtimeRules(_ arguments: [(String, Value)]) throws -> Set<String> {
        var map = ValueMap()
        for (key, value) in arguments { map[key] = value }
        let manager = TagManager(logger: InMemoryLogger())
        let provider = BrazeTagProvider(sink: InMemoryAnalyticsSink())
        let session = manager.makeDataLayer(sessionID: "s")
        BrazeTagProvider.setUser(.externalID("u"), on: session)
        let output = try provider.perform(
            FunctionCall(
                name: "BrazeGTMTagManager",
                arguments: map,
                eventName: "test",
                containerID: "GTM-TEST",
                tagID: 1,
                displayName: "Braze",
                dataLayer: session,
                logger: InMemoryLogger()
            )
        )
        return Set(output.problems.compactMap(ruleCode))
    }

    /// The rule codes lint reports for a container whose one Braze tag has these constant arguments.
    static func lintRules(_ arguments: [(String, Value)]) -> Set<String> {
        let table = arguments.map { key, value in
            #"["map", "key", \#(Value.string(key).jsonText), "value", \#(value.jsonText)]"#
        }
        let json = """
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "instance_name": "Braze",
              "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", \(table.joined(separator: ", "))]}]}}
            """
        let findings = Linter(catalog: Linter.allRules).lint(bytes: Array(json.utf8), file: "GTM-BRAZE.json")
        return Set(findings.filter { $0.ruleID.hasPrefix("braze_") }.compactMap { ruleCode($0.message) })
    }

    /// `… (rule_code)` → `rule_code`.
    static func ruleCode(_ message: String) -> String? {
        guard message.hasSuffix(")"), let open = message.lastIndex(of: "(") else { return nil }
        return String(message[message.index(after: open)..<message.index(before: message.endIndex)])
    }

    @Test(arguments: cases)
    func lintAndTheRuntimeAgree(_ example: Case) throws {
        let runtime = try Self.runtimeRules(example.arguments)
        let lint = Self.lintRules(example.arguments)
        #expect(runtime == example.rules, "runtime")
        #expect(lint == example.rules, "lint")
    }

    @Test func aVariableArgumentIsLeftToTheRuntime() {
        // The currency comes from the data layer: lint cannot know it and says nothing about it, but still
        // checks the constant quantity.
        let json = """
            {"resource": {"macros": [{"function": "__v", "vtp_name": "currency", "vtp_dataLayerVersion": 2}],
              "tags": [{"function": "__funct", "tag_id": 1, "instance_name": "Braze",
              "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "logPurchase"],
                ["map", "key", "productId", "value", "sku"], ["map", "key", "currency", "value", ["macro", 0]],
                ["map", "key", "price", "value", 1], ["map", "key", "quantity", "value", 500]]}]}}
            """
        let findings = Linter(catalog: Linter.allRules).lint(bytes: Array(json.utf8), file: "GTM-BRAZE.json")
        #expect(
            findings.filter { $0.ruleID.hasPrefix("braze_") }.compactMap { Self.ruleCode($0.message) } == [
                "quantity_out_of_range"
            ]
        )
    }
}
