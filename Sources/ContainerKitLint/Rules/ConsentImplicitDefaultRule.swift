import ContainerKit

/// Tags whose consent settings ask for consent types. ContainerKit checks them against the session's consent
/// commands, as GTM does; what it does not evaluate is GTM's implicit default for the visitor's location, which a
/// browser's served script carries: a type no command set counts as granted.
struct ConsentImplicitDefaultRule: LintRule {
    static let description = RuleDescription(
        id: "consent_implicit_default",
        name: "Consent Without Implicit Default",
        description:
            "A tag needs consent types granted (compiled `consent`, export `consentSettings` NEEDED). ContainerKit "
            + "checks them against the session's consent commands; a type no command set counts as granted, where a "
            + "browser's GTM may apply an implicit default for the visitor's location: push a consent default for it.",
        severity: .note,
        triggeringExamples: [
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 4, "vtp_classPath": "A",
              "consent": ["list", "analytics_storage"]}]}}
            """#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"tag": [{"tagId": "4", "name": "T", "type": "funct",
              "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "A"}],
              "consentSettings": {"consentStatus": "NEEDED", "consentType": {"type": "LIST",
                "list": [{"type": "TEMPLATE", "value": "ad_storage"}]}}}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"{"resource": {"tags": [{"function": "__funct", "tag_id": 4, "vtp_classPath": "A", "consent": ["list"]}]}}"#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"tag": [{"tagId": "4", "name": "T", "type": "funct",
              "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "A"}],
              "consentSettings": {"consentStatus": "NOT_SET"}}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program else { return [] }
        var findings: [LintFinding] = []
        for (i, tag) in program.tags.enumerated() where !tag.consentTypes.isEmpty {
            let types = tag.consentTypes.map { "'\($0)'" }.joined(separator: ", ")
            let pointer = tag.origin.pointer + (input.source.kind == .resource ? "/consent" : "/consentSettings")
            let message =
                "tag \(program.tagLabel(i)) needs consent \(types) granted; a type no consent command set counts as "
                + "granted (GTM's implicit per-location defaults are not applied), so push a consent default for it"
            findings.append(input.finding(Self.description, message, at: pointer))
        }
        return findings
    }
}
