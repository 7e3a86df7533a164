import ContainerKit

/// Legacy GTM v3/v4 binary (protobuf) default containers, which ContainerKit does not read.
struct LegacyBinaryRule: LintRule {
    static let description = RuleDescription(
        id: "legacy_binary",
        name: "Legacy Binary Container",
        description: "The file is a legacy GTM v3/v4 binary (protobuf) container, which ContainerKit cannot read.",
        severity: .warning,
        triggeringExamples: [
            LintExample("\n\u{08}function\n\u{0E}instance_name\u{12}\u{04}\u{08}\u{01}\u{12}\u{00}", file: "GTM-ABCDEF")
        ],
        nonTriggeringExamples: [
            LintExample(#"{"TITLE": "flat legacy containers in JSON are read"}"#, file: "GTM-ABCDEF.json")
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let error = input.readError, error.code == .legacyBinary || input.looksLikeLegacyBinary else {
            return []
        }
        let name = input.file.split(separator: "/").last.map(String.init) ?? input.file
        let message =
            "'\(name)' is a legacy GTM v3/v4 binary (protobuf) container, which ContainerKit cannot read; "
            + "export the container from the Tag Manager UI as JSON (Admin > Export Container) and lint that"
        return [
            LintFinding(
                ruleID: Self.description.id,
                severity: Self.description.severity,
                message: message,
                file: input.file
            )
        ]
    }
}
