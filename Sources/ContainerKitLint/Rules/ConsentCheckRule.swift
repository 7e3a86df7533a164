import ContainerKit

/// Tags whose consent settings ask for consent types: GTM fires them only once those are granted;
/// ContainerKit does not track consent and fires them without the check.
struct ConsentCheckRule: LintRule {
    static let description = RuleDescription(
        id: "consent_not_checked",
        name: "Consent Not Checked",
        description:
            "A tag needs consent types granted (compiled `consent`, export `consentSettings` NEEDED); GTM waits for "
            + "them, ContainerKit does not track consent and fires the tag without the check.",
        severity: .warning,
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
                "tag \(program.tagLabel(i)) needs consent \(types) granted; ContainerKit does not track consent, "
                + "so it fires without the check"
            findings.append(input.finding(Self.description, message, at: pointer))
        }
        return findings
    }
}
