import ContainerKit
import ContainerKitBraze
import ContainerKitLint

/// Braze provider tags whose constant arguments break Braze's data rules — checked by the runtime's own rule
/// checker in `ContainerKitBraze`, so lint warns about exactly what the provider would drop: keys longer than
/// 255 UTF-16 units or starting with `$`, strings longer than 255 UTF-16 units, a currency that is not an
/// ISO-4217 code (any case), a quantity outside 1–100, a price that is not a number, and the rest.
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
                ["map", "key", "productId", "value", "sku-1"], ["map", "key", "currency", "value", "XYZ"],
                ["map", "key", "price", "value", "9.99"], ["map", "key", "quantity", "value", "250"]]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "logPurchase"],
                ["map", "key", "productId", "value", "sku-1"], ["map", "key", "currency", "value", "usd"],
                ["map", "key", "price", "value", "9.99"], ["map", "key", "quantity", "value", 2]]}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        var findings: [LintFinding] = []
        for tag in BrazeTagArguments.all(in: input) {
            guard case .success(let action)? = tag.action else { continue }
            for found in tag.violations(of: action) where !BrazeActionRule.rules.contains(found.violation.rule) {
                let message = "braze tag \(tag.label): \(found.violation.message) (\(found.violation.rule))"
                findings.append(input.finding(Self.description, message, at: found.pointer))
            }
        }
        return findings
    }
}
