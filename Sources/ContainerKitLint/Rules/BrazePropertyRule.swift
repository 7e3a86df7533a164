import ContainerKit

/// Braze provider tags whose constant arguments break Braze's data rules: property and attribute keys
/// longer than 255 characters or starting with `$`, strings longer than 255 characters, a currency that
/// is not an ISO 4217 code, a quantity outside 1–100, a price that is not a number.
struct BrazePropertyRule: LintRule {
    static let description = RuleDescription(
        id: "braze_property",
        name: "Braze Property",
        description:
            "A Braze provider tag's constant key or value breaks Braze's rules (keys, currency, quantity, price).",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "logEvent"],
                ["map", "key", "eventName", "value", "signup"], ["map", "key", "$plan", "value", "gold"]]}]}}
            """#,
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "logPurchase"],
                ["map", "key", "productId", "value", "sku-1"], ["map", "key", "currency", "value", "usd"],
                ["map", "key", "price", "value", "9.99"], ["map", "key", "quantity", "value", "250"]]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "logPurchase"],
                ["map", "key", "productId", "value", "sku-1"], ["map", "key", "currency", "value", "USD"],
                ["map", "key", "price", "value", "9.99"], ["map", "key", "quantity", "value", 2]]}]}}
            """#
        ]
    )

    /// Arguments a provider reads itself; every other argument of an event or purchase is a property.
    static let reservedArguments: Set<String> = [
        "actionType", "eventName", "productId", "currency", "price", "quantity",
    ]
    /// `$` keys Braze accepts (Google consent attributes).
    static let allowedDollarKeys: Set<String> = ["$google_ad_user_data", "$google_ad_personalization"]

    func check(_ input: LintInput) -> [LintFinding] {
        var findings: [LintFinding] = []
        for tag in BrazeTagArguments.all(in: input) {
            guard let action = tag.actionType, BrazeTagArguments.requiredArguments[action] != nil else { continue }
            func report(_ message: String, _ pointer: String) {
                findings.append(input.finding(Self.description, "braze tag \(tag.label): " + message, at: pointer))
            }
            switch action {
            case "logEvent", "logPurchase":
                for argument in tag.arguments where !Self.reservedArguments.contains(argument.key) {
                    if let problem = Self.keyProblem(argument.key) {
                        report("property key \(problem)", argument.pointer)
                    }
                    if let text = argument.value.literalText, text.count > 255 {
                        report(
                            "value of property '\(argument.key)' is \(text.count) characters, more than 255",
                            argument.pointer
                        )
                    }
                }
            default:
                if let argument = tag.argument("customAttributeKey"), let key = argument.value.literalText,
                    let problem = Self.keyProblem(key)
                {
                    report("custom attribute key \(problem)", argument.pointer)
                }
            }
            if let argument = tag.argument("eventName"), let name = argument.value.literalText, name.count > 255 {
                report("event name is \(name.count) characters, more than 255", argument.pointer)
            }
            if let argument = tag.argument("productId"), let id = argument.value.literalText, id.count > 255 {
                report("product id is \(id.count) characters, more than 255", argument.pointer)
            }
            if let argument = tag.argument("currency"), let currency = argument.value.literalText,
                !(currency.utf8.count == 3 && currency.utf8.allSatisfy { (0x41...0x5A).contains($0) })
            {
                report("currency '\(currency)' is not a three-letter upper-case iso 4217 code", argument.pointer)
            }
            if let argument = tag.argument("quantity"), let text = argument.value.literalText {
                let number = Value.string(text).jsNumber
                if number == nil || number! != number!.rounded() || number! < 1 || number! > 100 {
                    report("quantity '\(text)' is not a whole number from 1 to 100", argument.pointer)
                }
            }
            if let argument = tag.argument("price"), let text = argument.value.literalText,
                Value.string(text).jsNumber == nil
            {
                report("price '\(text)' is not a number", argument.pointer)
            }
        }
        return findings
    }

    /// Why Braze rejects `key`, or `nil`.
    static func keyProblem(_ key: String) -> String? {
        if key.isEmpty { return "'' is empty" }
        if key.count > 255 { return "'\(key.prefix(32))…' is \(key.count) characters, more than 255" }
        if key.hasPrefix("$") && !allowedDollarKeys.contains(key) {
            return "'\(key)' starts with '$', which braze reserves"
        }
        return nil
    }
}
