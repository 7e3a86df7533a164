import ContainerKit

/// Paused tags, which never fire until someone unpauses them (opt-in).
struct PausedTagRule: LintRule {
    static let description = RuleDescription(
        id: "paused_tag",
        name: "Paused Tag",
        description: "A tag is paused, so it never fires.",
        severity: .note,
        isOptIn: true,
        triggeringExamples: [
            #"{"resource": {"tags": [{"function": "__paused", "tag_id": 4, "vtp_originalTagType": "funct"}]}}"#
        ],
        nonTriggeringExamples: [
            #"{"resource": {"tags": [{"function": "__funct", "tag_id": 4, "vtp_classPath": "A"}]}}"#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program else { return [] }
        var findings: [LintFinding] = []
        for (i, tag) in program.tags.enumerated() {
            guard case .paused = tag.kind else { continue }
            findings.append(
                input.finding(Self.description, "tag \(program.tagLabel(i)) is paused", at: tag.origin.pointer)
            )
        }
        return findings
    }
}
