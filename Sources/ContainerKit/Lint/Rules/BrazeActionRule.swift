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
            guard let action = tag.argument("actionType") else {
                findings.append(
                    input.finding(
                        Self.description,
                        "braze tag \(tag.label) has no 'actionType' argument",
                        at: tag.pointer
                    )
                )
                continue
            }
            guard let name = action.value.literalText else { continue }  // set by a variable: checked at run time
            guard let required = BrazeTagArguments.requiredArguments[name] else {
                let message =
                    "braze tag \(tag.label) has unknown actionType '\(name)'; expected one of "
                    + BrazeTagArguments.actions.joined(separator: ", ")
                findings.append(input.finding(Self.description, message, at: action.pointer))
                continue
            }
            for key in required {
                let argument = tag.argument(key)
                let isBlank = argument.flatMap { $0.value.literalText.map { $0.isEmpty } } ?? false
                guard argument == nil || isBlank || Self.isUndefined(argument!.value) else { continue }
                let message = "braze tag \(tag.label) with actionType '\(name)' needs a non-empty '\(key)' argument"
                findings.append(input.finding(Self.description, message, at: argument?.pointer ?? tag.pointer))
            }
        }
        return findings
    }

    private static func isUndefined(_ expr: Expr) -> Bool {
        if case .literal(.undefined) = expr { return true }
        if case .literal(.null) = expr { return true }
        return false
    }
}
