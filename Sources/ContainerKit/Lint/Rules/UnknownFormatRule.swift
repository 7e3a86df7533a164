/// Documents that parse but are none of the container formats.
struct UnknownFormatRule: LintRule {
    static let description = RuleDescription(
        id: "unknown_format",
        name: "Unknown Format",
        description:
            "The document is none of the container formats (compiled resource, GTM export, flat value map), or a "
            + "format recognised and refused by name: GTM export 1.x, a server-side container, an AMP configuration.",
        severity: .error,
        triggeringExamples: [
            #"[1, 2, 3]"#,
            #"{"exportFormatVersion": 2, "exportTime": "2021-08-11 22:27:31"}"#,
            #"{"settings": {"nested": {"objects": "are not a flat container"}}}"#,
            #"{"exportFormatVersion": 1.2, "container": {"macros": [], "tags": [], "rules": []}}"#,
            #"{"exportFormatVersion": 2, "containerVersion": {"container": {"usageContext": ["SERVER"]}}}"#,
        ],
        nonTriggeringExamples: [
            #"{"exportFormatVersion": 2, "containerVersion": {"variable": [{"name": "A", "type": "c"}]}}"#,
            #"{"BUTTON_COLOR": "red", "SHOW_BANNER": true}"#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let error = input.compileError, error.code == .unknownFormat else { return [] }
        return [input.finding(Self.description, for: error)]
    }
}
