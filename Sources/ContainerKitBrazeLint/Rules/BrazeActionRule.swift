import ContainerKit
import ContainerKitBraze
import ContainerKitLint

/// Braze provider tags (Function Call tags whose class path is configured as Braze) with a missing or
/// unknown `actionType`, or without the arguments their action needs.
struct BrazeActionRule: LintRule {
    static let description = RuleDescription(
        id: "braze_action",
        name: "Braze Action",
        description:
            "A Braze provider tag has a missing or unknown `actionType`, or lacks an argument its action needs "
            + "(constant variables, lookup tables with constant inputs and constant templates are checked too).",
        severity: .error,
        triggeringExamples: [
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1,
              "vtp_classPath": "com.appboy.googletagmanager.BrazeGtmTagProvider",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "logEvnt"],
                ["map", "key", "eventName", "value", "signup"]]}]}}
            """#,
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1,
              "vtp_classPath": "com.appboy.googletagmanager.BrazeGtmTagProvider",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "changeUser"]]}]}}
            """#,
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "eventName", "value", "signup"]]}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__c", "instance_name": "Action", "vtp_value": "logEvent"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", ["macro", 0]]]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__md", "vtp_key": "user", "vtp_eventType": "CUSTOM"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "changeUser"],
                ["map", "key", "externalUserId", "value", ["macro", 0]]]}]}}
            """#,
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "com.example.Other",
              "vtp_functionArgument": ["list", ["map", "key", "eventName", "value", "signup"]]}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        var findings: [LintFinding] = []
        for tag in BrazeTagArguments.all(in: input) {
            guard let actionArgument = tag.argument("actionType") else {
                findings.append(
                    input.finding(
                        Self.description,
                        "braze tag \(tag.label) has no 'actionType' argument",
                        at: tag.pointer
                    )
                )
                continue
            }
            switch tag.action {
            case nil:
                continue  // set by a variable: checked at run time
            case .failure(let unknown):
                let message =
                    "braze tag \(tag.label) has unknown actionType '\(unknown.text)'; expected one of "
                    + BrazeActionType.allCases.map(\.rawValue).joined(separator: ", ")
                findings.append(input.finding(Self.description, message, at: actionArgument.pointer))
            case .success(let action):
                for found in tag.violations(of: action) where Self.rules.contains(found.violation.rule) {
                    let message =
                        "braze tag \(tag.label) with actionType '\(action.rawValue)' needs a non-empty "
                        + "'\(found.violation.key)' argument (\(found.violation.rule))"
                    findings.append(input.finding(Self.description, message, at: found.pointer))
                }
            }
        }
        return findings
    }

    /// The runtime's rules this lint rule reports (``BrazePropertyRule`` reports the others).
    static let rules: Set<BrazeRuleViolation.Rule> = [.missingParameter, .empty]
}
