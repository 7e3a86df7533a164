import ContainerKit

/// JSON objects that name the same key twice: the last value silently wins, the earlier one is lost.
struct DuplicateKeyRule: LintRule {
    static let description = RuleDescription(
        id: "duplicate_key",
        name: "Duplicate Key",
        description: "A JSON object has the same key twice; only the last value is used.",
        severity: .warning,
        triggeringExamples: [
            #"{"resource": {"macros": [{"function": "__c", "vtp_value": "a", "vtp_value": "b"}]}}"#,
            #"{"TITLE": "Welcome", "TITLE": "Hello"}"#,
        ],
        nonTriggeringExamples: [
            #"{"resource": {"macros": [{"function": "__c", "vtp_value": "a"}, {"function": "__c", "vtp_value": "b"}]}}"#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let document = input.document else { return [] }
        return document.duplicateKeys.map { duplicate in
            LintFinding(
                ruleID: Self.description.id,
                severity: Self.description.severity,
                message: "key '\(duplicate.key)' appears more than once; the earlier value is ignored",
                file: input.file,
                pointer: JSONPointer.appending(duplicate.pointer, duplicate.key),
                location: duplicate.location
            )
        }
    }
}
